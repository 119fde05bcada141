"""Parity's OpenVINO runner vs OpenVINO's Python API, measured in the same benchmark run, on tiny
models where the work is all overhead (Identity and Add on a [1] float):

  - per-call time of Runner::infer() vs the lightest documented Python call, taken per round as
    the fastest of InferRequest.infer(feed), CompiledModel.__call__(feed) and
    InferRequest.infer(feed, share_inputs=True, share_outputs=True), and the overhead each adds
    above OpenVINO's own bare ov::InferRequest::infer() (input tensor bound once, one output value
    read per call), timed in the same round by parity_bench_openvino_infer_floor, a process of
    its own linking OpenVINO's C++ API (target: Parity's overhead at most half of Python's);
  - compile time (ONNX read + compile_model) for both, the first one and the median warm one;
  - getting OpenVINO ready at all: Parity's library search + dlopen of OpenVINO and the backend
    module vs `import openvino` (numpy already imported).

    python bench/openvino_overhead.py [--build build/release] [--threads 1] [--calls 2000] [--rounds 5]

All sides use the same OpenVINO (the venv's openvino package), the CPU device and the same
properties: INFERENCE_PRECISION_HINT f32, INFERENCE_NUM_THREADS --threads, PERFORMANCE_HINT
LATENCY. Each side runs in its own fresh process.
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnxrt_overhead import median_of, run_json, tiny_models  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PYTHON_SCRIPT = r"""
import json, statistics, sys, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import openvino as ov
t2 = time.perf_counter()
model, threads, calls, batches, compiles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
config = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}
core = ov.Core()
begin = time.perf_counter()
compiled = core.compile_model(model, "CPU", config)
first_compile = time.perf_counter() - begin
times = []
for _ in range(compiles):
    begin = time.perf_counter()
    ov.Core().compile_model(model, "CPU", config)
    times.append(time.perf_counter() - begin)
request = compiled.create_infer_request()
feed = {0: np.array([1.5], dtype=np.float32)}
calls_by_path = {
    "InferRequest.infer": lambda: request.infer(feed),
    "CompiledModel.__call__": lambda: compiled(feed),
    "InferRequest.infer(share_inputs, share_outputs)": lambda: request.infer(feed, share_inputs=True, share_outputs=True),
}
result = {"import_numpy_us": (t1 - t0) * 1e6, "import_openvino_us": (t2 - t1) * 1e6,
          "first_compile_us": first_compile * 1e6, "compile_us": statistics.median(times) * 1e6,
          "openvino_version": ov.get_version(),
          "inference_precision": compiled.get_property("INFERENCE_PRECISION_HINT").to_string()}
for path, call in calls_by_path.items():
    for _ in range(calls):
        call()
    means = []
    for _ in range(batches):
        begin = time.perf_counter()
        for _ in range(calls):
            call()
        means.append((time.perf_counter() - begin) / calls)
    result[path + "_us"] = statistics.median(means) * 1e6
