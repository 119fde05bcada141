"""`parity run --torch`: a PyTorch module as a runner beside the ONNX backends, on the block the tests
write (convolution + BatchNorm + attention + MLP, tests/cli/torch_block_models.py), exported by both
ONNX exporters; runs without an ONNX model; the seeds' TorchScript flow with files Polygraphy reads;
--gen-script; every bad input the runner names."""
import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import REPO_ROOT, lines_with_prefix
from run_util import load_polygraphy_json, polygraphy, single_error_line
from torch_block_models import (INPUT_SHAPE, export_onnx, load_block, save_torch_export, save_torchscript,
                                write_block_script)

TIMEOUT = 300
EXPORTERS = ("torchscript", "dynamo")


@pytest.fixture(scope="session")
def block(tmp_path_factory):
    """The script, its ONNX exports by both exporters, its TorchScript and torch.export files."""
    folder = tmp_path_factory.mktemp("torch_block")
    script = write_block_script(folder)
    files = {"folder": folder, "script": script, "pt": save_torchscript(script, folder / "block.pt"),
             "pt2": save_torch_export(script, folder / "block.pt2")}
    for exporter in EXPORTERS:
        files[exporter] = export_onnx(script, folder / f"block_{exporter}.onnx", exporter, output_names=["logits"]
                                      if exporter == "torchscript" else None)
    return files


