"""Costs per tensor on chains of tiny tensors (issue 39, item 9): `run --ref --onnx-outputs mark
all` (the time was quadratic in the tensors) and the streamed two-runner layerwise run with
`--layerwise-memory 0` (~16 KB of memory per tensor), for two model sizes, with ONNX Runtime as the
second runner beside a second reference runner. Prints the wall and CPU time ratio between the
sizes (linear: ~4 for 4x the tensors) and the peak RSS added per tensor. --before runs another
parity binary (main's, say) the same way, side by side.

    python bench/many_tensors_scaling.py [--build build/release] [--sizes 20000,80000] [--before PARITY]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from test_many_tensors_scaling import LAUNCHER, chain_model  # noqa: E402  (tests/cli is on the path from here)


def measure(parity, args, cwd):
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", LAUNCHER, parity, *map(str, args)], cwd=cwd, capture_output=True,
                         text=True, check=True)
    peak, cpu, code = out.stdout.split()[-3:]
    if int(code) != 0:
        raise SystemExit(f"parity {' '.join(map(str, args))} exited {code}")
    return time.perf_counter() - start, float(cpu), int(peak)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--sizes", default="20000,80000")
    parser.add_argument("--before", help="another parity binary, run the same way")
    args = parser.parse_args()
    small, large = (int(v) for v in args.sizes.split(","))
    binaries = [("this build", os.path.join(args.build, "tools", "parity", "parity"))]
    if args.before:
        binaries.append(("--before", args.before))
    with tempfile.TemporaryDirectory() as folder:
        models = {n: chain_model(n, os.path.join(folder, f"chain{n}.onnx")) for n in (small, large)}
        for label, parity in binaries:
            mark = {n: measure(parity, ["run", models[n], "--ref", "--onnx-outputs", "mark", "all"], folder)
                    for n in (small, large)}
            print(f"{label}: mark all, {small} -> {large} tensors: wall {mark[small][0]:.2f} -> {mark[large][0]:.2f} s "
                  f"(x{mark[large][0] / mark[small][0]:.1f}), CPU x{mark[large][1] / max(mark[small][1], 1e-3):.1f} "
                  f"(linear: ~{large / small:.0f})", flush=True)
            for second in ("--ref", "--onnxrt"):
                run = {n: measure(parity, ["run", models[n], "--ref", second, "--onnx-outputs", "mark", "all",
                                           "--layerwise-memory", "0"], folder) for n in (small, large)}
                per_tensor = (run[large][2] - run[small][2]) / (large - small)
                print(f"{label}: layerwise --ref {second} --layerwise-memory 0: peak {run[small][2] / 2**20:.0f} -> "
                      f"{run[large][2] / 2**20:.0f} MiB, {per_tensor / 1024:.1f} KiB per added tensor", flush=True)


if __name__ == "__main__":
    main()
