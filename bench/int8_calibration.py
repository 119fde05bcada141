"""int8 calibration against ONNX Runtime's quantize_static (issue 33), side by side in one run, on the
same models and the same calibration data (saved once to .npy files: Parity reads them through a
--data-loader-script, quantize_static through a CalibrationDataReader):

- min-max: Parity's activation scales against quantize_static's (MinMax, symmetric int8 activations,
  per-channel weights) on the tensors both quantize: the largest relative difference.
- entropy and percentile: each tool's output error against float32 on held-out inputs, both int8
  models run on ONNX Runtime.
- calibration time for --inputs inputs (default 500) over quantize_static's, per algorithm (the
  ratio; target <= 0.5), wall time and CPU time (user + system, every thread and child process),
  in two pairs that each do the same job on both sides:
    process: `parity convert --int8` as a new process (its start, the data loader script's Python
      process and the hand-over of its feeds, the model read and written) against quantize_static
      run by a new Python process (the interpreter's start, importing numpy and
      onnxruntime.quantization, the same .npy files read, the model read and written);
    in-process: parity.quantization against quantize_static, both called in this (running)
      Python with the same data reader, imports done before the clock starts.
  and the cross ratio printed before (`parity convert` as a process against quantize_static in
  this Python), which charges Parity's process start and not quantize_static's.
  --peer-no-spinning adds quantize_static's process with its ONNX Runtime sessions' thread spinning
  off (as Parity's calibration session runs): on a loaded machine, spinning threads cost it much.
- latency of Parity's int8 model on OpenVINO and on ONNX Runtime (and of quantize_static's on ONNX
  Runtime) against the float32 model on ONNX Runtime (medians, batch 1, the same --threads for all).
- --floor (min-max): the inferences alone, ONNX Runtime's Python API on the same inputs stacked and
  threaded as Parity runs them (one session per core, one intra-op thread each; bare model, and with
  the calibrated activations as outputs; the bare model again with thread spinning on, as
  quantize_static runs, which only a quiet machine rewards), against quantize_static: the inferences
  that any calibration on ONNX Runtime's CPU kernels runs.
- --table: the error of int8 against float32 per algorithm per model, as docs/int8.md lists it.

    python bench/int8_calibration.py [--build build/release] [--inputs 500] [--threads 2] [--models resnet,bert]
        [--algos minmax,entropy,percentile] [--no-latency] [--peer-no-spinning] [--floor] [--table]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.path.insert(0, os.path.join(ROOT, "build", "release", "python"))  # parity.quantization (--build's below)
from exported_models import SIZES, export  # noqa: E402  (tests/cli is on the path from here)

OPS = ["Conv", "ConvTranspose", "MatMul", "Gemm", "MaxPool", "AveragePool", "GlobalAveragePool"]
ALGOS = {"minmax": "MinMax", "entropy": "Entropy", "percentile": "Percentile"}
PERCENTILE = 99.99


def model_inputs(path, batch=1):
    """(name, numpy dtype, concrete shape) of each graph input; symbolic dims: batch, then the text length."""
    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    result = []
    for value in model.graph.input:
        if value.name in inits:
            continue
        t = value.type.tensor_type
        dims = []
        for i, d in enumerate(t.shape.dim):
            dims.append(d.dim_value if d.HasField("dim_value") else (batch if i == 0 else SIZES["bench"]["seq"]))
        result.append((value.name, onnx.helper.tensor_dtype_to_np_dtype(t.elem_type), tuple(dims)))
    return result


def make_data(path, count, seed, vocab):
    """`count` feeds: float inputs N(0, 1); integer ones token ids below `vocab` (a mask: ones; token types: 0)."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, dtype, shape in model_inputs(path):
        if np.issubdtype(dtype, np.floating):
            arrays[name] = rng.standard_normal((count, *shape)).astype(dtype)
        elif "mask" in name:
            arrays[name] = np.ones((count, *shape), dtype)
        elif "type" in name:
            arrays[name] = np.zeros((count, *shape), dtype)
        else:
            arrays[name] = rng.integers(0, vocab, (count, *shape)).astype(dtype)
    return arrays


def save_data(folder, tag, arrays):
    files = {}
    for name, array in arrays.items():
        files[name] = os.path.join(folder, f"{tag}_{len(files)}.npy")
        np.save(files[name], array)
    script = os.path.join(folder, f"{tag}_calib.py")
    with open(script, "w") as f:
        f.write(textwrap.dedent(f"""\
            import numpy as np

            FILES = {files!r}

            def load_data():
                arrays = {{name: np.load(path, mmap_mode="r") for name, path in FILES.items()}}
                count = len(next(iter(arrays.values())))
                for i in range(count):
                    yield {{name: np.ascontiguousarray(a[i]) for name, a in arrays.items()}}
            """))
    return files, script


