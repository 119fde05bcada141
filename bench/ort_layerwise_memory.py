"""Peak memory of getting every intermediate tensor of a model out of ONNX Runtime, through Parity's
ONNX Runtime runner: all at once (every tensor marked in one session, all held) vs batched (the
graph cut into pieces that fit a memory budget, each tensor streamed to a callback and dropped),
next to a plain run and Polygraphy-style marking in onnxruntime's Python package.

    python bench/ort_layerwise_memory.py [--build build/release] [--model ../shared/models/ppocrv4_det.onnx]
        [--size 640] [--budgets 64 16] [--opt-level all]

Each configuration runs in a fresh process (tests/peers' parity_run_backend with --discard, so
nothing is written or kept beyond what the mode itself holds); its peak RSS comes from wait4().
The hash is over every tensor handed out (order-independent): equal hashes mean the same bytes.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODEL = os.path.join(os.path.dirname(ROOT), "shared", "models", "ppocrv4_det.onnx")

PYTHON_MARK_ALL = r"""
import hashlib, sys
import numpy as np, onnx, onnxruntime as ort
model_path, inputs_path, level = sys.argv[1], sys.argv[2], sys.argv[3]
levels = {"disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL, "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
          "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}
model = onnx.load(model_path)
names = [o.name for o in model.graph.output]
for node in model.graph.node:
    for o in node.output:
        if o and o not in names:
            names.append(o)
            model.graph.output.append(onnx.ValueInfoProto(name=o))
so = ort.SessionOptions()
so.graph_optimization_level = levels[level]
session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
del model
outputs = session.run(None, dict(np.load(inputs_path)))
print(f"outputs={len(outputs)} output_bytes={sum(o.nbytes for o in outputs)} streamed=0 streamed_bytes=0 runs=1 hash=-")
"""


def measure(command, env):
    """Runs `command`; returns (peak RSS in MiB, wall seconds, {key: value} from its last line)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    out = process.stdout.read().decode()
    err = process.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(command)}\n{out}\n{err}")
    fields = dict(item.split("=", 1) for item in out.strip().splitlines()[-1].split())
    return usage.ru_maxrss / 1024, wall, fields


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--size", type=int, default=640, help="input height and width (ppocrv4_det: x [1,3,S,S])")
    parser.add_argument("--budgets", type=int, nargs="+", default=[64, 16], help="layerwise budgets in MiB")
    parser.add_argument("--opt-level", default="all", choices=["disable", "basic", "extended", "all"])
    args = parser.parse_args()
    tool = os.path.join(args.build, "tests", "peers", "parity_run_backend")
    if not os.access(tool, os.X_OK):
        sys.exit(f"{tool} not found: build the CMake target parity_run_backend")
    env = dict(os.environ)
    env.setdefault("PARITY_PYTHON", sys.executable)

    with tempfile.TemporaryDirectory() as folder:
        inputs = os.path.join(folder, "inputs.npz")
        np.savez(inputs, x=np.random.RandomState(1).random_sample((1, 3, args.size, args.size)).astype(np.float32))
        base = [tool, args.model, "--onnxrt", "--inputs", inputs, "--discard", "--ort-opt-level", args.opt_level]
        huge = str(1 << 40)
        configurations = [
            ("plain run (graph outputs only)", base),
            ("all at once: every tensor marked, all held", base + ["--mark-all", "--budget", huge]),
            ("all at once, streamed (one piece)", base + ["--stream", "--budget", huge]),
        ] + [
            (f"batched: pieces of <= {mib} MiB, streamed", base + ["--stream", "--budget", str(mib << 20)])
            for mib in args.budgets
        ] + [
            ("onnxruntime (Python), every tensor marked", [sys.executable, "-c", PYTHON_MARK_ALL, args.model, inputs,
                                                          args.opt_level]),
        ]
        print(f"{os.path.basename(args.model)}, x [1, 3, {args.size}, {args.size}], ONNX Runtime level "
              f"'{args.opt_level}'")
        print(f"{'configuration':46} {'runs':>5} {'tensors':>8} {'tensor MiB':>11} {'peak RSS MiB':>13} "
              f"{'wall s':>7}  hash")
        results = {}
        for label, command in configurations:
            rss, wall, fields = measure(command, env)
            tensors = int(fields["outputs"]) if fields["streamed"] == "0" else int(fields["streamed"])
            tensor_bytes = int(fields["output_bytes"]) if fields["streamed"] == "0" else int(fields["streamed_bytes"])
            results[label] = rss
            print(f"{label:46} {fields['runs']:>5} {tensors:>8} {tensor_bytes / 2**20:11.1f} {rss:13.1f} "
                  f"{wall:7.2f}  {fields['hash']}")
        all_at_once = results["all at once: every tensor marked, all held"]
        for mib in args.budgets:
            batched = results[f"batched: pieces of <= {mib} MiB, streamed"]
            print(f"peak RSS, batched ({mib} MiB) / all at once: {batched / all_at_once:.3f}")


if __name__ == "__main__":
    main()
