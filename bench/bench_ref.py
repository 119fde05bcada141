"""Reference runner vs ONNX Runtime (Python package): latency and peak memory, same inputs, same
thread count, measured in the same benchmark run. Prints the ref/ORT ratios.

    python bench/bench_ref.py [--build build/release] [--threads 1 2] [--iterations 10]

Models: ../shared/onnx-tests/light/light_resnet50.onnx and a BERT-base-sized encoder written by
bench/make_bert.py (12 layers, hidden 768, sequence 128). Each side runs in its own process so
its peak RSS is its own; latency is the median of --iterations runs after warm-up. Also reports
the layerwise streaming run's peak RSS against the plain run's (ref only).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")

ORT_SCRIPT = r"""
import json, resource, sys, time
import numpy as np, onnxruntime as ort
model, inputs, threads, iterations, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
feed = dict(np.load(inputs))
for _ in range(warmup):
    session.run(None, feed)
times = []
for _ in range(iterations):
    t = time.perf_counter(); session.run(None, feed); times.append((time.perf_counter() - t) * 1e3)
times.sort()
print(json.dumps({"median_ms": times[len(times) // 2], "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_json(cmd, env=None):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def make_inputs(model_path, folder):
    import onnx
    model = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.RandomState(1)
    feed = {}
    for value in model.graph.input:
        if value.name in inits:
            continue
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in value.type.tensor_type.shape.dim]
        feed[value.name] = rng.random_sample(shape).astype(np.float32)
    path = os.path.join(folder, os.path.basename(model_path) + ".inputs.npz")
    np.savez(path, **feed)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=["resnet50", "bert"])
    args = parser.parse_args()
    tool = os.path.join(args.build, "bench", "parity_bench_ref_latency")
    bert = os.path.join(args.build, "bench", "bert_base.onnx")
    models = {"resnet50": os.path.join(SHARED, "onnx-tests", "light", "light_resnet50.onnx"), "bert": bert}
    if "bert" in args.models and not os.path.exists(bert):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_bert.py"), "-o", bert], check=True)
    print(f"{'model':<10} {'threads':>7} {'ref ms':>10} {'ORT ms':>10} {'ref/ORT':>8} {'ref MB':>8} {'ORT MB':>8} {'mem ratio':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            model = models[name]
            inputs = make_inputs(model, tmp)
            for threads in args.threads:
                env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
                ref = run_json([tool, model, inputs, "--threads", str(threads), "--iterations", str(args.iterations),
                                "--warmup", str(args.warmup)], env)
                ort = run_json([sys.executable, "-c", ORT_SCRIPT, model, inputs, str(threads), str(args.iterations),
                                str(args.warmup)], env)
                print(f"{name:<10} {threads:>7} {ref['median_ms']:>10.1f} {ort['median_ms']:>10.1f} "
                      f"{ref['median_ms'] / ort['median_ms']:>8.2f} {ref['peak_rss_mb']:>8.0f} {ort['peak_rss_mb']:>8.0f} "
                      f"{ref['peak_rss_mb'] / ort['peak_rss_mb']:>9.2f}", flush=True)
            plain = run_json([tool, model, inputs, "--iterations", "1", "--warmup", "0"])
            streamed = run_json([tool, model, inputs, "--iterations", "1", "--warmup", "0", "--stream"])
            print(f"{name:<10} layerwise streaming: peak RSS {streamed['peak_rss_mb']:.0f} MB vs plain "
                  f"{plain['peak_rss_mb']:.0f} MB = {streamed['peak_rss_mb'] / plain['peak_rss_mb']:.2f}x "
                  f"({streamed['streamed']} tensors streamed)", flush=True)


if __name__ == "__main__":
    main()