class Reader:
    """quantize_static's CalibrationDataReader over the same .npy files."""

    def __init__(self, files):
        self.arrays = {name: np.load(path, mmap_mode="r") for name, path in files.items()}
        self.count = len(next(iter(self.arrays.values())))
        self.i = 0

    def get_next(self):
        if self.i >= self.count:
            return None
        feed = {name: np.ascontiguousarray(a[self.i]) for name, a in self.arrays.items()}
        self.i += 1
        return feed

    def rewind(self):
        self.i = 0


class Timing:
    """Wall seconds and CPU seconds (user + system) of what runs inside `with Timing(children=...)`:
    this process's (every thread) or, with children=True, the child processes' that ended in it."""

    def __init__(self, children=False):
        self.who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF

    def cpu(self):
        usage = resource.getrusage(self.who)
        return usage.ru_utime + usage.ru_stime

    def __enter__(self):
        self.wall, self.cpu_seconds = time.perf_counter(), self.cpu()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu_seconds = self.cpu() - self.cpu_seconds


def parity_quantize(parity, model, out, algo, script):
    """`parity convert --int8` as a new process: its Timing (wall and CPU, the script's Python included)."""
    args = [parity, "convert", model, "--int8", "--calibration-algo", algo, "--data-loader-script", script, "-o", out]
    if algo == "percentile":
        args += ["--percentile", str(PERCENTILE)]
    with Timing(children=True) as timing:
        run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"parity convert failed:\n{run.stdout}\n{run.stderr}")
    return timing


def api_quantize(model, algo, files):
    """Parity's Python API in this process (parity.quantization), fed from the same .npy files."""
    from parity.quantization import Calibrator, quantize_onnx
    reader = Reader(files)
    feeds = iter(reader.get_next, None)
    with Timing() as timing:
        quantize_onnx(model, Calibrator(feeds, algo=algo, percentile=PERCENTILE if algo == "percentile" else None))
    return timing


def ort_arguments(algo):
    extra = {"ActivationSymmetric": True, "WeightSymmetric": True}
    if algo == "percentile":
        extra["CalibPercentile"] = PERCENTILE
    return dict(per_channel=True, extra_options=extra)


def ort_quantize(model, out, algo, files):
    """quantize_static in this process (imported before the clock starts)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    with Timing() as timing:
        quantize_static(model, out, Reader(files), quant_format=QuantFormat.QDQ, op_types_to_quantize=OPS,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        calibrate_method=getattr(CalibrationMethod, ALGOS[algo]), **ort_arguments(algo))
    return timing


# Prepended to quantize_static's process by --peer-no-spinning: every SessionOptions it makes has
# ONNX Runtime's intra-op thread spinning off, as Parity's calibration session has.
NO_SPINNING = """\
import onnxruntime

class _NoSpinning(onnxruntime.SessionOptions):
    def __init__(self):
        super().__init__()
        self.add_session_config_entry("session.intra_op.allow_spinning", "0")

onnxruntime.SessionOptions = _NoSpinning
"""


def ort_quantize_process(model, out, algo, files, spinning=True):
    """quantize_static run by a new Python process that imports only what it needs (numpy,
    onnxruntime.quantization) and reads the same .npy files: the same job as `parity convert`.
    spinning=False: its ONNX Runtime sessions with thread spinning off (NO_SPINNING)."""
    code = ("" if spinning else NO_SPINNING) + textwrap.dedent(f"""\
        import numpy as np
        from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

        class Reader:
            def __init__(self, files):
                self.arrays = {{name: np.load(path, mmap_mode="r") for name, path in files.items()}}
                self.count = len(next(iter(self.arrays.values())))
                self.i = 0

            def get_next(self):
                if self.i >= self.count:
                    return None
                self.i += 1
                return {{name: np.ascontiguousarray(a[self.i - 1]) for name, a in self.arrays.items()}}

        quantize_static({str(model)!r}, {str(out)!r}, Reader({files!r}), quant_format=QuantFormat.QDQ,
                        op_types_to_quantize={OPS!r}, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.{ALGOS[algo]}, **{ort_arguments(algo)!r})
        """)
    with Timing(children=True) as timing:
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip().splitlines()[-1] if run.stderr.strip() else "quantize_static failed")
    return timing


# Parity's calibration stacks (src/quantize/calibrator.cpp): as many feeds as keep the largest calibrated
# activation of a stack within STACK_BYTES, at most MAX_STACK.
STACK_BYTES = 1 << 20
MAX_STACK = 16


def with_outputs(proto, names):
    """A copy of `proto` with `names` added as float graph outputs (those it returns already left out)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    returned = {v.name for v in proto.graph.output} | {v.name for v in proto.graph.input}
    for name in names:
        if name not in returned:
            copy.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    return copy


