"""How accurately `parity run --perf` measures (issue 34): on ResNet-50-like and BERT-encoder models
(tests/cli/exported_models.py, size "bench"), with the same threads, interleaved in the same minute:

- Parity's OpenVINO median latency (--ov-perf-hint latency) against OpenVINO's benchmark_app in latency mode
  (-hint latency -api sync, its median): target ratio within 1 +- 0.05;
- Parity's OpenVINO throughput with the throughput hint and --requests auto (the compiled model's optimal number
  of asynchronous infer requests, as benchmark_app's default -nireq) against benchmark_app's (-hint throughput,
  -api async): target ratio >= 0.95; both sides' numbers of requests are printed;
- Parity's ONNX Runtime median latency against a bare `InferenceSession.run` loop in Python: target 1 +- 0.05.

Every measurement is repeated; the script prints each repeat's ratios and their median and spread (min..max), and
the load average. The two tools run one after the other, so on a loaded machine a ratio of wall-clock throughputs
also measures how much CPU each got from the scheduler in its seconds. The throughput comparison therefore also
prints inferences per CPU-second of each process (its user + system time, from the difference of a run of
--seconds and one of half as long, so start-up and compilation cancel): that ratio is the tools' own cost per
inference and stays put under load. Within a repeat the order of the two tools' throughput runs alternates.
Inputs have static shapes on both sides (benchmark_app -shape; Parity --input-shapes with equal
--ov-min-shapes/--ov-max-shapes, so OpenVINO compiles the same static model).

    python bench/perf_accuracy.py [--build build/release] [--threads 2] [--seconds 5] [--repeats 3]
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from exported_models import export  # noqa: E402  (tests/cli is on the path from here)
from full_size_models import FULL_SIZE_KINDS, write as write_full_size  # noqa: E402  (bench/, this script's folder)


def model_of(kind, folder):
    """(path, size label) of the model `kind` written into `folder`: a full-size model (bench/full_size_models.py)
    or tests/cli/exported_models.py's kind at its "bench" size."""
    if kind in FULL_SIZE_KINDS:
        return write_full_size(kind, folder), "full size"
    return str(export(kind, os.path.join(folder, f"{kind}.onnx"), "torchscript", size="bench")), "bench size"


def input_shapes(model_path, sequence=64):
    """{input: static shape}: the model's dims, a dynamic batch as 1 and a dynamic sequence as `sequence`."""
    shapes = {}
    for value in onnx.load(model_path, load_external_data=False).graph.input:
        dims = [d.dim_value if d.dim_value > 0 else None for d in value.type.tensor_type.shape.dim]
        shapes[value.name] = [d if d is not None else (1 if i == 0 else sequence) for i, d in enumerate(dims)]
    return shapes


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def parity_perf(parity, model, shapes, seconds, runner_flags, counts=None):
    """Parity's median latency (seconds), throughput and requests; with `counts` (a list), appends
    (timed inferences, CPU seconds of the process)."""
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "report.json")
        shape_args = [f"{name}:[{','.join(map(str, dims))}]" for name, dims in shapes.items()]
        cpu = children_cpu_seconds()
        subprocess.run([parity, "run", model, *runner_flags, "--perf", "--duration", str(seconds), "--warm-up", "10",
                        "--input-shapes", *shape_args, "--report", report],
                       check=True, capture_output=True, text=True)
        cpu = children_cpu_seconds() - cpu
        entry = json.load(open(report))["perf"][0]
    if counts is not None:
        counts.append((entry["iterations"], cpu))
    return entry["latency_seconds"]["median"], entry["throughput"], entry["requests"]


def benchmark_app(tool, model, shapes, seconds, threads, hint, counts=None):
    """benchmark_app's median latency (seconds), throughput and infer requests. Its -hint refuses -nthreads, so the hint, the
    threads and the precision go in a -load_config file."""
    shape = ",".join(f"{name}[{','.join(map(str, dims))}]" for name, dims in shapes.items())
    with tempfile.TemporaryDirectory() as folder:
        config = os.path.join(folder, "config.json")
        with open(config, "w") as file:
            json.dump({"CPU": {"INFERENCE_NUM_THREADS": str(threads), "PERFORMANCE_HINT": hint.upper(),
                               "INFERENCE_PRECISION_HINT": "f32"}}, file)
        args = [tool, "-m", model, "-d", "CPU", "-load_config", config, "-t", str(max(1, round(seconds))), "-shape", shape,
                "-api", "sync" if hint == "latency" else "async"]
        cpu = children_cpu_seconds()
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
        cpu = children_cpu_seconds() - cpu
    if counts is not None:
        counts.append((int(re.search(r"Count:\s+(\d+) iterations", out).group(1)), cpu))
    value, unit = re.search(r"Median:\s+([0-9.]+) (ms|us)", out).groups()
    median = float(value) / (1000 if unit == "ms" else 1e6)
    throughput = float(re.search(r"Throughput:\s+([0-9.]+) FPS", out).group(1))
    requests = re.search(r"(\d+) inference requests", out)
    return median, throughput, int(requests.group(1)) if requests else None


