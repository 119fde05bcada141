"""OpenVINO's compile time against the depth of nested If (issue 39, item 9: the time grows by a
constant factor per level, so `parity run --openvino` warns above 16 levels). For each depth, the
model of tests/cli/test_openvino_nested_subgraphs.py (If nodes nested N levels) is compiled by the
`openvino` Python package (the peer: ov.Core().compile_model) and run by `parity run --openvino`,
side by side; prints each time and the ratio from one depth to the next.

    python bench/openvino_nested_if.py [--build build/release] [--depths 10,12,14,16]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from test_openvino_nested_subgraphs import nested_if_model  # noqa: E402  (tests/cli is on the path from here)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--depths", default="10,12,14,16")
    args = parser.parse_args()
    import openvino as ov
    core = ov.Core()
    parity = os.path.join(args.build, "tools", "parity", "parity")
    previous = None
    with tempfile.TemporaryDirectory() as folder:
        for depth in (int(v) for v in args.depths.split(",")):
            path = nested_if_model(depth, os.path.join(folder, f"if{depth}.onnx"))
            start = time.perf_counter()
            core.compile_model(str(path), "CPU")
            peer = time.perf_counter() - start
            start = time.perf_counter()
            subprocess.run([parity, "run", str(path), "--openvino"], check=True, capture_output=True)
            ours = time.perf_counter() - start
            step = "" if previous is None else f" | x{peer / previous[1]:.2f} (openvino), x{ours / previous[2]:.2f} (parity) per {depth - previous[0]} level(s)"
            print(f"depth {depth}: openvino compile_model {peer:.2f} s, parity run --openvino {ours:.2f} s{step}", flush=True)
            previous = (depth, peer, ours)


if __name__ == "__main__":
    main()
