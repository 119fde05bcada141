"""Polygraphy's API examples 01, 02 and 08 (tests/python/examples/), run with parity and with
polygraphy: the same printed results."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent / "examples"


def _run(script, folder, package):
    env = dict(os.environ, PARITY_EXAMPLE_PACKAGE=package)
    process = subprocess.run([sys.executable, str(EXAMPLES / script)], cwd=folder, env=env, capture_output=True,
                             text=True, timeout=300)
    assert process.returncode == 0, process.stdout + process.stderr
    return process.stdout


def _printed(stdout):
    """The example's own lines, without either logger's lines ([I] ..., [W] ...)."""
    return [line for line in stdout.splitlines() if not line.startswith("[")]


def test_api_01_comparing_frameworks(models, tmp_path):
    shutil.copy(models["identity"], tmp_path / "identity.onnx")
    ours = _run("api_01_comparing_frameworks.py", tmp_path, "parity")
    saved = (tmp_path / "inference_results.json").read_text()
    theirs = _run("api_01_comparing_frameworks.py", tmp_path, "polygraphy")
    assert "All outputs matched using quality metrics (PSNR, SNR)" in _printed(ours)
    assert _printed(ours) == _printed(theirs)
    # Parity's results file loads in polygraphy, with OpenVINO's and ONNX Runtime's outputs.
    from polygraphy.comparator import RunResults

    (tmp_path / "parity_results.json").write_text(saved)
    names = list(RunResults.load(str(tmp_path / "parity_results.json")).keys())
    assert names[0].startswith("openvino-runner") and names[1].startswith("onnxrt-runner")


def test_api_02_validating_on_a_dataset(models, tmp_path):
    shutil.copy(models["identity"], tmp_path / "identity.onnx")
    ours = _run("api_02_validating_on_a_dataset.py", tmp_path, "parity")
    theirs = _run("api_02_validating_on_a_dataset.py", tmp_path, "polygraphy")
    assert "Validation succeeded!" in _printed(ours)
    assert _printed(ours) == _printed(theirs)


def test_api_08_run_results_and_saved_inputs(models, tmp_path):
    shutil.copy(models["identity"], tmp_path / "identity.onnx")
    # The example's README makes the files with `polygraphy run identity.onnx --trt --onnxrt`.
    polygraphy = Path(sys.executable).with_name("polygraphy")
    subprocess.run([str(polygraphy), "run", "identity.onnx", "--onnxrt", "--save-inputs", "inputs.json",
                    "--save-outputs", "outputs.json"], cwd=tmp_path, check=True, capture_output=True, timeout=300)
    ours = _run("api_08_working_with_run_results_and_saved_inputs_manually.py", tmp_path, "parity")
    theirs = _run("api_08_working_with_run_results_and_saved_inputs_manually.py", tmp_path, "polygraphy")
    assert any(line.startswith("Input: 'x'") for line in _printed(ours))
    assert any(line.startswith("Output: 'y'") for line in _printed(ours))
    assert _printed(ours) == _printed(theirs)
