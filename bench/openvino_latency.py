"""OpenVINO (f32 and bf16) vs ONNX Runtime: inference latency on the benchmark models, same
thread count, printed as ratios (OV f32 / ORT, OV bf16 / ORT).

    python bench/openvino_latency.py [--build build/release] [--threads N] [--iterations 20]

Models: ../shared/onnx-tests/light/light_resnet50.onnx and the BERT-base-sized encoder written by
bench/make_bert.py (12 layers, hidden 768, sequence 128; made once under --build/bench as
bench/bench_ref.py does). Both engines are driven through their Python packages (the venv's
openvino and onnxruntime), each in its own fresh process, on the same random inputs:
  - OpenVINO: Core().compile_model(model, "CPU", {INFERENCE_PRECISION_HINT: f32|bf16,
    INFERENCE_NUM_THREADS: N, PERFORMANCE_HINT: LATENCY}), then InferRequest.infer(feed);
  - ONNX Runtime: InferenceSession with intra_op_num_threads N, inter_op_num_threads 1.
Latency is the median of --iterations runs after --warmup runs. --threads defaults to every
hardware thread (os.cpu_count()). The Python call's own overhead (tens of microseconds, see
bench/openvino_overhead.py) is negligible at these model sizes.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ref import ORT_SCRIPT, make_inputs, run_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")

OPENVINO_SCRIPT = r"""
import json, resource, sys, time
import numpy as np, openvino as ov
model, inputs, threads, iterations, warmup, precision = (sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                                                         int(sys.argv[5]), sys.argv[6])
compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": precision,
                                                  "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"})
request = compiled.create_infer_request()
feed = dict(np.load(inputs))
for _ in range(warmup):
    request.infer(feed)
times = []
for _ in range(iterations):
    t = time.perf_counter(); request.infer(feed); times.append((time.perf_counter() - t) * 1e3)
times.sort()
print(json.dumps({"median_ms": times[len(times) // 2], "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "precision": compiled.get_property("INFERENCE_PRECISION_HINT").to_string(),
                  "threads": int(compiled.get_property("INFERENCE_NUM_THREADS")), "version": ov.get_version()}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="default: every hardware thread")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=["resnet50", "bert"])
    args = parser.parse_args()
    bert = os.path.join(args.build, "bench", "bert_base.onnx")
    models = {"resnet50": os.path.join(SHARED, "onnx-tests", "light", "light_resnet50.onnx"), "bert": bert}
    if "bert" in args.models and not os.path.exists(bert):
        os.makedirs(os.path.dirname(bert), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_bert.py"), "-o", bert], check=True)
    import onnxruntime
    print(f"OpenVINO vs ONNX Runtime {onnxruntime.__version__} (Python packages), {args.threads} thread(s) "
          f"(os.cpu_count() = {os.cpu_count()}), median of {args.iterations} runs after {args.warmup} warm-up")
    print(f"{'model':<10} {'ORT ms':>9} {'OV f32 ms':>10} {'OV bf16 ms':>11} {'f32/ORT':>8} {'bf16/ORT':>9}")
    counts = [str(args.threads), str(args.iterations), str(args.warmup)]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            model = models[name]
            inputs = make_inputs(model, tmp)
            ort = run_json([sys.executable, "-c", ORT_SCRIPT, model, inputs, *counts], env)
            f32 = run_json([sys.executable, "-c", OPENVINO_SCRIPT, model, inputs, *counts, "f32"], env)
            bf16 = run_json([sys.executable, "-c", OPENVINO_SCRIPT, model, inputs, *counts, "bf16"], env)
            for result, precision in [(f32, "f32"), (bf16, "bf16")]:
                if result["precision"] != precision or result["threads"] != args.threads:
                    sys.exit(f"{name}: OpenVINO compiled for {result['precision']} on {result['threads']} thread(s), "
                             f"asked {precision} on {args.threads}")
            print(f"{name:<10} {ort['median_ms']:>9.1f} {f32['median_ms']:>10.1f} {bf16['median_ms']:>11.1f} "
                  f"{f32['median_ms'] / ort['median_ms']:>8.2f} {bf16['median_ms'] / ort['median_ms']:>9.2f}",
                  flush=True)
        print(f"OpenVINO {f32['version']}")


if __name__ == "__main__":
    main()
