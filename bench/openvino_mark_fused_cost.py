#!/usr/bin/env python3
"""What `--ov-outputs mark fused` costs against a plain `--ov-outputs mark all` run, side by side in
the same run, on BERT, GPT-2 and ViT exported from PyTorch (tests/cli/exported_models.py, size
"bench"):

    parity run M --onnxrt --openvino --ov-outputs mark all
    parity run M --onnxrt --openvino --ov-outputs mark fused

Each command runs --repeat times, the two alternating; the table gives the median wall time of each,
their ratio (mark fused / mark all), how many times mark fused compiled the model and how many of
the plain model's layer outputs it compared (both from its summary line).

    .venv/bin/python bench/openvino_mark_fused_cost.py [--parity build/release/tools/parity/parity]
        [--kinds bert,gpt2,vit] [--exporters torchscript,dynamo] [--repeat 3]
"""

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "cli"))
from exported_models import SIZES, export  # noqa: E402

SUMMARY = re.compile(r"mark fused: (\d+) of the (\d+) tensor.*? \((\d+) compiles\)")


def timed(command):
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: a comparison failed, which the timing does not care about
        raise SystemExit(f"{' '.join(map(str, command))} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return elapsed, done.stdout + done.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parity", default=str(REPO / "build" / "release" / "tools" / "parity" / "parity"))
    parser.add_argument("--kinds", default="bert,gpt2,vit")
    parser.add_argument("--exporters", default="torchscript,dynamo")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for kind in args.kinds.split(","):
            for exporter in args.exporters.split(","):
                model = export(kind, Path(folder) / f"{kind}_{exporter}.onnx", exporter, size="bench")
                base = [args.parity, "run", str(model), "--onnxrt", "--openvino", "--ov-outputs", "mark"]
                times = {"all": [], "fused": []}
                summary = None
                for _ in range(args.repeat):
                    for mode in ("all", "fused"):
                        elapsed, output = timed(base + [mode])
                        times[mode].append(elapsed)
                        if mode == "fused":
                            summary = SUMMARY.search(output)
                            if not summary:
                                raise SystemExit(f"no mark fused summary line in the output of {model}:\n{output}")
                all_s, fused_s = statistics.median(times["all"]), statistics.median(times["fused"])
                rows.append((f"{kind}_{exporter}", all_s, fused_s, fused_s / all_s, summary.group(3),
                             f"{summary.group(1)} of {summary.group(2)}"))
    print(f"parity run M --onnxrt --openvino --ov-outputs mark fused | mark all; size 'bench' "
          f"({SIZES['bench']}); median of {args.repeat} alternating runs each")
    print(f"{'model':<18} {'mark all s':>10} {'mark fused s':>12} {'fused/all':>9} {'compiles':>8}  compared")
    for name, all_s, fused_s, ratio, compiles, compared in rows:
        print(f"{name:<18} {all_s:>10.2f} {fused_s:>12.2f} {ratio:>8.2f}x {compiles:>8}  {compared}")


if __name__ == "__main__":
    main()