def inference_floor(model, files, calibrated, fetch=True, spinning=False):
    """The floor under any calibration of `model` on ONNX Runtime: its inferences alone on the calibration
    inputs, ONNX Runtime's Python API on the .npy files, run as Parity's calibration runs them: feeds stacked
    along the batch dimension where every input's leading dimension is named (as many as keep the largest of
    the `calibrated` activations of a stack within STACK_BYTES, sized on the first feed's run; one feed at a
    time otherwise), one session per core with one intra-op thread each, each thread taking the next stack,
    thread spinning off (spinning=True: on, as quantize_static's sessions have it). fetch: the calibrated
    activations are graph outputs (what Parity's calibration fetches; False: the bare model). Timing of the
    inferences only: the sessions are made and the stacks are built (contiguous arrays) before."""
    import threading
    import onnxruntime as ort
    proto = onnx.load(str(model))
    inits = {i.name for i in proto.graph.initializer}
    stackable = all(v.type.tensor_type.shape.dim and v.type.tensor_type.shape.dim[0].dim_param
                    for v in proto.graph.input if v.name not in inits)
    marked = with_outputs(proto, calibrated)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    arrays = {name: np.load(path, mmap_mode="r") for name, path in files.items()}
    count = len(next(iter(arrays.values())))
    stack = 1
    if stackable:
        sizing = ort.InferenceSession(marked.SerializeToString(), options, providers=["CPUExecutionProvider"])
        first = sizing.run(None, {name: np.ascontiguousarray(a[0]) for name, a in arrays.items()})
        inputs = {v.name for v in proto.graph.input}
        largest = max([o.nbytes for v, o in zip(sizing.get_outputs(), first) if v.name in calibrated and
                       v.name not in inputs] or [1])
        stack = max(1, min(MAX_STACK, STACK_BYTES // largest))
    serialized = (marked if fetch else proto).SerializeToString()
    sessions = [ort.InferenceSession(serialized, options, providers=["CPUExecutionProvider"])
                for _ in range(os.cpu_count())]
    stacks = [{name: np.ascontiguousarray(a[i:i + stack].reshape(-1, *a.shape[2:])) for name, a in arrays.items()}
              for i in range(0, count, stack)]
    names = [o.name for o in sessions[0].get_outputs()]
    taken = iter(range(len(stacks)))
    lock = threading.Lock()

    def work(session):
        while True:
            with lock:
                index = next(taken, None)
            if index is None:
                return
            session.run(names, stacks[index])

    with Timing() as timing:
        threads = [threading.Thread(target=work, args=(session,)) for session in sessions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return timing


def ratio(ours, theirs):
    return f"{ours.wall / theirs.wall:.2f}x (CPU {ours.cpu_seconds / theirs.cpu_seconds:.2f}x)"


def activation_scales(path):
    model = onnx.load(str(path))
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    return {n.input[0]: float(inits[n.input[1]]) for n in model.graph.node
            if n.op_type == "QuantizeLinear" and n.input[0] not in inits and n.input[1] in inits}


def session(path, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def outputs(path, feeds, threads):
    s = session(path, threads)
    return [s.run(None, feed) for feed in feeds]


def relative_error(got, expected):
    """||int8 - fp32|| / ||fp32|| over every output of every feed."""
    num = sum(float(np.sum((g.astype(np.float64) - e) ** 2)) for gs, es in zip(got, expected) for g, e in zip(gs, es))
    den = sum(float(np.sum(e.astype(np.float64) ** 2)) for es in expected for e in es)
    return (num / den) ** 0.5


def median_latency(run, feed, repeats):
    for _ in range(5):
        run(feed)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(feed)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def latency(fp32, int8, theirs, feed, threads, repeats):
    import openvino as ov
    ort_fp32 = session(fp32, threads)
    ort_int8 = session(int8, threads)
    ort_theirs = session(theirs, threads)
    core = ov.Core()
    compiled = core.compile_model(str(int8), "CPU", {"INFERENCE_NUM_THREADS": threads})
    request = compiled.create_infer_request()
    return (median_latency(lambda f: ort_fp32.run(None, f), feed, repeats),
            median_latency(lambda f: ort_int8.run(None, f), feed, repeats),
            median_latency(lambda f: request.infer(f), feed, repeats),
            median_latency(lambda f: ort_theirs.run(None, f), feed, repeats))


def bench_model(parity, kind, path, folder, args):
    vocab = SIZES["bench"]["vocab"]
    calib_files, script = save_data(folder, f"{kind}_calib", make_data(path, args.inputs, 1, vocab))
    held_out = make_data(path, args.eval, 2, vocab)
    feeds = [{name: a[i] for name, a in held_out.items()} for i in range(args.eval)]
    fp32_out = outputs(path, feeds, args.threads)
    print(f"== {kind} ({os.path.basename(path)}), {args.inputs} calibration inputs, {args.eval} held out, "
          f"{args.threads} thread(s)", flush=True)
    errors = {}
    for algo in args.algos.split(","):
        ours, theirs = os.path.join(folder, f"{kind}_{algo}_parity.onnx"), os.path.join(folder, f"{kind}_{algo}_ort.onnx")
        t_parity = parity_quantize(parity, path, ours, algo, script)
        t_api = api_quantize(path, algo, calib_files)
        e_parity = relative_error(outputs(ours, feeds, args.threads), fp32_out)
        errors[algo] = e_parity
        try:
            t_ort = ort_quantize(path, theirs, algo, calib_files)
            t_ort_process = ort_quantize_process(path, theirs, algo, calib_files)
            t_ort_quiet = ort_quantize_process(path, theirs, algo, calib_files, spinning=False) if args.peer_no_spinning \
                else None
            e_ort = relative_error(outputs(theirs, feeds, args.threads), fp32_out)
        except Exception as error:  # the peer's failure is a result of the comparison, not the end of the bench
            print(f"{algo:10s} parity convert {t_parity.wall:.2f} s, parity.quantization {t_api.wall:.2f} s | int8 vs "
                  f"fp32 relative error: parity {e_parity:.4f} | quantize_static failed: "
                  f"{str(error).splitlines()[0][:300]}", flush=True)
            continue
        line = (f"{algo:10s} calibration time (load {os.getloadavg()[0]:.1f}), parity / quantize_static: "
                f"process {t_parity.wall:.2f}/{t_ort_process.wall:.2f} s = {ratio(t_parity, t_ort_process)}; "
                f"in-process {t_api.wall:.2f}/{t_ort.wall:.2f} s = {ratio(t_api, t_ort)}; "
                f"parity convert process / quantize_static in-process = {ratio(t_parity, t_ort)}" +
                (f"; process, quantize_static's sessions without thread spinning: {t_parity.wall:.2f}/"
                 f"{t_ort_quiet.wall:.2f} s = {ratio(t_parity, t_ort_quiet)}" if t_ort_quiet else "") +
                f" | int8 vs fp32 relative error: parity {e_parity:.4f}, "
                f"quantize_static {e_ort:.4f}")
        if algo == "minmax":
            a, b = activation_scales(ours), activation_scales(theirs)
            common = sorted(set(a) & set(b))
            worst = max((abs(a[t] - b[t]) / b[t] for t in common), default=float("nan"))
            line += f" | min-max scales: {len(common)} common tensors, max relative difference {worst:.3g}"
        print(line, flush=True)
        if args.pairs > 1:
            pairs = [(parity_quantize(parity, path, ours, algo, script), ort_quantize_process(path, theirs, algo, calib_files))
                     for _ in range(args.pairs)]
            walls = sorted(p.wall / o.wall for p, o in pairs)
            cpus = sorted(p.cpu_seconds / o.cpu_seconds for p, o in pairs)
            print(f"{'':10s} process, {args.pairs} more pairs in alternation (load {os.getloadavg()[0]:.1f}): wall ratio "
                  f"median {statistics.median(walls):.2f}x ({walls[0]:.2f}x..{walls[-1]:.2f}x), CPU ratio median "
                  f"{statistics.median(cpus):.2f}x ({cpus[0]:.2f}x..{cpus[-1]:.2f}x); parity convert median "
                  f"{statistics.median(p.wall for p, _ in pairs):.2f} s, quantize_static's process median "
                  f"{statistics.median(o.wall for _, o in pairs):.2f} s", flush=True)
        if args.floor and algo == "minmax":
            calibrated = sorted(activation_scales(ours))
            bare = inference_floor(path, calib_files, calibrated, fetch=False)
            marked = inference_floor(path, calib_files, calibrated)
            spinning = inference_floor(path, calib_files, calibrated, fetch=False, spinning=True)
            print(f"{'':10s} inference floor (load {os.getloadavg()[0]:.1f}), ONNX Runtime's Python API, {args.inputs} "
                  f"inputs stacked and threaded as Parity runs them, spinning off: bare model {bare.wall:.2f} s (CPU {bare.cpu_seconds:.2f} s) = "
                  f"{ratio(bare, t_ort_process)} of quantize_static's process, {ratio(bare, t_ort)} in-process; "
                  f"with the {len(activation_scales(ours))} calibrated tensors as outputs {marked.wall:.2f} s (CPU "
                  f"{marked.cpu_seconds:.2f} s) = {ratio(marked, t_ort_process)}, {ratio(marked, t_ort)}; bare with "
                  f"spinning on {spinning.wall:.2f} s (CPU {spinning.cpu_seconds:.2f} s) = "
                  f"{ratio(spinning, t_ort_process)}, {ratio(spinning, t_ort)}", flush=True)
    if args.latency:
        ours = os.path.join(folder, f"{kind}_entropy_parity.onnx")
        theirs = os.path.join(folder, f"{kind}_entropy_ort.onnx")
        if not os.path.exists(ours):
            parity_quantize(parity, path, ours, "entropy", script)
        if not os.path.exists(theirs):
            ort_quantize(path, theirs, "entropy", calib_files)
        fp32, ort_int8, ov_int8, ort_theirs = latency(path, ours, theirs, feeds[0], args.threads, args.repeats)
        print(f"latency (median, batch 1): fp32 ONNX Runtime {fp32 * 1e3:.2f} ms | Parity's int8 model: ONNX Runtime "
              f"{ort_int8 * 1e3:.2f} ms ({fp32 / ort_int8:.2f}x faster), OpenVINO {ov_int8 * 1e3:.2f} ms "
              f"({fp32 / ov_int8:.2f}x faster) | quantize_static's int8 model on ONNX Runtime {ort_theirs * 1e3:.2f} ms "
              f"({fp32 / ort_theirs:.2f}x faster)", flush=True)
    return errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--models", default="resnet,bert", help="exported kinds (bench size), and/or paths")
    parser.add_argument("--inputs", type=int, default=500)
    parser.add_argument("--eval", type=int, default=20)
    parser.add_argument("--algos", default="minmax,entropy,percentile")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--no-latency", dest="latency", action="store_false")
    parser.add_argument("--pairs", type=int, default=1,
                        help="N > 1: after the first pair, N more of `parity convert` and quantize_static's process in "
                             "alternation, printing the median ratio and its range (the peer's time varies between runs)")
    parser.add_argument("--peer-no-spinning", action="store_true",
                        help="also time quantize_static's process with ONNX Runtime's thread spinning off (as "
                             "Parity's calibration session runs): how much of the ratio is spinning on a loaded machine")
    parser.add_argument("--floor", action="store_true",
                        help="with minmax: also time ONNX Runtime's Python API running the model's inferences alone on "
                             "the same inputs, stacked and threaded as Parity runs them (bare, and with the calibrated activations "
                             "as outputs), against quantize_static: how far below it any ONNX Runtime calibration can go")
    parser.add_argument("--table", action="store_true", help="print docs/int8.md's error table at the end")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    parity = os.path.join(args.build, "tools", "parity", "parity")
    table = {}
    print("calibration time, wall (CPU: user + system of every thread and child process): 'process' = `parity "
          "convert --int8` as a new process (the data loader script's Python included) against quantize_static in a "
          "new Python process (interpreter start and imports included); 'in-process' = parity.quantization against "
          "quantize_static, both in this Python (imports not timed); the last ratio is the first against the second "
          "(Parity's process start charged, quantize_static's not)", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for entry in args.models.split(","):
            if os.path.exists(entry):
                kind, path = os.path.splitext(os.path.basename(entry))[0], entry
            else:
                kind, path = entry, export(entry, os.path.join(folder, f"{entry}.onnx"), "torchscript", size="bench")
            table[kind] = bench_model(parity, kind, path, folder, args)
    if args.table:
        algos = args.algos.split(",")
        print("\n| model | " + " | ".join(algos) + " |\n|---|" + "---|" * len(algos))
        for kind, errors in table.items():
            print(f"| {kind} | " + " | ".join(f"{errors[a]:.4f}" for a in algos) + " |")


if __name__ == "__main__":
    main()
