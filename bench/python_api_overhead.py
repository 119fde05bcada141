"""The Python API's overhead: parity.backend.onnxrt.OnnxrtRunner.infer() against polygraphy's
OnnxrtRunner.infer() and bare onnxruntime.InferenceSession.run, and Comparator.compare_accuracy on
large outputs against polygraphy's.

    PYTHONPATH=build/release/python python bench/python_api_overhead.py [--calls 2000] [--rounds 5]
        [--elements 67108864]

Per-infer: on a small model (Identity on a [1] float) where the call is all overhead and a medium
one (examples/models/small_cnn.onnx), one intra-op thread everywhere (polygraphy's runner is given
an InferenceSession made with the same options as the bare one), each side in its own process,
median per-call time over the rounds. Target: Parity's overhead above bare ONNX Runtime at most
ONNX Runtime's own Python overhead (Parity's call <= 2x the bare call on the small model).

compare_accuracy: two runners' results of one float32 output of --elements elements (default 64 M,
256 MiB each) differing by small noise, CompareFunc.simple with default tolerances, each side once
in its own process (log output discarded). Target: Parity <= 0.2x polygraphy's time.
Prints ratios; asserts nothing.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

INFER_SCRIPT = r"""
import json, statistics, sys, time
import numpy as np
side, model, calls, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
import onnxruntime as ort
so = ort.SessionOptions()
so.intra_op_num_threads = 1
meta = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).get_inputs()
shape = [d if isinstance(d, int) else 1 for d in meta[0].shape]
feed = {meta[0].name: np.random.default_rng(0).random(shape, dtype=np.float32)}
if side == "onnxruntime":
    session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    call = lambda: session.run(None, feed)
    close = lambda: None
elif side == "polygraphy":
    from polygraphy.backend.onnxrt import OnnxrtRunner
    from polygraphy.logger import G_LOGGER
    G_LOGGER.module_severity = G_LOGGER.ERROR
    runner = OnnxrtRunner(ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]))
    runner.activate()
    call = lambda: runner.infer(feed)
    close = runner.deactivate
else:
    from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
    from parity.logger import G_LOGGER
    G_LOGGER.module_severity = G_LOGGER.ERROR
    runner = OnnxrtRunner(SessionFromOnnx(model, intra_op_threads=1))
    runner.activate()
    call = lambda: runner.infer(feed)
    close = runner.deactivate
for _ in range(100):
    call()
per_call = []
for _ in range(rounds):
    start = time.perf_counter()
    for _ in range(calls):
        call()
    per_call.append((time.perf_counter() - start) / calls)
close()
print(json.dumps(statistics.median(per_call)))
"""

COMPARE_SCRIPT = r"""
import io, json, sys, time, contextlib
import numpy as np
side, elements = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
a = rng.standard_normal(elements, dtype=np.float32)
b = a + (rng.standard_normal(elements, dtype=np.float32) * np.float32(1e-7))
if side == "polygraphy":
    from polygraphy.comparator import Comparator, CompareFunc, IterationResult, RunResults
    from polygraphy.logger import G_LOGGER
else:
    from parity.comparator import Comparator, CompareFunc, IterationResult, RunResults
    from parity.logger import G_LOGGER
results = RunResults()
results.append(("runner0", [IterationResult({"out": a}, None, "runner0")]))
results.append(("runner1", [IterationResult({"out": b}, None, "runner1")]))
with contextlib.redirect_stdout(io.StringIO()):
    start = time.perf_counter()
    passed = bool(Comparator.compare_accuracy(results, compare_func=CompareFunc.simple()))
    seconds = time.perf_counter() - start
print(json.dumps([seconds, passed]))
"""


def run(script, *args):
    env = dict(os.environ)
    python_dir = os.path.join(ROOT, "build", "release", "python")
    env["PYTHONPATH"] = python_dir + os.pathsep + env.get("PYTHONPATH", "")
    process = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, env=env)
    if process.returncode != 0:
        sys.exit(f"benchmark process failed:\n{process.stdout}\n{process.stderr}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def small_model(folder):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    path = os.path.join(folder, "identity_1.onnx")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--elements", type=int, default=64 * 2**20)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        models = {"small (Identity [1])": small_model(folder),
                  "medium (small_cnn.onnx)": os.path.join(ROOT, "examples", "models", "small_cnn.onnx")}
        for label, model in models.items():
            times = {side: run(INFER_SCRIPT, side, model, args.calls, args.rounds)
                     for side in ("onnxruntime", "polygraphy", "parity")}
            bare = times["onnxruntime"]
            print(f"{label}: per infer() onnxruntime {bare * 1e6:.1f} us, "
                  f"polygraphy {times['polygraphy'] * 1e6:.1f} us, "
                  f"parity {times['parity'] * 1e6:.1f} us | parity/onnxruntime {times['parity'] / bare:.2f}x, "
                  f"parity/polygraphy {times['parity'] / times['polygraphy']:.2f}x")

    polygraphy_seconds, polygraphy_passed = run(COMPARE_SCRIPT, "polygraphy", args.elements)
    parity_seconds, parity_passed = run(COMPARE_SCRIPT, "parity", args.elements)
    print(f"compare_accuracy on {args.elements} float32 elements: polygraphy {polygraphy_seconds:.2f} s "
          f"(passed={polygraphy_passed}), parity {parity_seconds:.2f} s (passed={parity_passed}) | "
          f"parity/polygraphy {parity_seconds / polygraphy_seconds:.3f}x")


if __name__ == "__main__":
    main()
