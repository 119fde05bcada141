"""The run loop's own cost in a streamed layerwise comparison, with the peer measured in the same run.

    python bench/layerwise_overhead.py [--parity build/release/tools/parity/parity] [--repeat 3]
                                       [--models ppocrv4_det,bert_base,magika] [--verbose]

For each model, `parity run M --onnxrt --onnxrt --onnx-outputs mark all --ort-layerwise-budget
100000` (one ONNX Runtime piece per runner, so nothing is re-executed; every tensor compared
with its statistics), the command as a user types it. Parity's Comparator times its tensor
callbacks (spilling, reading back, comparing, statistics, logging) apart from the runners' own
inference and logs both at verbose level ("Layerwise timing | ..."): the script shows that one
line with `--verbosity compare/comparator_layerwise.cpp:verbose`, which leaves every other line at
the default level. With --verbose the whole run is at verbose level (`-v`), so every passing
tensor's four histograms are computed and printed too. Printed per model, median of --repeat runs:

  - the comparison's time over the runners' own inference (target: at most 0.5);
  - the whole command's wall time, and the same layerwise comparison on Polygraphy
    (`polygraphy run M --onnxrt --onnxrt --onnx-outputs mark all`) for scale, with the ratio.

Models: ../shared/models/ppocrv4_det.onnx at x [1,3,640,640] (672 tensors), the BERT-base-sized
encoder of bench/make_bert.py, and ../shared/models/magika_standard_v3_3.onnx (many small tensors).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
TIMING = re.compile(r"Layerwise timing \| runners' own inference: ([0-9.]+) s \| comparison[^:]*: ([0-9.]+) s")


def run(command, env):
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"command failed ({done.returncode}): {' '.join(command)}\n{done.stdout[-2000:]}")
    return seconds, done.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parity", default=os.path.join(ROOT, "build", "release", "tools", "parity", "parity"))
    parser.add_argument("--polygraphy", default=shutil.which("polygraphy") or "polygraphy")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", default="ppocrv4_det,bert_base,magika")
    parser.add_argument("--no-polygraphy", action="store_true", help="skip the peer's run")
    parser.add_argument("--verbose", action="store_true", help="run at verbose level (-v): histograms of every tensor")
    args = parser.parse_args()
    env = dict(os.environ, NO_COLOR="1")
    wanted = args.models.split(",")

    with tempfile.TemporaryDirectory() as tmp:
        models = []
        if "ppocrv4_det" in wanted:
            models.append(("ppocrv4_det", os.path.join(SHARED, "models", "ppocrv4_det.onnx"),
                           ["--input-shapes", "x:[1,3,640,640]"]))
        if "bert_base" in wanted:
            bert = os.path.join(tmp, "bert_base.onnx")
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_bert.py"), "-o", bert], check=True,
                           stdout=subprocess.DEVNULL)
            models.append(("bert_base", bert, []))
        if "magika" in wanted:
            models.append(("magika", os.path.join(SHARED, "models", "magika_standard_v3_3.onnx"), []))

        for label, model, extra in models:
            layerwise = ["--onnxrt", "--onnxrt", "--onnx-outputs", "mark", "all", *extra]
            timing = ["-v"] if args.verbose else ["--verbosity", "compare/comparator_layerwise.cpp:verbose"]
            command = [args.parity, "run", model, *layerwise, "--ort-layerwise-budget", "100000", *timing]
            ratios, walls, inference, comparison = [], [], [], []
            for _ in range(args.repeat):
                seconds, out = run(command, env)
                match = TIMING.search(out)
                if not match:
                    sys.exit(f"no 'Layerwise timing' line in the output of {' '.join(command)}")
                own, spent = float(match.group(1)), float(match.group(2))
                ratios.append(spent / own)
                walls.append(seconds)
                inference.append(own)
                comparison.append(spent)
            level = "verbose" if args.verbose else "default"
            print(f"== {label}: run --onnxrt --onnxrt --onnx-outputs mark all, {level} log level "
                  f"(median of {args.repeat}) ==")
            print(f"{'runners inference':>28}: {statistics.median(inference):8.3f} s")
            print(f"{'comparison (loop overhead)':>28}: {statistics.median(comparison):8.3f} s")
            print(f"{'overhead / inference':>28}: {statistics.median(ratios):8.3f} (target <= 0.5)")
            print(f"{'parity wall':>28}: {statistics.median(walls):8.3f} s")
            if not args.no_polygraphy:
                seconds, _ = run([args.polygraphy, "run", model, *layerwise], env)
                print(f"{'polygraphy wall':>28}: {seconds:8.3f} s")
                print(f"{'parity / polygraphy wall':>28}: {statistics.median(walls) / seconds:8.3f}")
            print(flush=True)


if __name__ == "__main__":
    main()
