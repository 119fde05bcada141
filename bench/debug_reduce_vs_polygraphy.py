"""`parity debug reduce` against `polygraphy debug reduce` on the 1000-node model of the tests
(tests/cli/reduce_models.py, the planted node a Sqrt making NaN): wall time of one reduction each,
measured in the same run, and the ratios.

    python bench/debug_reduce_vs_polygraphy.py [--build build/release]

Checks: Polygraphy with `--check polygraphy run polygraphy_debug.onnx --onnxrt --validate`;
Parity with the equivalent `--check parity run polygraphy_debug.onnx --onnxrt --validate` (a
subprocess per step) and in-process (`--onnxrt --validate`, no subprocess). Bisect mode, the same
input shapes for all; each result is checked to contain the planted node.

Then the tests' model of 200 branches meeting only in one Concat (601 nodes, the planted node
ending one branch), reduced by both tools with the same check script (it fails on models holding
the planted node): the node counts each keeps, side by side (Parity by default, which keeps
Polygraphy's, and with --reduce-neighbourhood).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from reduce_models import PLANTED, branches_model, chain_model  # noqa: E402

SHAPES = ["x:[2,16]", "y:[2,16]"]


def timed(command, cwd):
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, capture_output=True)
    seconds = time.perf_counter() - start
    if completed.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, command))}\n{completed.stdout.decode()}\n{completed.stderr.decode()}")
    return seconds


def reduced_nodes(path):
    nodes = [node.name for node in onnx.load(path).graph.node]
    if PLANTED not in nodes:
        sys.exit(f"{path} does not contain the planted node: {nodes}")
    return len(nodes)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    args = parser.parse_args()
    parity = os.path.abspath(os.path.join(args.build, "tools", "parity", "parity"))
    polygraphy = os.path.join(os.path.dirname(sys.executable), "polygraphy")
    with tempfile.TemporaryDirectory() as folder:
        model = os.path.join(folder, "chain.onnx")
        onnx.save(chain_model(planted_nan=True), model)
        print(f"model: {len(onnx.load(model).graph.node)} nodes, planted node '{PLANTED}' (Sqrt -> NaN)")
        runs = {
            "polygraphy (subprocess check)": [
                polygraphy, "debug", "reduce", model, "-o", "polygraphy.onnx", "--model-input-shapes", *SHAPES,
                "--check", polygraphy, "run", "polygraphy_debug.onnx", "--onnxrt", "--validate"],
            "parity (subprocess check)": [
                parity, "debug", "reduce", model, "-o", "parity_subprocess.onnx", "--model-input-shapes", *SHAPES,
                "--check", parity, "run", "polygraphy_debug.onnx", "--onnxrt", "--validate"],
            "parity (in-process check)": [
                parity, "debug", "reduce", model, "-o", "parity_in_process.onnx", "--model-input-shapes", *SHAPES,
                "--onnxrt", "--validate"],
        }
        outputs = ["polygraphy.onnx", "parity_subprocess.onnx", "parity_in_process.onnx"]
        seconds = {}
        for (name, command), output in zip(runs.items(), outputs):
            seconds[name] = timed(command, folder)
            print(f"{name:32s} {seconds[name]:8.2f} s   reduced to {reduced_nodes(os.path.join(folder, output))} "
                  "node(s)")
        base = seconds["polygraphy (subprocess check)"]
        print(f"ratio parity/polygraphy, subprocess check: {seconds['parity (subprocess check)'] / base:.3f}x "
              "(target <= 0.5x)")
        print(f"ratio parity/polygraphy, in-process check: {seconds['parity (in-process check)'] / base:.3f}x "
              "(target <= 0.1x)")
        compare_on_branches(parity, polygraphy, folder)


def compare_on_branches(parity, polygraphy, folder):
    model = os.path.join(folder, "branches.onnx")
    onnx.save(branches_model(), model)
    script = os.path.join(folder, "check_planted.sh")
    with open(script, "w") as file:
        file.write(f'#!/bin/sh\nif grep -qa {PLANTED} "$1"; then exit 1; fi\nexit 0\n')
    os.chmod(script, 0o755)
    print(f"branches model: {len(onnx.load(model).graph.node)} nodes, 200 branches meeting in one Concat")
    for name, command in (("polygraphy", [polygraphy]), ("parity", [parity]),
                          ("parity --reduce-neighbourhood", [parity, "--reduce-neighbourhood"])):
        output = f"{name.split()[0]}{'_neighbourhood' if len(command) > 1 else ''}_branches.onnx"
        seconds = timed([command[0], "debug", "reduce", *command[1:], model, "-o", output, "--check", script,
                         "polygraphy_debug.onnx"], folder)
        print(f"{name + ' (check script)':44s} {seconds:8.2f} s   reduced to "
              f"{reduced_nodes(os.path.join(folder, output))} node(s)")


if __name__ == "__main__":
    main()
