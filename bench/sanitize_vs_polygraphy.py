#!/usr/bin/env python3
"""`parity surgeon sanitize --fold-constants` against `polygraphy surgeon sanitize --fold-constants`
on the shared real models: node counts (main graph and all subgraphs), wall time of each command
(best of --repeat runs, measured here in the same run), and whether the outputs of both folded
models equal the original's under ONNX Runtime.

    .venv/bin/python bench/sanitize_vs_polygraphy.py [--parity build/release/tools/parity/parity]
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
    args = parser.parse_args()
    header = (f"{'model':<16} {'tool':<11} {'main nodes':>10} {'all nodes':>10} {'time (s)':>9} "
              f"{'outputs == original (ORT)':>26}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            source = MODELS / f"{name}.onnx"
            original = onnx.load(str(source))
            print(f"{name:<16} {'original':<11} {len(original.graph.node):>10} {total_nodes(original.graph):>10}")
            feed = feed_for(name)
            expected = ort_outputs(source, feed)
            tools = {
                "parity": [str(args.parity), "surgeon", "sanitize", "--fold-constants", str(source), "-o"],
                "polygraphy": [str(Path(sys.executable).parent / "polygraphy"), "surgeon", "sanitize", "--fold-constants",
                               str(source), "-o"],
            }
            for tool, command in tools.items():
                out = Path(tmp) / f"{name}.{tool}.onnx"
                seconds = timed(command + [str(out)], args.repeat)
                model = onnx.load(str(out))
                got = ort_outputs(out, feed)
                same = all(np.allclose(a, b, rtol=1e-5, atol=1e-5) for a, b in zip(expected, got))
                print(f"{'':<16} {tool:<11} {len(model.graph.node):>10} {total_nodes(model.graph):>10} "
                      f"{seconds:>9.3f} {str(same):>26}")


if __name__ == "__main__":
    main()
