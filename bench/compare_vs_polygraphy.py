"""Parity's comparison and results files vs Polygraphy's, on the same arrays, in the same run:

  1. `simple` comparison (elemwise, with its statistics lines) of two float32 outputs of
     --elements elements (default 64 M): Parity's compare::simple() vs Polygraphy's
     CompareFunc.simple() (target <= 0.2x);
     The machine's memory bandwidth is measured in the same run (a large numpy copy: bytes read
     plus bytes written per second), and the comparison's rate is printed in bytes of input per
     second and as a fraction of that bandwidth (target >= 1/3);
  2. saving and loading a RunResults JSON of about --file-mb MB (default 500): Parity's
     save_run_results/load_run_results vs Polygraphy's save_json/load_json (target <= 0.3x each).

    python bench/compare_vs_polygraphy.py [--build build/release] [--elements 67108864] [--file-mb 500] [--repeat 3]
                                       [--skip-files]

Each side runs in its own process and times only the operation (arrays are created or loaded
from .npz before the clock starts); the median of --repeat runs is reported, with peak RSS.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PYTHON_SIDE = r"""
import json, resource, sys, time
import numpy as np
from polygraphy.comparator import CompareFunc, IterationResult, RunResults
from polygraphy.json import save_json, load_json
mode, repeat = sys.argv[1], int(sys.argv[2])
def median(work):
    times = []
    for _ in range(repeat):
        t = time.perf_counter(); work(); times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]
if mode == "compare":
    a, b = dict(np.load(sys.argv[3])), dict(np.load(sys.argv[4]))
    func = CompareFunc.simple()
    ra, rb = IterationResult(outputs=a, runner_name="a"), IterationResult(outputs=b, runner_name="b")
    seconds = median(lambda: func(ra, rb))
elif mode == "save":
    arrays = dict(np.load(sys.argv[3]))
    results = RunResults()
    results.append(("bench-runner", [IterationResult(outputs=arrays, runtime=0.001, runner_name="bench-runner")]))
    seconds = median(lambda: save_json(results, sys.argv[4]))
else:
    seconds = median(lambda: load_json(sys.argv[3]))
sys.stdout.flush()
print(json.dumps({"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), file=sys.stderr)
"""


def last_json(stderr: str) -> dict:
    for line in reversed(stderr.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no result line in:\n{stderr[-2000:]}")


def run(cmd):
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{done.stderr[-2000:]}")
    return last_json(done.stderr)


def memory_bandwidth(repeat: int, megabytes: int = 1024) -> float:
    """Bytes read plus bytes written per second by a large numpy copy (the best of `repeat`)."""
    source = np.ones(megabytes * 1024 * 1024 // 8, dtype=np.float64)
    target = np.empty_like(source)
    np.copyto(target, source)  # fault the pages in before timing
    best = float("inf")
    for _ in range(max(repeat, 3)):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return 2 * source.nbytes / best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--elements", type=int, default=64 * 1024 * 1024)
    parser.add_argument("--file-mb", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-files", action="store_true", help="only the comparison (and the bandwidth)")
    args = parser.parse_args()
    tool = os.path.join(args.build, "bench", "parity_bench_compare_files")
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        a_path, b_path = os.path.join(tmp, "a.npz"), os.path.join(tmp, "b.npz")
        a = rng.standard_normal(args.elements, dtype=np.float32)
        b = a + rng.standard_normal(args.elements, dtype=np.float32) * np.float32(1e-6)
        np.savez(a_path, output=a)
        np.savez(b_path, output=b)
        del a, b
        print(f"== simple comparison of two float32 outputs of {args.elements} elements (median of {args.repeat}) ==")
        parity = run([tool, "--repeat", str(args.repeat), "compare", a_path, b_path])
        poly = run([sys.executable, "-c", PYTHON_SIDE, "compare", str(args.repeat), a_path, b_path])
        print(f"  parity {parity['seconds']:.3f} s ({parity['peak_rss_mb']:.0f} MB)   polygraphy {poly['seconds']:.3f} s "
              f"({poly['peak_rss_mb']:.0f} MB)   ratio {parity['seconds'] / poly['seconds']:.3f} (target <= 0.2)", flush=True)
        os.remove(a_path)
        os.remove(b_path)
        bandwidth = memory_bandwidth(args.repeat)
        input_rate = 2 * args.elements * 4 / parity["seconds"]
        print(f"  memory bandwidth (numpy copy, read + write) {bandwidth / 1e9:.2f} GB/s   parity's comparison reads "
              f"{input_rate / 1e9:.2f} GB/s of input = {input_rate / bandwidth:.3f} of the bandwidth (target >= 0.333)",
              flush=True)
        if args.skip_files:
            return

        # Base64 makes 4 bytes of text per 3 of data: arrays of file_mb * 3/4 MB, in 4 outputs.
        per_array = args.file_mb * 1024 * 1024 * 3 // 4 // 4 // 4
        arrays = {f"output_{i}": rng.standard_normal(per_array, dtype=np.float32) for i in range(4)}
        in_path = os.path.join(tmp, "arrays.npz")
        np.savez(in_path, **arrays)
        del arrays
        parity_file, poly_file = os.path.join(tmp, "parity.json"), os.path.join(tmp, "polygraphy.json")
        print(f"== RunResults JSON save and load (median of {args.repeat}) ==")
        parity_save = run([tool, "--repeat", str(args.repeat), "save", in_path, parity_file])
        poly_save = run([sys.executable, "-c", PYTHON_SIDE, "save", str(args.repeat), in_path, poly_file])
        sizes = os.path.getsize(parity_file) / 1e6, os.path.getsize(poly_file) / 1e6
        print(f"  save: parity {parity_save['seconds']:.3f} s ({sizes[0]:.0f} MB file)   polygraphy "
              f"{poly_save['seconds']:.3f} s ({sizes[1]:.0f} MB file)   ratio "
              f"{parity_save['seconds'] / poly_save['seconds']:.3f} (target <= 0.3)", flush=True)
        # Each side loads the other's file too: the formats agree.
        parity_load = run([tool, "--repeat", str(args.repeat), "load", poly_file])
        poly_load = run([sys.executable, "-c", PYTHON_SIDE, "load", str(args.repeat), parity_file])
        print(f"  load: parity {parity_load['seconds']:.3f} s ({parity_load['peak_rss_mb']:.0f} MB)   polygraphy "
              f"{poly_load['seconds']:.3f} s ({poly_load['peak_rss_mb']:.0f} MB)   ratio "
              f"{parity_load['seconds'] / poly_load['seconds']:.3f} (target <= 0.3)", flush=True)


if __name__ == "__main__":
    main()
