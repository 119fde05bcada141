"""How well the per-layer times of `parity run --perf --perf-layers` add up to the latency (issue 34), and the floor
each backend's profiler sets, on ResNet-50-like and BERT-encoder models (tests/cli/exported_models.py, size "bench"):

- Parity: `parity run MODEL --onnxrt --openvino --ov-precision f32 --input-shapes ... --perf --iterations N
  --perf-layers 10 --perf-layer-iterations M`; from its report, per runner: the layers' sum (a mean per inference)
  over the mean latency of the profiled inferences (the inferences the layer times come from) and over the
  unprofiled mean latency, and the profiled median latency over the unprofiled median (what profiling costs).
- The bare backends, in this Python process, with the same threads: ONNX Runtime's `InferenceSession` with
  `enable_profiling` against one without (interleaved blocks of runs), the profiled runs' kernel events summed over
  the wall time of the same runs and over the unprofiled mean; OpenVINO's compiled model with `PERF_COUNT`
  against one without, its counters (a running mean since compilation, so the mean over the timed inferences is
  taken from the counters before and after them) summed over the same inferences' wall time and over the
  unprofiled mean. For both, the calling thread's CPU time over the wall time of the profiled runs: where it is well
  below 1 and the backend runs the inference on the calling thread (OpenVINO with 1 thread), the rest is time the
  thread waited for a core, inside or between the layers. ONNX Runtime also its profiler's cost per node event
  (profiled median less unprofiled median, over the node events of one run); OpenVINO also the model as exported,
  with its dynamic dimensions (Parity's performance mode, like benchmark_app -shape, compiles the static shapes).
- Parity also prints each named part outside the layers over the profiled mean latency, and ONNX Runtime's
  profiler cost (its profiled median less the median of the unprofiled runs between them) per node event.

Every measurement is repeated; each repeat prints its ratios and the load average, then the median and spread
(min..max) of each ratio.

    python bench/layer_profile_overhead.py [--build build/release] [--threads 2] [--repeats 3] [--kinds resnet,bert]
"""
import argparse
import json
import os
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
from full_size_models import FULL_SIZE_KINDS  # noqa: E402
from perf_accuracy import input_shapes, model_of  # noqa: E402  (bench/, this script's folder, is on the path)


def feed_of(model_path, shapes):
    feed = {}
    for value in onnx.load(model_path, load_external_data=False).graph.input:
        shape = shapes[value.name]
        if value.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            feed[value.name] = np.random.randint(0, 2, shape).astype(np.int64)
        else:
            feed[value.name] = np.random.rand(*shape).astype(np.float32)
    return feed


def spread(values):
    return f"{statistics.median(values):.3f} ({min(values):.3f}..{max(values):.3f})"


def parity_layers(parity, model, shapes, threads, iterations, layer_iterations, runners=None):
    """{runner kind: {figure: value}}: layers / profiled mean latency, layers / unprofiled mean, profiled /
    unprofiled median, and each part outside the layers over the profiled mean latency; ONNX Runtime and PyTorch
    also their profiler's own cost per event (microseconds) and over the profiled median. `runners`: the runner
    flags (default: ONNX Runtime and OpenVINO f32 with `threads`); `model` None for a run without an ONNX model."""
    if runners is None:
        runners = ["--onnxrt", "--ort-intra-op-threads", str(threads), "--openvino", "--ov-threads", str(threads),
                   "--ov-precision", "f32"]
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "report.json")
        shape_args = [f"{name}:[{','.join(map(str, dims))}]" for name, dims in shapes.items()]
        subprocess.run([parity, "run", *([model] if model else []), *runners, "--input-shapes",
                        *shape_args, "--perf", "--iterations", str(iterations), "--perf-layers", "10",
                        "--perf-layer-iterations", str(layer_iterations), "--atol", "1e-3", "--rtol", "1e-3",
                        "--report", report], check=True, capture_output=True, text=True)
        entries = json.load(open(report))["perf"]
    figures = {}
    for entry in entries:
        layers = entry["layers"]
        kind = entry["runner"].split("-")[0]
        figures[kind] = {"layers/profiled": layers["sum_over_profiled_latency"],
                         "layers/unprofiled": layers["sum_over_mean_latency"],
                         "profiled/unprofiled": layers["profiling_overhead"]}
        for part in layers["outside_times"]:
            figures[kind][f"'{part['name']}'/profiled"] = part["share"]
        if "profiler_cost_seconds_per_inference" in layers:
            cost = layers["profiler_cost_seconds_per_inference"]
            figures[kind]["profiler cost/profiled median"] = cost / layers["profiled_latency_seconds"]["median"]
            figures[kind]["profiler cost per event (us)"] = 1e6 * cost / layers["profiler_events_per_inference"]
    return figures


