"""Parity's ONNX Runtime runner vs onnxruntime's Python InferenceSession, measured in the same
benchmark run, on tiny models where the work is all overhead (Identity and Add on a [1] float):

  - per-call time of Runner::infer() vs InferenceSession.run, and the overhead each adds above
    ONNX Runtime's own bare Run measured in the same round (target: Parity's at most half of
    Python's);
  - session creation (model load + session) for both, the first one and the median warm one;
  - getting ONNX Runtime ready at all: Parity's library search (which asks Python where the
    onnxruntime package is, unless PARITY_ORT_LIBRARY names the library) + dlopen + environment
    vs `import onnxruntime` (numpy already imported).

    python bench/onnxrt_overhead.py [--build build/release] [--threads 1] [--calls 2000] [--rounds 5]

Both sides use the same library file (the venv's onnxruntime package), intra-op threads and
default session options. Each side runs in its own fresh process.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PYTHON_SCRIPT = r"""
import json, statistics, sys, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import onnxruntime as ort
t2 = time.perf_counter()
model, threads, calls, batches, sessions = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def options():
    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
    return so
begin = time.perf_counter()
session = ort.InferenceSession(model, options(), providers=["CPUExecutionProvider"])
first_session = time.perf_counter() - begin
times = []
for _ in range(sessions):
    begin = time.perf_counter()
    ort.InferenceSession(model, options(), providers=["CPUExecutionProvider"])
    times.append(time.perf_counter() - begin)
name = session.get_inputs()[0].name
feed = {name: np.array([1.5], dtype=np.float32)}
for _ in range(calls):
    session.run(None, feed)
means = []
for _ in range(batches):
    begin = time.perf_counter()
    for _ in range(calls):
        session.run(None, feed)
    means.append((time.perf_counter() - begin) / calls)
print(json.dumps({"import_numpy_us": (t1 - t0) * 1e6, "import_onnxruntime_us": (t2 - t1) * 1e6,
                  "first_session_us": first_session * 1e6, "session_us": statistics.median(times) * 1e6,
                  "run_us": statistics.median(means) * 1e6, "ort_version": ort.__version__,
                  "library": ort.capi._pybind_state.__file__}))
"""


def tiny_models(folder):
    import onnx
    from onnx import TensorProto, helper
    models = {}
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    for name, nodes, initializers in [
        ("identity", [helper.make_node("Identity", ["x"], ["y"])], []),
        ("add", [helper.make_node("Add", ["x", "one"], ["y"])], [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])]),
    ]:
        graph = helper.make_graph(nodes, name, [x], [y], initializer=initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        path = os.path.join(folder, f"{name}.onnx")
        onnx.save(model, path)
        models[name] = path
    return models


def run_json(command, env):
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_of(rounds):
    merged = dict(rounds[0])
    for key, value in rounds[0].items():
        if isinstance(value, float):
            values = sorted(r[key] for r in rounds)
            merged[key] = values[len(values) // 2]
    return merged


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--sessions", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per side (medians are reported)")
    args = parser.parse_args()
    tool = os.path.join(args.build, "bench", "parity_bench_onnxrt_overhead")
    if not os.access(tool, os.X_OK):
        sys.exit(f"{tool} not found: build the CMake target parity_bench_onnxrt_overhead")
    env = dict(os.environ)
    env.setdefault("PARITY_PYTHON", sys.executable)
    counts = [str(args.threads), str(args.calls), str(args.batches), str(args.sessions)]

    with tempfile.TemporaryDirectory() as folder:
        models = tiny_models(folder)
        print(f"ONNX Runtime overhead on tiny models ({args.threads} intra-op thread(s), "
              f"median of {args.batches} batches of {args.calls} calls; {args.sessions} warm sessions; "
              f"medians of {args.rounds} alternating rounds)")
        for name, path in models.items():
            # Alternate the two sides for --rounds fresh processes each; figures are medians over
            # rounds, and the overhead ratio is taken within each round (its own bare-Run floor).
            parity_rounds, python_rounds, explicit_rounds = [], [], []
            for _ in range(args.rounds):
                parity_rounds.append(run_json([tool, path, "--threads", counts[0], "--calls", counts[1], "--batches",
                                               counts[2], "--sessions", counts[3]], env))
                python_rounds.append(run_json([sys.executable, "-c", PYTHON_SCRIPT, path, *counts], env))
                # Parity again with the library named explicitly (no Python asked where it is).
                explicit_rounds.append(run_json([tool, path, "--threads", counts[0], "--calls", "200", "--batches",
                                                 "3", "--sessions", "3"],
                                                dict(env, PARITY_ORT_LIBRARY=parity_rounds[-1]["library"])))
            parity, python, explicit = median_of(parity_rounds), median_of(python_rounds), median_of(explicit_rounds)
            overhead_ratios = sorted((p["infer_us"] - p["floor_us"]) / (q["run_us"] - p["floor_us"])
                                     for p, q in zip(parity_rounds, python_rounds))
            overhead_ratio = overhead_ratios[len(overhead_ratios) // 2]
            print(f"\n[{name}] ONNX Runtime {parity['ort_version']} (Parity: {parity['library']})")
            rows = [
                ("per-call: infer() vs InferenceSession.run", parity["infer_us"], python["run_us"]),
                ("  OnnxrtSession::run (no runner, no validation)", parity["session_run_us"], python["run_us"]),
                ("  ONNX Runtime's bare Run (the floor)", parity["floor_us"], parity["floor_us"]),
                ("  overhead above the floor", parity["infer_us"] - parity["floor_us"],
                 python["run_us"] - parity["floor_us"]),
                ("first session creation", parity["first_session_us"], python["first_session_us"]),
                ("warm session creation (median)", parity["session_us"], python["session_us"]),
                ("ready: find + dlopen vs import onnxruntime", parity["library_load_us"],
                 python["import_onnxruntime_us"]),
                ("  (PARITY_ORT_LIBRARY given: dlopen only)", explicit["library_load_us"],
                 python["import_onnxruntime_us"]),
            ]
            print(f"  {'':48} {'Parity':>12} {'Python':>12} {'ratio':>8}")
            for label, ours, theirs in rows:
                print(f"  {label:48} {ours:10.2f}us {theirs:10.2f}us {ours / theirs:8.3f}")
            verdict = "meets" if overhead_ratio <= 0.5 else "MISSES"
            print(f"  per-infer() overhead, Parity / Python (median of per-round ratios {overhead_ratios[0]:.3f}.."
                  f"{overhead_ratios[-1]:.3f}): {overhead_ratio:.3f} {verdict} the target (<= 0.5); "
                  f"whole-call ratio {parity['infer_us'] / python['run_us']:.3f}")

if __name__ == "__main__":
    main()
