"""Peak memory of a streamed layerwise comparison from the Python API against the CLI's same run.

    PYTHONPATH=build/release/python python bench/python_layerwise_memory.py [--build build/release]
        [--model ../shared/models/ppocrv4_det.onnx] [--shape 1,3,640,640] [--second onnxrt|openvino]

The CLI side is `parity run MODEL --onnxrt --onnxrt (or --openvino) --onnx-outputs mark all
--input-shapes x:[SHAPE]`; the Python side is Comparator.run_layerwise over the same runners, data
loader and tensors (parity.comparator, through the same judge). Each side runs once in its own
process, whose peak resident memory (max RSS) is read from wait4(); the verdicts must agree.
Target: the Python side's peak within 10% of the CLI's. Prints both and the ratio; asserts nothing.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PYTHON_SIDE = r"""
import sys
from parity import constants
from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
from parity.backend.openvino import OpenVINORunner
from parity.common import TensorMetadata
from parity.comparator import Comparator, DataLoader
model, shape, second = sys.argv[1], [int(d) for d in sys.argv[2].split(",")], sys.argv[3]
runners = [OnnxrtRunner(SessionFromOnnx(model)),
           OnnxrtRunner(SessionFromOnnx(model)) if second == "onnxrt" else OpenVINORunner(model)]
data_loader = DataLoader(input_metadata=TensorMetadata().add("x", None, shape))
result = Comparator.run_layerwise(runners, data_loader=data_loader, outputs=constants.MARK_ALL)
print(f"compared {len(result.entries)} tensor(s): {'PASSED' if result else 'FAILED'}")
sys.exit(0 if result else 1)
"""


def peak_rss_mib(command, env):
    """Runs `command` (output discarded but for its last line) and returns (exit code, max RSS in
    MiB, last output line)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    output = process.stdout.read().decode(errors="replace").strip().splitlines()
    _, status, usage = os.wait4(process.pid, 0)
    process.stdout.close()
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024.0, output[-1] if output else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--model", default=os.path.join(os.path.dirname(ROOT), "shared", "models", "ppocrv4_det.onnx"))
    parser.add_argument("--shape", default="1,3,640,640")
    parser.add_argument("--second", choices=["onnxrt", "openvino"], default="onnxrt")
    args = parser.parse_args()

    env = dict(os.environ, NO_COLOR="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(args.build, "python"), env.get("PYTHONPATH")]))
    cli = [os.path.join(args.build, "tools", "parity", "parity"), "run", args.model, "--onnxrt", f"--{args.second}",
           "--onnx-outputs", "mark", "all", "--input-shapes", f"x:[{args.shape}]"]
    python = [sys.executable, "-c", PYTHON_SIDE, args.model, args.shape, args.second]

    cli_code, cli_rss, cli_line = peak_rss_mib(cli, env)
    py_code, py_rss, py_line = peak_rss_mib(python, env)
    print(f"model {os.path.basename(args.model)} x:[{args.shape}], ONNX Runtime vs {args.second}, mark all, streamed")
    print(f"  CLI    : max RSS {cli_rss:8.1f} MiB  exit {cli_code}  | {cli_line}")
    print(f"  Python : max RSS {py_rss:8.1f} MiB  exit {py_code}  | {py_line}")
    print(f"  Python / CLI peak memory: {py_rss / cli_rss:.3f} (target <= 1.10)")
    if cli_code != py_code:
        print("  the verdicts differ")


if __name__ == "__main__":
    main()