def torch_script(kind, folder):
    """(model script path, function) building the PyTorch module of `kind` (None when there is none): resnet50 from
    bench/torch_runner_overhead.py's definition (the module full_size_models.py exports), the exported kinds from
    tests/cli/exported_models.py's build() at the bench size; bert-base is an ONNX model only."""
    path = os.path.join(folder, f"{kind}_torch.py")
    if kind == "resnet50":
        from torch_runner_overhead import MODELS_SCRIPT
        with open(path, "w") as out:
            out.write(MODELS_SCRIPT)
        return path, "resnet50"
    if kind in FULL_SIZE_KINDS:
        return None
    with open(path, "w") as out:
        out.write(f"import sys\nsys.path.insert(0, {os.path.join(ROOT, 'tests', 'cli')!r})\n"
                  "from exported_models import build\n\n\n"
                  f"def model():\n    return build({kind!r}, 'bench')[0]\n")
    return path, "model"


def bare_onnxruntime(model, feed, threads, runs, folder):
    """{figure: value}: kernels / profiled mean wall, kernels / unprofiled mean, profiled median / unprofiled
    median, the calling thread's CPU time over the profiled wall time, and the profiler's cost per node event
    (profiled median less unprofiled median, over the node events of a run; microseconds)."""
    import onnxruntime as ort

    def session(profiling):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        if profiling:
            options.enable_profiling = True
            options.profile_file_prefix = os.path.join(folder, "ort")
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    plain, profiled = session(False), session(True)
    for _ in range(10):
        plain.run(None, feed)
    profiled.run(None, feed)  # its first run is left out of the profile below, as Parity does
    latencies = {"plain": [], "profiled": []}
    caller_cpu = 0.0
    for _ in range(runs // 10):
        for name, sess in (("plain", plain), ("profiled", profiled)):
            for _ in range(10):
                cpu, start = time.thread_time(), time.perf_counter()
                sess.run(None, feed)
                latencies[name].append(time.perf_counter() - start)
                if name == "profiled":
                    caller_cpu += time.thread_time() - cpu
    events = json.load(open(profiled.end_profiling()))
    runs_seen = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "model_run")
    first_end = runs_seen[0][1]
    node_events = [e for e in events if e.get("cat") == "Node" and e["ts"] >= first_end]
    kernels = sum(e["dur"] for e in node_events if e["name"].endswith("_kernel_time")) * 1e-6 / (len(runs_seen) - 1)
    cost = statistics.median(latencies["profiled"]) - statistics.median(latencies["plain"])
    return {"layers/profiled": kernels / statistics.mean(latencies["profiled"]),
            "layers/unprofiled": kernels / statistics.mean(latencies["plain"]),
            "profiled/unprofiled": statistics.median(latencies["profiled"]) / statistics.median(latencies["plain"]),
            "calling thread's CPU/wall": caller_cpu / sum(latencies["profiled"]),
            "profiler cost per event (us)": 1e6 * cost / (len(node_events) / (len(runs_seen) - 1))}