def bare_onnxruntime(model, shapes, seconds, threads):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    feed = {}
    for value in session.get_inputs():
        dims = shapes[value.name]
        feed[value.name] = (rng.integers(0, 2, dims).astype(np.int64) if "int64" in value.type
                            else rng.random(dims, dtype=np.float32))
    for _ in range(10):
        session.run(None, feed)
    latencies = []
    end = time.perf_counter() + seconds
    while not latencies or time.perf_counter() < end:
        start = time.perf_counter()
        session.run(None, feed)
        latencies.append(time.perf_counter() - start)
    return statistics.median(latencies)


def per_cpu_second(counts):
    """Inferences per CPU-second from a long and a short run's (inferences, CPU seconds): their differences."""
    (long_count, long_cpu), (short_count, short_cpu) = counts
    return (long_count - short_count) / (long_cpu - short_cpu)


def spread(ratios):
    return f"median {statistics.median(ratios):.3f} (min {min(ratios):.3f} .. max {max(ratios):.3f})"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kinds", default="resnet,bert",
                        help="tests/cli/exported_models.py's kinds at its 'bench' size (resnet, bert, gpt2, vit) and/or "
                             "bench/full_size_models.py's (resnet50, bert-base)")
    args = parser.parse_args()
    parity = os.path.join(args.build, "tools", "parity", "parity")
    tool = shutil.which("benchmark_app") or os.path.join(os.path.dirname(sys.executable), "benchmark_app")
    threads = str(args.threads)
    with tempfile.TemporaryDirectory() as folder:
        for kind in args.kinds.split(","):
            model, size = model_of(kind, folder)
            shapes = input_shapes(model)
            static = [f"{name}:[{','.join(map(str, dims))}]" for name, dims in shapes.items()]
            ov = ["--openvino", "--ov-precision", "f32", "--ov-threads", threads, "--ov-min-shapes", *static,
                  "--ov-max-shapes", *static]
            ratios = {"ov latency": [], "ov throughput": [], "ov throughput per CPU-second": [], "ort latency": []}
            print(f"{kind} ({size}), inputs {shapes}, {threads} thread(s), {args.seconds} s per measurement")
            for repeat in range(args.repeats):
                p_lat, _, _ = parity_perf(parity, model, shapes, args.seconds, ov + ["--ov-perf-hint", "latency"])
                b_lat, _, _ = benchmark_app(tool, model, shapes, args.seconds, args.threads, "latency")
                short = max(1, args.seconds // 2)
                throughput_flags = ov + ["--ov-perf-hint", "throughput", "--requests", "auto"]
                p_counts, b_counts = [], []

                def parity_throughput():
                    measured = parity_perf(parity, model, shapes, args.seconds, throughput_flags, p_counts)
                    parity_perf(parity, model, shapes, short, throughput_flags, p_counts)
                    return measured

                def benchmark_app_throughput():
                    measured = benchmark_app(tool, model, shapes, args.seconds, args.threads, "throughput", b_counts)
                    benchmark_app(tool, model, shapes, short, args.threads, "throughput", b_counts)
                    return measured

                if repeat % 2 == 0:
                    _, p_tput, p_requests = parity_throughput()
                    _, b_tput, b_requests = benchmark_app_throughput()
                else:
                    _, b_tput, b_requests = benchmark_app_throughput()
                    _, p_tput, p_requests = parity_throughput()
                cpu_ratio = per_cpu_second(p_counts) / per_cpu_second(b_counts)
                o_lat, _, _ = parity_perf(parity, model, shapes, args.seconds,
                                          ["--onnxrt", "--ort-intra-op-threads", threads])
                bare = bare_onnxruntime(model, shapes, args.seconds, args.threads)
                ratios["ov latency"].append(p_lat / b_lat)
                ratios["ov throughput"].append(p_tput / b_tput)
                ratios["ov throughput per CPU-second"].append(cpu_ratio)
                ratios["ort latency"].append(o_lat / bare)
                print(f"  repeat {repeat + 1}: OpenVINO median parity/benchmark_app {p_lat / b_lat:.3f} | OpenVINO "
                      f"throughput-hint throughput parity/benchmark_app {p_tput / b_tput:.3f} ({p_requests} vs {b_requests} "
                      f"requests; per CPU-second {cpu_ratio:.3f}) | ONNX Runtime median "
                      f"parity/bare InferenceSession.run {o_lat / bare:.3f} | load average "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
            for name, values in ratios.items():
                print(f"  {name} ratio: {spread(values)}")


if __name__ == "__main__":
    main()
