"""`parity run --dataset` throughput and memory, against a single-process loop and Polygraphy's `run`, measured in
the same benchmark run. Prints ratios.

    python bench/dataset_validation.py [--parity build/release/tools/parity/parity] [--samples 400] [--size bench]

The model is the ResNet of tests/cli/exported_models.py (--size bench), the runners `--onnxrt --onnxrt` (the
pair Polygraphy can run too), the samples one seeded random image each, the same arrays for every tool:
a dataset script (num_samples/load) for Parity, a generator (--data-loader-script) for Polygraphy.

1. samples/s of the whole command (the best of --repeat runs), N samples: `parity run --dataset` in one process (the single-process
   loop), with --workers 1 and --workers 2, and `polygraphy run --data-loader-script`. Ratios: workers vs the
   single-process loop (on 2 cores expect <= 2x; ONNX Runtime already uses every core for one sample), and
   each against Polygraphy.
2. Peak RSS (wait4) at N and 4N samples, in one process and with --workers 2 (the largest process), and
   Polygraphy's: flat for Parity (records are merged as they arrive), growing for Polygraphy (it keeps every
   iteration's outputs).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))

DATASET = """import numpy as np, os
N = int(os.environ["BENCH_SAMPLES"])
SHAPE = {shape}
def num_samples():
    return N
def load(i):
    return {{"x": np.random.default_rng(i).standard_normal(SHAPE).astype(np.float32)}}
def load_data():
    for i in range(N):
        yield load(i)
"""


# Forks the command from a small process and writes its peak RSS (wait4's ru_maxrss: the command, or the
# largest descendant it waited for) to argv[1]: a child forked from this benchmark would start with the RSS
# that exporting the model left here.
PEAK_LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss * 1024))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measure(command, samples, cwd):
    """Runs `command` with BENCH_SAMPLES=samples; returns (seconds, peak RSS in MiB)."""
    env = dict(os.environ, BENCH_SAMPLES=str(samples), NO_COLOR="1")
    peak_file = os.path.join(cwd, "peak_rss")
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        code = subprocess.call([sys.executable, "-c", PEAK_LAUNCHER, peak_file, *command], stdout=log,
                               stderr=subprocess.STDOUT, env=env, cwd=cwd)
        seconds = time.perf_counter() - start
        if code != 0:
            log.seek(0)
            sys.exit(f"command failed ({code}): {' '.join(command)}\n{log.read().decode(errors='replace')[-3000:]}")
    with open(peak_file) as f:
        return seconds, int(f.read()) / 2**20


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parity", default=os.path.join(ROOT, "build", "release", "tools", "parity", "parity"))
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--size", default="bench", choices=["tiny", "bench"])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each throughput measurement (the best kept)")
    args = parser.parse_args()
    from exported_models import build, export

    polygraphy = os.path.join(os.path.dirname(sys.executable), "polygraphy")
    with tempfile.TemporaryDirectory() as folder:
        model = os.path.join(folder, "resnet.onnx")
        export("resnet", model, "torchscript", size=args.size)
        _, inputs, _ = build("resnet", args.size)
        shape = tuple(inputs[0].shape)
        with open(os.path.join(folder, "data.py"), "w") as f:
            f.write(DATASET.format(shape=shape))
        parity = [args.parity, "run", model, "--onnxrt", "--onnxrt", "--dataset", "data.py"]
        commands = {
            "parity, one process": parity,
            "parity --workers 1": parity + ["--workers", "1"],
            "parity --workers 2": parity + ["--workers", "2"],
            "polygraphy run": [polygraphy, "run", model, "--onnxrt", "--onnxrt", "--data-loader-script",
                               "data.py:load_data"],
        }
        n = args.samples
        print(f"ResNet ({args.size}, input {list(shape)}), runners --onnxrt --onnxrt, {n} samples, "
              f"{os.cpu_count()} cores")
        rates, peaks = {}, {}
        for name, command in commands.items():
            runs = [measure(command, n, folder) for _ in range(args.repeat)]
            seconds, peak = min(run[0] for run in runs), max(run[1] for run in runs)
            rates[name], peaks[(name, n)] = n / seconds, peak
            print(f"  {name:22s} {n / seconds:8.1f} samples/s   peak RSS {peak:7.1f} MiB")
        base = rates["parity, one process"]
        print("\nsamples/s ratios (higher is faster):")
        for name in ("parity --workers 1", "parity --workers 2"):
            print(f"  {name} / single-process loop: {rates[name] / base:.2f}x")
        for name in ("parity, one process", "parity --workers 1", "parity --workers 2"):
            print(f"  {name} / polygraphy run: {rates[name] / rates['polygraphy run']:.2f}x")

        print(f"\npeak RSS at {4 * n} samples vs {n} (1.00: flat in the number of samples):")
        for name in ("parity, one process", "parity --workers 2", "polygraphy run"):
            _, peak = measure(commands[name], 4 * n, folder)
            print(f"  {name:22s} {peaks[(name, n)]:7.1f} -> {peak:7.1f} MiB: {peak / peaks[(name, n)]:.2f}x")


if __name__ == "__main__":
    main()
