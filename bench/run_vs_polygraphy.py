"""`parity run` against `polygraphy run`, measured in the same benchmark run. Prints ratios.

    python bench/run_vs_polygraphy.py [--parity build/release/tools/parity/parity] [--repeat 5]

1. Wall time of the whole command on a tiny model (one Add + Relu, [1, 16]):
   `parity run tiny.onnx --onnxrt` vs `polygraphy run tiny.onnx --onnxrt` (median of --repeat
   runs; target ratio <= 0.25). This is mostly start-up cost: process, library loading, session.
2. Peak RSS (each command in its own process, read with wait4) of
   `parity run M --ref --onnxrt --onnx-outputs mark all` (layerwise, streamed) against
   `polygraphy run M --onnxrt --onnx-outputs mark all` and against the plain
   `parity run M --ref --onnxrt`, on ../shared/models/ppocrv4_det.onnx (x [1,3,640,640]) and the
   BERT-base-sized encoder from bench/make_bert.py.
3. Wall time and peak RSS of the same layerwise comparison on both tools, on ppocrv4_det:
   `run M --onnxrt --onnxrt --onnx-outputs mark all` (two ONNX Runtime runners, every one of the
   672 tensors compared with its statistics), one run each.

Needs the `polygraphy`, `onnx` and `onnxruntime` packages (the project's .venv).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")


def measure(command, env=None):
    """Runs `command`; returns (seconds, peak RSS in MiB, exit code)."""
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in (0, 1):
            log.seek(0)
            tail = log.read().decode(errors="replace")[-2000:]
            sys.exit(f"command failed ({process.returncode}): {' '.join(command)}\n{tail}")
    return seconds, usage.ru_maxrss / 1024.0, process.returncode


def make_tiny(path):
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["s"], name="add"), helper.make_node("Relu", ["s"], ["y"], name="relu")],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parity", default=os.path.join(ROOT, "build", "release", "tools", "parity", "parity"))
    parser.add_argument("--polygraphy", default=shutil.which("polygraphy") or "polygraphy")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-memory", action="store_true", help="only the start-up timing")
    args = parser.parse_args()
    env = dict(os.environ, NO_COLOR="1")

    with tempfile.TemporaryDirectory() as tmp:
        tiny = os.path.join(tmp, "tiny.onnx")
        make_tiny(tiny)
        print(f"== wall time: run tiny.onnx --onnxrt (median of {args.repeat}) ==")
        timings = {}
        for label, command in (("parity", [args.parity, "run", tiny, "--onnxrt"]),
                               ("polygraphy", [args.polygraphy, "run", tiny, "--onnxrt"])):
            measure(command, env)  # warm the page cache
            timings[label] = statistics.median(measure(command, env)[0] for _ in range(args.repeat))
            print(f"{label:>12}: {timings[label] * 1000:9.1f} ms")
        print(f"{'ratio':>12}: {timings['parity'] / timings['polygraphy']:.3f} (parity / polygraphy; target <= 0.25)")
        if args.skip_memory:
            return

        bert = os.path.join(tmp, "bert_base.onnx")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_bert.py"), "-o", bert], check=True,
                       stdout=subprocess.DEVNULL)
        models = [
            ("ppocrv4_det", os.path.join(SHARED, "models", "ppocrv4_det.onnx"), ["--input-shapes", "x:[1,3,640,640]"]),
            ("bert_base", bert, []),
        ]
        for label, model, extra in models:
            print(f"\n== peak RSS: {label} ==")
            # Loose tolerances: this measures memory, not accuracy (exit code 1 is accepted).
            tolerances = ["--atol", "1e-2", "--rtol", "1e-2"]
            commands = {
                "parity layerwise (--ref --onnxrt, mark all)":
                    [args.parity, "run", model, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", *extra,
                     *tolerances, "-q"],
                "polygraphy layerwise (--onnxrt, mark all)":
                    [args.polygraphy, "run", model, "--onnxrt", "--onnx-outputs", "mark", "all", *extra, "-q"],
                "parity plain (--ref --onnxrt)": [args.parity, "run", model, "--ref", "--onnxrt", *extra, *tolerances,
                                                  "-q"],
            }
            rss = {}
            for name, command in commands.items():
                seconds, peak, code = measure(command, env)
                rss[name] = peak
                print(f"{name:>46}: {peak:8.1f} MiB peak RSS, {seconds:6.1f} s, exit {code}")
            names = list(commands)
            print(f"{'parity layerwise / polygraphy layerwise':>46}: {rss[names[0]] / rss[names[1]]:.3f}")
            print(f"{'parity layerwise / parity plain':>46}: {rss[names[0]] / rss[names[2]]:.3f}")

        model, extra = models[0][1], models[0][2]
        print("\n== the same layerwise comparison on both tools: ppocrv4_det, --onnxrt --onnxrt, mark all ==")
        measured = {}
        for label, tool in (("parity", args.parity), ("polygraphy", args.polygraphy)):
            seconds, peak, code = measure([tool, "run", model, "--onnxrt", "--onnxrt", "--onnx-outputs", "mark", "all",
                                           *extra, "-q"], env)
            measured[label] = (seconds, peak)
            print(f"{label:>12}: {seconds:6.1f} s, {peak:8.1f} MiB peak RSS, exit {code}")
        print(f"{'ratio':>12}: wall {measured['parity'][0] / measured['polygraphy'][0]:.3f}, "
              f"peak RSS {measured['parity'][1] / measured['polygraphy'][1]:.3f} (parity / polygraphy)")


if __name__ == "__main__":
    main()