lightest = min(calls_by_path, key=lambda path: result[path + "_us"])
result["lightest"], result["run_us"] = lightest, result[lightest + "_us"]
print(json.dumps(result))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--compiles", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per side (medians are reported)")
    args = parser.parse_args()
    tool = os.path.join(args.build, "bench", "parity_bench_openvino_overhead")
    floor_tool = os.path.join(args.build, "bench", "parity_bench_openvino_infer_floor")
    module = os.path.join(args.build, "tools", "parity", "libparity_openvino.so")
    if not os.access(tool, os.X_OK) or not os.access(floor_tool, os.X_OK) or not os.path.exists(module):
        sys.exit(f"{tool}, {floor_tool} or {module} not found: build the CMake targets parity_bench_openvino_overhead "
                 "and parity_bench_openvino_infer_floor (configured only where OpenVINO is found)")
    env = dict(os.environ)
    env.setdefault("PARITY_PYTHON", sys.executable)
    env.setdefault("PARITY_OPENVINO_MODULE", module)
    counts = [str(args.threads), str(args.calls), str(args.batches), str(args.compiles)]

    with tempfile.TemporaryDirectory() as folder:
        models = tiny_models(folder)
        print(f"OpenVINO overhead on tiny models (CPU, f32, {args.threads} inference thread(s), latency hint; "
              f"median of {args.batches} batches of {args.calls} calls; {args.compiles} warm compiles; "
              f"medians of {args.rounds} alternating rounds)")
        for name, path in models.items():
            parity_rounds, python_rounds, floor_rounds = [], [], []
            for _ in range(args.rounds):
                parity_rounds.append(run_json([tool, path, "--threads", counts[0], "--calls", counts[1], "--batches",
                                               counts[2], "--compiles", counts[3], "--precision", "f32", "--hint",
                                               "latency"], env))
                python_rounds.append(run_json([sys.executable, "-c", PYTHON_SCRIPT, path, *counts], env))
                floor_rounds.append(run_json([floor_tool, path, "--threads", counts[0], "--calls", counts[1],
                                              "--batches", counts[2], "--precision", "f32", "--hint", "LATENCY"], env))
            parity, python, floor = median_of(parity_rounds), median_of(python_rounds), median_of(floor_rounds)
            rounds = list(zip(parity_rounds, python_rounds, floor_rounds))
            ratios = sorted((p["infer_us"] - f["floor_us"]) / (q["run_us"] - f["floor_us"]) for p, q, f in rounds)
            ratio = ratios[len(ratios) // 2]
            whole_ratios = sorted(p["infer_us"] / q["run_us"] for p, q, f in rounds)
            whole_ratio = whole_ratios[len(whole_ratios) // 2]
            lightest = sorted(q["lightest"] for q in python_rounds)
            print(f"\n[{name}] OpenVINO {parity['openvino_version']} (Parity: {parity['library_dir']}, "
                  f"{parity['module']}; precision {parity['inference_precision']} vs Python's "
                  f"{python['inference_precision']})")
            rows = [
                ("per-call: infer() vs the lightest Python call", parity["infer_us"], python["run_us"]),
                ("  vs InferRequest.infer(feed)", parity["infer_us"], python["InferRequest.infer_us"]),
                ("  vs CompiledModel.__call__(feed)", parity["infer_us"], python["CompiledModel.__call___us"]),
                ("  vs infer(feed, share_inputs, share_outputs)", parity["infer_us"],
                 python["InferRequest.infer(share_inputs, share_outputs)_us"]),
                ("  OpenVINO's bare InferRequest::infer (the floor)", floor["floor_us"], floor["floor_us"]),
                ("  overhead above the floor", parity["infer_us"] - floor["floor_us"],
                 python["run_us"] - floor["floor_us"]),
                ("first compile (read ONNX + compile_model)", parity["first_compile_us"], python["first_compile_us"]),
                ("warm compile (median)", parity["compile_us"], python["compile_us"]),
                ("ready: find + dlopen vs import openvino", parity["library_load_us"], python["import_openvino_us"]),
            ]
            print(f"  {'':50} {'Parity':>12} {'Python':>12} {'ratio':>8}")
            for label, ours, theirs in rows:
                print(f"  {label:50} {ours:10.2f}us {theirs:10.2f}us {ours / theirs:8.3f}")
            verdict = "meets" if ratio <= 0.5 else "MISSES"
            print(f"  per-infer() overhead above the floor, Parity / Python's lightest call (per round: "
                  f"{', '.join(lightest)}; median of per-round ratios {ratios[0]:.3f}..{ratios[-1]:.3f}): "
                  f"{ratio:.3f} {verdict} the target (<= 0.5); whole-call ratio {whole_ratio:.3f} "
                  f"({whole_ratios[0]:.3f}..{whole_ratios[-1]:.3f})")

if __name__ == "__main__":
    main()
