#!/usr/bin/env python3
"""`parity surgeon sanitize --fold-constants` against `polygraphy surgeon sanitize --fold-constants`
on the shared real models: node counts (main graph and all subgraphs), wall time of each command
(best of --repeat runs, measured here in the same run), the ratio Parity / Polygraphy, and whether
the outputs of both folded models equal the original's under ONNX Runtime.

    .venv/bin/python bench/sanitize_vs_polygraphy.py [--parity build/release/tools/parity/parity]

--exported gpt2,bert runs instead on models exported from PyTorch here, as users bring them
(tests/cli/exported_models.py at --size bench, each with the exporters of --exporters), and says
whether both folded models have the same node count and give identical outputs.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO.parent / "shared" / "models"
sys.path.insert(0, str(REPO / "tests" / "cli"))


def total_nodes(graph):
    count = 0
    for node in graph.node:
        count += 1
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                count += total_nodes(attr.g)
            for g in attr.graphs:
                count += total_nodes(g)
    return count


def feed_for(name):
    rng = np.random.default_rng(0)
    if name == "ppocrv4_det":
        return {"x": rng.random((1, 3, 640, 640), dtype=np.float32)}
    return {"input": rng.random((1, 512), dtype=np.float32) - 0.5, "state": np.zeros((2, 1, 128), np.float32),
            "sr": np.array(16000, np.int64)}


def feed_from_inputs(path):
    """Random inputs for an exported model: symbolic dimensions 2 (batch) and 16 (the others),
    token ids below 100 (the other integer inputs, masks and token types, 0 or 1), images in [0, 1)."""
    rng = np.random.default_rng(0)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed = {}
    for meta in session.get_inputs():
        shape = [d if isinstance(d, int) else (2 if i == 0 else 16) for i, d in enumerate(meta.shape)]
        if "int" in meta.type:
            feed[meta.name] = rng.integers(0, 100 if meta.name == "input_ids" else 2, shape).astype(np.int64)
        else:
            feed[meta.name] = rng.random(shape, dtype=np.float32)
    return feed


def ort_outputs(path, feed):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, feed)


def timed(command, repeat):
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        completed = subprocess.run(command, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if completed.returncode != 0:
            sys.exit(f"failed: {' '.join(map(str, command))}\n{completed.stdout}\n{completed.stderr}")
        best = elapsed if best is None else min(best, elapsed)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parity", default=os.environ.get("PARITY_BIN", REPO / "build/release/tools/parity/parity"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=["ppocrv4_det", "silero_vad_v5"])
    parser.add_argument("--exported", help="comma-separated kinds of tests/cli/exported_models.py (gpt2,bert): "
                        "export them at --size bench and use them instead of --models")
    parser.add_argument("--exporters", default="torchscript,dynamo")
    args = parser.parse_args()
    header = (f"{'model':<18} {'tool':<11} {'main nodes':>10} {'all nodes':>10} {'time (s)':>9} "
              f"{'outputs == original (ORT)':>26}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        models = [(name, MODELS / f"{name}.onnx", feed_for(name)) for name in args.models]
        if args.exported:
            from exported_models import export

            models = []
            for kind in args.exported.split(","):
                for exporter in args.exporters.split(","):
                    path = export(kind, Path(tmp) / f"{kind}_{exporter}.onnx", exporter, size="bench")
                    models.append((f"{kind}_{exporter}", path, feed_from_inputs(path)))
        for name, source, feed in models:
            original = onnx.load(str(source))
            print(f"{name:<18} {'original':<11} {len(original.graph.node):>10} {total_nodes(original.graph):>10}")
            expected = ort_outputs(source, feed)
            tools = {
                "parity": [str(args.parity), "surgeon", "sanitize", "--fold-constants", str(source), "-o"],
                "polygraphy": [str(Path(sys.executable).parent / "polygraphy"), "surgeon", "sanitize", "--fold-constants",
                               str(source), "-o"],
            }
            seconds, folded = {}, {}
            for tool, command in tools.items():
                out = Path(tmp) / f"{name}.{tool}.onnx"
                seconds[tool] = timed(command + [str(out)], args.repeat)
                model = onnx.load(str(out))
                folded[tool] = (total_nodes(model.graph), ort_outputs(out, feed))
                same = all(np.allclose(a, b, rtol=1e-5, atol=1e-5) for a, b in zip(expected, folded[tool][1]))
                print(f"{'':<18} {tool:<11} {len(model.graph.node):>10} {total_nodes(model.graph):>10} "
                      f"{seconds[tool]:>9.3f} {str(same):>26}")
            identical = folded["parity"][0] == folded["polygraphy"][0] and all(
                np.array_equal(a, b) for a, b in zip(folded["parity"][1], folded["polygraphy"][1]))
            print(f"{'':<18} {'ratio':<11} parity / polygraphy = {seconds['parity'] / seconds['polygraphy']:.2f}; "
                  f"same node count and identical outputs: {identical}")


if __name__ == "__main__":
    main()