def passed_pairs(output):
    return [line for line in lines_with_prefix(output, "[I] ") if "PASSED | All outputs matched" in line]


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_torch_agrees_with_every_backend_at_fp32(run_parity, block, exporter):
    """torch vs ref vs onnxrt vs openvino at fp32 (OpenVINO's precision hint set to f32: on a CPU with bf16
    units its default is bf16), each pair within 1e-5: the module and both exports compute the same
    function, and the runner feeds the module the inputs the ONNX runners get."""
    run = run_parity("run", block[exporter], "--torch", "--torch-model-script", block["script"], "--ref", "--onnxrt",
                     "--openvino", "--ov-precision", "f32", "--iterations", "2", timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    summaries = [line for line in lines_with_prefix(run.output, "[I] ") if "Accuracy Summary" in line]
    assert len(summaries) == 3 and all("Passed: 2/2 iterations" in line for line in summaries), run.describe()
    # What ran is logged at activation.
    for line in (f"torch {torch.__version__}", "device: cpu", "precision: fp32", "TF32: not used on the CPU",
                 "torch.compile: off (eager)", "eval() mode, torch.inference_mode()"):
        assert line in run.output, line


def test_torch_differs_from_onnx_when_the_module_changes(run_parity, block, tmp_path):
    """The comparison can fail: a module whose head differs from the exported one's is caught."""
    script = tmp_path / "changed.py"
    script.write_text(block["script"].read_text() + "\n\ndef changed():\n    model = load_model()\n"
                      "    with torch.no_grad():\n        model.head.bias += 0.01\n    return model\n")
    run = run_parity("run", block["dynamo"], "--torch", "--torch-model-script", f"{script}:changed", "--onnxrt",
                     timeout=TIMEOUT)
    assert run.returncode == 1, run.describe()
    assert "FAILED" in run.output


@pytest.mark.parametrize("kind", ["pt", "pt2"])
def test_torchscript_and_torch_export_files(run_parity, block, kind):
    run = run_parity("run", block["dynamo"], "--torch", "--torch-model", block[kind], "--onnxrt", timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert len(passed_pairs(run.output)) == 1
    if kind == "pt2":
        assert "eval(): not applicable to a torch.export module" in run.output


def test_seeds_flow_saved_files_load_in_polygraphy(run_parity, block, tmp_path):
    """The seeds' flow: a TorchScript model.pt and its ONNX export compared, inputs and outputs saved;
    Polygraphy reads both files, and the PyTorch runner's saved outputs are what the module computes on
    the saved inputs."""
    inputs, outputs = tmp_path / "inputs.json", tmp_path / "outputs.json"
    run = run_parity("run", block["torchscript"], "--torch", "--torch-model", block["pt"], "--onnxrt",
                     "--save-inputs", inputs, "--save-outputs", outputs, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    feeds = load_polygraphy_json(inputs)
    results = load_polygraphy_json(outputs)
    names = [name for name, _ in results.items()]
    assert names[0].startswith("pytorch-runner") and names[1].startswith("onnxrt-runner")
    torch_outputs = results[names[0]][0]
    assert list(torch_outputs.keys()) == ["logits"]
    module = torch.jit.load(str(block["pt"])).eval()
    with torch.inference_mode():
        expected = module(torch.from_numpy(feeds[0]["x"])).numpy()
    np.testing.assert_array_equal(torch_outputs["logits"], expected)
    _, text = polygraphy("inspect", "data", outputs, "--show-values")
    assert "pytorch-runner" in text and "logits" in text


def test_without_onnx_two_configurations(run_parity, block):
    """Two PyTorch configurations and no ONNX file: fp32 against bf16 under autocast. The inputs come
    from the script's example_inputs(); bf16 really ran (it fails a 1e-5 comparison) and stays close."""
    common = ["run", "--torch", "--torch", "--torch-model-script", block["script"], "--torch-dtype", "fp32",
              "--torch-dtype", "bf16", "--torch-dtype-mode", "autocast"]
    close = run_parity(*common, "--atol", "0.05", "--rtol", "0.05", timeout=TIMEOUT)
    assert close.returncode == 0, close.describe()
    assert "precision: bf16 under torch.autocast('cpu')" in close.output
    assert f"{{x [dtype=float32, shape={INPUT_SHAPE}]}}" in close.output
    assert "Comparing Output: 'output'" in close.output
    strict = run_parity(*common, timeout=TIMEOUT)
    assert strict.returncode == 1, strict.describe()


def test_without_onnx_input_shapes_and_cast_dtype(run_parity, block):
    run = run_parity("run", "--torch", "--torch", "--torch-model-script", f"{block['script']}:load_two_outputs",
                     "--torch-dtype", "fp32", "--torch-dtype", "fp16", "--input-shapes", "x:[2,3,6,6]", "--atol",
                     "0.05", "--rtol", "0.05", timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "{x [dtype=float32, shape=(2, 3, 6, 6)]}" in run.output
    assert "precision: fp16, a cast copy of the module" in run.output
    assert "Outputs: ['output_0', 'output_1']" in run.output


def test_dict_outputs_named_by_key(run_parity, block, tmp_path):
    """A module returning a dict is matched to the ONNX outputs by key, whatever the export's order."""
    onnx_path = export_onnx(block["script"], tmp_path / "dict.onnx", "torchscript", function="load_dict_outputs",
                            output_names=["logits", "features"])
    import onnx

    model = onnx.load(str(onnx_path))
    model.graph.output.reverse()  # the graph lists features first now
    onnx.save(model, str(onnx_path))
    run = run_parity("run", onnx_path, "--torch", "--torch-model-script", f"{block['script']}:load_dict_outputs",
                     "--onnxrt", timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "Outputs: ['features', 'logits']" in run.output


def test_gen_script_runs(run_parity, block, tmp_path):
    script = tmp_path / "compare.py"
    run = run_parity("run", block["dynamo"], "--torch", "--torch-model-script", f"{block['script']}:load_model",
                     "--onnxrt", "--gen-script", script, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    text = script.read_text()
    assert "ModuleFromScript(" in text and "PytRunner(load_torch, onnx_model=" in text
    completed = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT,
                               env=dict(os.environ, PYTHONPATH=str(REPO_ROOT / "build" / "release" / "python")))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "PASSED | All outputs matched" in completed.stdout + completed.stderr


def test_gen_script_without_onnx_model_runs(run_parity, block, tmp_path):
    script = tmp_path / "configs.py"
    run = run_parity("run", "--torch", "--torch", "--torch-model", block["pt"], "--torch-dtype", "fp32",
                     "--torch-dtype", "bf16", "--input-shapes", "x:[1,3,8,8]", "--atol", "0.05", "--rtol", "0.05",
                     "--gen-script", script, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    text = script.read_text()
    assert "ModuleFromTorchScript(" in text and "dtype='bf16'" in text and "TensorMetadata().add('x'" in text
    completed = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT,
                               env=dict(os.environ, PYTHONPATH=str(REPO_ROOT / "build" / "release" / "python")))
    assert completed.returncode == 0, completed.stdout + completed.stderr


# ---- bad input: one [E] line naming what is wrong, exit 1, no hang ----

BAD_SCRIPT = '''
import os
import torch


class Raises(torch.nn.Module):
    def forward(self, x):
        return check(x)


def check(x):
    raise ValueError("channels do not match: 3 != 4")


class Dies(torch.nn.Module):
    def forward(self, x):
        os.kill(os.getpid(), 9)


def not_a_module():
    return {"weights": 1}


def raises():
    return Raises()


def dies():
    return Dies()
'''


@pytest.fixture(scope="session")
def bad_script(tmp_path_factory):
    path = tmp_path_factory.mktemp("torch_bad") / "bad.py"
    path.write_text(BAD_SCRIPT)
    return path


def test_script_without_the_function(run_parity, block, bad_script):
    error = single_error_line(run_parity("run", block["dynamo"], "--torch", "--torch-model-script",
                                         f"{bad_script}:build", timeout=TIMEOUT))
    assert f"{bad_script} has no function 'build'" in error and "raises" in error


def test_script_default_function_missing(run_parity, block, bad_script):
    error = single_error_line(run_parity("run", block["dynamo"], "--torch", "--torch-model-script", bad_script,
                                         timeout=TIMEOUT))
    assert "has no function 'load_model'" in error


def test_function_returning_a_non_module(run_parity, block, bad_script):
    error = single_error_line(run_parity("run", block["dynamo"], "--torch", "--torch-model-script",
                                         f"{bad_script}:not_a_module", timeout=TIMEOUT))
    assert "not_a_module returned builtins.dict, not a torch.nn.Module" in error


def test_output_count_does_not_match(run_parity, block):
    error = single_error_line(run_parity("run", block["dynamo"], "--torch", "--torch-model-script",
                                         f"{block['script']}:load_two_outputs", timeout=TIMEOUT))
    assert "the module returns 2 tensor(s) but 1 output name(s) were given" in error


def test_dict_keys_do_not_match(run_parity, block):
    error = single_error_line(run_parity("run", block["torchscript"], "--torch", "--torch-model-script",
                                         f"{block['script']}:load_dict_outputs", timeout=TIMEOUT))
    assert "the module returns a dict with keys ['logits', 'features'], which are not the output names ['logits']" \
        in error


def test_forward_that_raises(run_parity, block, bad_script):
    run = run_parity("run", block["dynamo"], "--torch", "--torch-model-script", f"{bad_script}:raises", "--onnxrt",
                     timeout=TIMEOUT)
    error = single_error_line(run)
    assert run.returncode == 1
    assert "forward() raised ValueError: channels do not match: 3 != 4" in error
    assert f"(at {bad_script}:12 in check)" in error


def test_worker_killed_mid_run(run_parity, block, bad_script):
    run = run_parity("run", block["dynamo"], "--torch", "--torch-model-script", f"{bad_script}:dies", timeout=TIMEOUT)
    error = single_error_line(run)
    assert "the Python worker for the PyTorch runner" in error and "SIGKILL" in error


@pytest.mark.skipif(torch.cuda.is_available(), reason="this Python's torch has a CUDA device: a cuda run works here")
def test_cuda_without_a_gpu(run_parity, block):
    error = single_error_line(run_parity("run", block["dynamo"], "--torch", "--torch-model-script", block["script"],
                                         "--torch-device", "cuda:0", timeout=TIMEOUT))
    assert "device 'cuda:0': torch.cuda.is_available() is false" in error


def test_python_without_torch(run_parity, block, tmp_path):
    """An interpreter that cannot import torch (this Python without its site-packages) is named, with
    how to choose another."""
    wrapper = tmp_path / "python-without-torch"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    for flags, env in ((["--torch-python", wrapper], None), ([], dict(os.environ, PARITY_PYTHON=str(wrapper)))):
        error = single_error_line(run_parity("run", block["dynamo"], "--torch", "--torch-model-script",
                                             block["script"], *flags, timeout=TIMEOUT, env=env))
        assert "cannot import torch (ModuleNotFoundError: No module named 'torch')" in error
        assert "$PARITY_PYTHON or --torch-python" in error


def test_python_that_does_not_exist(run_parity, block, tmp_path):
    error = single_error_line(run_parity("run", block["dynamo"], "--torch", "--torch-model-script", block["script"],
                                         "--torch-python", tmp_path / "nowhere" / "python", timeout=TIMEOUT))
    assert "cannot start its Python" in error and "nowhere/python" in error


def test_no_input_metadata(run_parity, block, tmp_path):
    error = single_error_line(run_parity("run", "--torch", "--torch-model", block["pt"], timeout=TIMEOUT))
    assert "no input metadata: give an ONNX model, --input-shapes, or a model script" in error


@pytest.mark.parametrize("flags, message", [
    (["--torch"], "give its model as --torch-model-script"),
    (["--torch", "--torch-model-script", "a.py", "--torch-model", "b.pt"], "either --torch-model-script or"),
    (["--torch", "--torch", "--torch-model", "b.pt", "--torch-dtype", "fp16", "--torch-dtype", "bf16",
      "--torch-dtype", "fp32"], "--torch-dtype was given 3 times for 2 PyTorch runner(s)"),
    (["--torch", "--torch-model", "b.pt", "--torch-tf32", "on"], "TF32 is a CUDA setting"),
    (["--torch", "--torch-model", "b.pt", "--torch-device", "gpu"], "--torch-device 'gpu': choose cpu, cuda"),
    (["--torch-model", "b.pt"], "--torch-model is an option of the PyTorch runner: give --torch"),
])
def test_bad_flags(run_parity, block, flags, message):
    run = run_parity("run", block["dynamo"], *flags, timeout=TIMEOUT)
    assert run.returncode != 0
    assert message in single_error_line(run), run.describe()


def test_compiled_matches_eager(run_parity, block):
    """torch.compile (inductor) on the CPU against eager, no ONNX model: the compiled module runs and agrees."""
    run = run_parity("run", "--torch", "--torch", "--torch-model-script", block["script"], "--torch-compile", "none",
                     "--torch-compile", "default", "--atol", "1e-4", "--rtol", "1e-4", timeout=600)
    assert run.returncode == 0, run.describe()
    assert "torch.compile: inductor, mode default" in run.output
    assert "torch.compile: off (eager)" in run.output
    # Compiled or not, the module runs in eval() mode under inference_mode, and the log says so for both.
    assert run.output.count("eval() mode, torch.inference_mode()") == 2, run.describe()


@pytest.mark.parametrize("command", [["debug", "reduce"], ["debug", "precision"]])
def test_commands_that_change_the_onnx_model_refuse_torch(run_parity, block, tmp_path, command):
    """debug reduce and debug precision run cut or changed ONNX models, which the module cannot follow."""
    run = run_parity(*command, block["dynamo"], "-o", tmp_path / "out.onnx", "--torch", "--torch-model", block["pt"],
                     "--onnxrt", timeout=TIMEOUT)
    assert run.returncode != 0
    assert f"{' '.join(command)}: --torch runs PyTorch's own model" in single_error_line(run)
