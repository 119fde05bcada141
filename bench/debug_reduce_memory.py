"""Peak memory of `parity debug reduce` on a GPT-2-sized export whose weights dominate (issue 38, item 8:
candidates must share the weights, not copy them; target: peak <= 2x the model's size), against
Polygraphy's `debug reduce` with the same --check script and against a plain `parity run` of the same
runners, all measured in the same benchmark run. Prints each peak as a multiple of the model's size
and the ratios.

    python bench/debug_reduce_memory.py [--build build/release] [--size weights] [--exporter torchscript]
                                        [--model MODEL.onnx]

The model: tests/cli/exported_models.py's gpt2 at --size (default "weights": GPT-2's width, two layers,
about 53 M parameters, 211 MB, the shape of the issue's 54 M-parameter export), or --model.

OpenVINO's own need is measured beside them: the peak of its Python API's compile_model(path) less
that of importing openvino (the interpreter and the library): no run with --openvino peaks below it.

Runs, each in its own process, forked from a small launcher (peak = wait4's ru_maxrss: the process's
peak RSS, or a child's it waited for if larger):
  - parity run MODEL --onnxrt --openvino: the floor (both runners hold the model once each)
  - parity debug reduce MODEL --onnxrt --openvino (the issue's command: candidates compared in-process)
  - parity run MODEL --onnxrt --ref and parity debug reduce MODEL --onnxrt --ref: the same without
    OpenVINO (ONNX Runtime against the reference interpreter)
  - parity debug reduce MODEL --check python check_planted.py polygraphy_debug.onnx
  - polygraphy debug reduce MODEL --check python check_planted.py polygraphy_debug.onnx
The check script fails on candidates holding a planted node (a node of the second block's MLP), so
both tools do the same bisection; it maps the candidate rather than reading it, so its own peak
(which wait4 counts) stays below the candidate's size (grep would hold a binary file's whole "line"). Polygraphy's debug reduce has
no in-process check (it always runs a --check command), so the --onnxrt --openvino run has no
Polygraphy twin; the --check runs are side by side.
"""
import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from run_util import peak_rss_bytes  # noqa: E402  (tests/cli is on the path from here)


def peak_rss(command, cwd):
    """Runs `command`; returns (peak RSS in bytes, seconds, exit code, output)."""
    start = time.perf_counter()
    code, output, peak = peak_rss_bytes(command, cwd, timeout=None)
    return peak, time.perf_counter() - start, code, output


def planted_node(model_path):
    import onnx

    nodes = [node.name for node in onnx.load(model_path, load_external_data=False).graph.node]
    for name in nodes:
        if ".1/mlp/" in name or "h_1_mlp" in name or "h.1.mlp" in name:
            return name
    return nodes[len(nodes) * 2 // 3]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--size", default="weights")
    parser.add_argument("--exporter", default="torchscript")
    parser.add_argument("--model", help="an ONNX model instead of the exported gpt2")
    args = parser.parse_args()
    parity = os.path.abspath(os.path.join(args.build, "tools", "parity", "parity"))
    polygraphy = os.path.join(os.path.dirname(sys.executable), "polygraphy")
    with tempfile.TemporaryDirectory() as folder:
        if args.model:
            model = os.path.abspath(args.model)
        else:
            from exported_models import export

            model = str(export("gpt2", os.path.join(folder, "gpt2.onnx"), args.exporter, size=args.size))
        size = os.path.getsize(model)
        planted = planted_node(model)
        script = os.path.join(folder, "check_planted.py")
        with open(script, "w") as file:
            file.write("import mmap, sys\nwith open(sys.argv[1], 'rb') as f:\n"
                       f"    found = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ).find({planted.encode()!r}) >= 0\n"
                       "sys.exit(1 if found else 0)\n")
        print(f"model: {model} ({size / 1e6:.1f} MB), planted node for the check script: '{planted}'")
        check = ["--check", sys.executable, script, "polygraphy_debug.onnx"]
        runs = {
            "parity run --onnxrt --openvino (floor)": [parity, "run", model, "--onnxrt", "--openvino"],
            "parity run --openvino": [parity, "run", model, "--openvino"],
            "python: import openvino": [sys.executable, "-c", "import openvino"],
            "python: openvino compile_model(path)": [
                sys.executable, "-c", f"import openvino; openvino.Core().compile_model({model!r}, 'CPU')"],
            "parity debug reduce --onnxrt --openvino": [
                parity, "debug", "reduce", model, "-o", "parity_in_process.onnx", "--onnxrt", "--openvino"],
            "parity run --onnxrt --ref": [parity, "run", model, "--onnxrt", "--ref"],
            "parity debug reduce --onnxrt --ref": [
                parity, "debug", "reduce", model, "-o", "parity_in_process_ref.onnx", "--onnxrt", "--ref"],
            "parity debug reduce --check": [parity, "debug", "reduce", model, "-o", "parity_check.onnx", *check],
            "polygraphy debug reduce --check": [
                polygraphy, "debug", "reduce", model, "-o", "polygraphy_check.onnx", *check],
        }
        peaks = {}
        for name, command in runs.items():
            peak, seconds, code, output = peak_rss(command, folder)
            # A run that compares ORT with OpenVINO may fail its comparison (exit 1); a reduction must succeed.
            if "reduce" in name and code != 0:
                sys.exit(f"failed ({code}): {' '.join(command)}\n{output[-3000:]}")
            peaks[name] = peak
            print(f"{name:42s} peak {peak / 1e6:8.1f} MB = {peak / size:5.2f}x the model   {seconds:7.2f} s")
        in_process = peaks["parity debug reduce --onnxrt --openvino"]
        print(f"ratio peak/model size, parity debug reduce --onnxrt --openvino: {in_process / size:.2f}x "
              "(target <= 2x)")
        print(f"ratio parity debug reduce --onnxrt --openvino / plain parity run --onnxrt --openvino: "
              f"{in_process / peaks['parity run --onnxrt --openvino (floor)']:.2f}x")
        # OpenVINO needs this much to compile the model at all (its Python API, less the interpreter and
        # the library loaded): a run with --openvino cannot peak below it.
        openvino_floor = peaks["python: openvino compile_model(path)"] - peaks["python: import openvino"]
        print(f"OpenVINO's own floor, compile_model(path) less importing it: {openvino_floor / size:.2f}x the model; "
              f"parity run --openvino: {peaks['parity run --openvino'] / size:.2f}x")
        without_openvino = peaks["parity debug reduce --onnxrt --ref"]
        print(f"without OpenVINO, parity debug reduce --onnxrt --ref: {without_openvino / size:.2f}x the model, "
              f"{without_openvino / peaks['parity run --onnxrt --ref']:.2f}x a plain parity run --onnxrt --ref")
        print(f"ratio parity/polygraphy, debug reduce --check: "
              f"{peaks['parity debug reduce --check'] / peaks['polygraphy debug reduce --check']:.2f}x "
              f"(parity {peaks['parity debug reduce --check'] / size:.2f}x the model, polygraphy "
              f"{peaks['polygraphy debug reduce --check'] / size:.2f}x)")


if __name__ == "__main__":
    main()
