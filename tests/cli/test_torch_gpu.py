"""`parity run --torch --torch-device cuda`: the conv + attention block (torch_block_models.py) on a GPU at
fp32 (TF32 off), TF32 on, fp16 and bf16 (cast and autocast) and compiled, each compared with eager fp32
on the CPU; each one's error against fp32 is printed (run with -s to see the table) and held within a
bound its precision explains. fp32 on the GPU also against ONNX Runtime and the reference interpreter on
the CPU, when this Python has onnx to export with.

Skipped, with the reason, where this Python's torch sees no CUDA device (CI has none). Needs only a
parity binary ($PARITY_BIN) and python3 with torch: run it on the GPU machine with
    PARITY_BIN=... python3 -m pytest -rs -s tests/cli/test_torch_gpu.py
or, without pytest, python3 tests/cli/test_torch_gpu.py."""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_block_models import export_onnx, write_block_script  # noqa: E402

try:
    import pytest
except ImportError:  # run as a script
    pytest = None

NO_CUDA = (f"no CUDA device: torch.cuda.is_available() is false in {sys.executable} (torch {torch.__version__}, "
           f"CUDA build {torch.version.cuda or 'none'})")
SHAPE = "x:[8,3,32,32]"
TIMEOUT = 600

# (label, flags of the GPU runner, bound on the max absolute error against CPU fp32). The block's outputs are
# O(1): fp16 keeps ~3 decimal digits, bf16 ~2, TF32 a 10-bit mantissa in matmuls and convolutions.
CONFIGURATIONS = [
    ("fp32, TF32 off", ["--torch-tf32", "off"], 1e-4),
    ("fp32, TF32 on", ["--torch-tf32", "on"], 2e-2),
    ("fp16 cast", ["--torch-dtype", "fp16"], 2e-2),
    ("bf16 cast", ["--torch-dtype", "bf16"], 2e-1),
    ("fp16 autocast", ["--torch-dtype", "fp16", "--torch-dtype-mode", "autocast"], 2e-2),
    ("bf16 autocast", ["--torch-dtype", "bf16", "--torch-dtype-mode", "autocast"], 2e-1),
    ("fp32 compiled, TF32 off", ["--torch-tf32", "off", "--torch-compile", "default"], 1e-4),
]


def parity_bin():
    binary = os.environ.get("PARITY_BIN")
    if binary:
        return binary
    return str(Path(__file__).resolve().parents[2] / "build" / "release" / "tools" / "parity" / "parity")


def run(*args):
    completed = subprocess.run([parity_bin(), *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT)
    return completed.returncode, completed.stdout + completed.stderr


def max_abs_error(output):
    """The largest "Absolute Difference ... max=" of the comparison's log."""
    found = re.findall(r"Absolute Difference \| Stats: .*?max=([0-9.e+-]+|nan|inf)", output)
    assert found, output[-3000:]
    return max(float(value) for value in found)


def against_cpu_fp32(script, flags):
    """Runs CPU fp32 eager and the GPU runner with `flags`; returns (exit status, max abs error, log)."""
    gpu = dict(zip(flags[::2], flags[1::2]))
    per_runner = ["--torch-device", "cpu", "--torch-device", "cuda"]
    defaults = {"--torch-dtype": "fp32", "--torch-dtype-mode": "cast", "--torch-tf32": "default",
                "--torch-compile": "none"}
    for flag, value in gpu.items():
        per_runner += [flag, defaults[flag], flag, value]
    status, output = run("run", "--torch", "--torch", "--torch-model-script", script, "--torch-python", sys.executable,
                         *per_runner, "--input-shapes", SHAPE, "--atol", "1", "--rtol", "1")
    return status, max_abs_error(output), output


def check_configuration(script, label, flags, bound):
    status, error, output = against_cpu_fp32(script, flags)
    assert status == 0, output[-3000:]
    assert "device: cuda:0" in output
    print(f"  {label:26} max |error| against CPU fp32: {error:.3e} (bound {bound:g})")
    assert error <= bound, f"{label}: {error} > {bound}\n{output[-3000:]}"
    if "16" in label:
        assert error > 0, f"{label} gave the fp32 outputs exactly: the reduced precision did not run"
    return error


def check_against_onnx(folder, script):
    """GPU fp32 (TF32 off) against ONNX Runtime and the reference interpreter on the CPU, on the export."""
    onnx_path = export_onnx(script, Path(folder) / "block.onnx", "dynamo")
    status, output = run("run", onnx_path, "--torch", "--torch-model-script", script, "--torch-python", sys.executable,
                         "--torch-device", "cuda", "--torch-tf32", "off", "--onnxrt", "--ref", "--atol", "1e-4",
                         "--rtol", "1e-4")
    assert status == 0, output[-3000:]
    print(f"  fp32 cuda vs onnxrt vs ref (ONNX, CPU): max |error| {max_abs_error(output):.3e}")


if pytest is not None:
    pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)

    @pytest.fixture(scope="module")
    def block_script(tmp_path_factory):
        return write_block_script(tmp_path_factory.mktemp("torch_gpu"))

    @pytest.mark.parametrize("label, flags, bound", CONFIGURATIONS, ids=[c[0] for c in CONFIGURATIONS])
    def test_cuda_configuration_against_cpu_fp32(block_script, label, flags, bound):
        check_configuration(block_script, label, flags, bound)

    def test_cuda_fp32_against_onnx_backends(block_script, tmp_path):
        pytest.importorskip("onnx", reason="onnx is not installed: no ONNX export to compare with")
        check_against_onnx(tmp_path, block_script)


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print(f"SKIPPED: {NO_CUDA}")
        sys.exit(0)
    with tempfile.TemporaryDirectory() as folder:
        block = write_block_script(folder)
        print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}")
        for configuration in CONFIGURATIONS:
            check_configuration(block, *configuration)
        check_against_onnx(folder, block)