def bare_openvino(model, shapes, feed, threads, runs, static=True):
    """{figure: value}: layers / profiled mean wall, layers / unprofiled mean, profiled median / unprofiled median,
    the calling thread's CPU time over the profiled wall time, and the unprofiled median latency (seconds); the
    model reshaped to the feed's static shapes (as benchmark_app -shape and Parity's performance mode) or, with
    `static` False, as exported (dynamic dimensions)."""
    import openvino as ov
    core = ov.Core()
    read = core.read_model(model)
    if static:
        read.reshape({name: ov.PartialShape(dims) for name, dims in shapes.items()})
    config = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": str(threads), "PERFORMANCE_HINT": "LATENCY"}
    plain = core.compile_model(read, "CPU", config).create_infer_request()
    profiled = core.compile_model(read, "CPU", {**config, "PERF_COUNT": True}).create_infer_request()

    def counters():
        return {p.node_name: p.real_time.total_seconds() for p in profiled.profiling_info
                if p.status == ov.ProfilingInfo.Status.EXECUTED}

    for _ in range(10):
        plain.infer(feed)
    profiled.infer(feed)
    first = counters()  # the running mean after one inference is that inference's time
    latencies = {"plain": [], "profiled": []}
    caller_cpu = 0.0
    for _ in range(runs // 10):
        for name, request in (("plain", plain), ("profiled", profiled)):
            for _ in range(10):
                cpu, start = time.thread_time(), time.perf_counter()
                request.infer(feed)
                latencies[name].append(time.perf_counter() - start)
                if name == "profiled":
                    caller_cpu += time.thread_time() - cpu
    timed = len(latencies["profiled"])
    layers = sum(mean * (timed + 1) - first.get(name, 0.0) for name, mean in counters().items()) / timed
    return {"layers/profiled": layers / statistics.mean(latencies["profiled"]),
            "layers/unprofiled": layers / statistics.mean(latencies["plain"]),
            "profiled/unprofiled": statistics.median(latencies["profiled"]) / statistics.median(latencies["plain"]),
            "calling thread's CPU/wall": caller_cpu / sum(latencies["profiled"]),
            "unprofiled median (ms)": 1e3 * statistics.median(latencies["plain"])}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=200, help="Parity's timed inferences")
    parser.add_argument("--layer-iterations", type=int, default=50, help="Parity's profiled inferences")
    parser.add_argument("--runs", type=int, default=200, help="the bare backends' runs per session")
    parser.add_argument("--torch", action="store_true",
                        help="also `parity run --torch` on the kind's PyTorch module (its per-layer time from PyTorch's "
                             "profiler); torch's intra-op threads are its own default")
    parser.add_argument("--kinds", default="resnet,bert",
                        help="tests/cli/exported_models.py's kinds at its 'bench' size (resnet, bert, gpt2, vit) and/or "
                             "bench/full_size_models.py's (resnet50, bert-base)")
    args = parser.parse_args()
    parity = os.path.join(args.build, "tools", "parity", "parity")
    with tempfile.TemporaryDirectory() as folder:
        for kind in args.kinds.split(","):
            model, size = model_of(kind, folder)
            shapes = input_shapes(model)
            feed = feed_of(model, shapes)
            script = torch_script(kind, folder) if args.torch else None
            print(f"{kind} ({size}), inputs {shapes}, {args.threads} thread(s)"
                  + ("" if not args.torch else ", PyTorch: " + (f"{script[0]}:{script[1]}, torch's own threads"
                                                                  if script else "no PyTorch module for this kind")))
            results = {}
            for repeat in range(args.repeats):
                measured = {f"parity {k}": v for k, v in
                            parity_layers(parity, model, shapes, args.threads, args.iterations, args.layer_iterations).items()}
                if args.torch and script is not None:
                    runners = ["--torch", "--torch-model-script", f"{script[0]}:{script[1]}", "--torch-python",
                               sys.executable]
                    # With the ONNX model for the input names; its modules are paired with the export's tensors.
                    measured.update({f"parity {k}": v for k, v in
                                     parity_layers(parity, model, shapes, args.threads, args.iterations,
                                                   args.layer_iterations, runners).items()})
                measured["bare onnxruntime"] = bare_onnxruntime(model, feed, args.threads, args.runs, folder)
                measured["bare openvino"] = bare_openvino(model, shapes, feed, args.threads, args.runs)
                measured["bare openvino, dynamic"] = bare_openvino(model, shapes, feed, args.threads, args.runs,
                                                                   static=False)
                line = " | ".join(f"{who}: " + ", ".join(f"{n} {v:.3f}" for n, v in values.items())
                                  for who, values in measured.items())
                print(f"  repeat {repeat + 1}: {line} | load average {os.getloadavg()[0]:.1f}", flush=True)
                for who, values in measured.items():
                    for name, value in values.items():
                        results.setdefault(who, {}).setdefault(name, []).append(value)
            for who, figures in results.items():
                print(f"  {who}: " + ", ".join(f"{name} {spread(values)}" for name, values in figures.items()))


if __name__ == "__main__":
    main()
