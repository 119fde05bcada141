"""`parity run --int8`: the first runner runs the float model (the reference), the others an int8
Q/DQ model calibrated once from the run's data loader (docs/int8.md); the calibration cache is
written then read; --keep-fp32 on run; exported models of both exporters on ONNX Runtime and OpenVINO."""

import pytest

from exported_models import export
from graph_tools_util import assert_one_error
from int8_util import conv_chain_model, read_cache, write_calibration_script


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    folder = tmp_path_factory.mktemp("int8_run")
    return conv_chain_model(folder / "chain.onnx"), write_calibration_script(folder / "calib.py", batches=4)


def summary(result):
    return [line for line in result.output.splitlines() if "Accuracy Summary" in line]


def test_float_reference_against_int8_openvino_then_cache_reused(run_parity, chain, tmp_path):
    model, script = chain
    cache = tmp_path / "c.cache"
    loose = ("--atol", "1", "--rtol", "0.2")
    first = run_parity("run", model, "--onnxrt", "--openvino", "--int8", "--data-loader-script", script,
                       "--calibration-cache", cache, *loose, timeout=300)
    assert first.returncode == 0, first.describe()
    assert "Calibrating: 4/4 batches" in first.output
    (line,) = summary(first)
    # The first runner is the float reference; the second, on the int8 model, is named so.
    float_name, int8_name = line.split("|")[1].split(" vs. ")
    assert "onnxrt-runner" in float_name and not float_name.strip().endswith("-int8")
    assert "openvino-runner" in int8_name and int8_name.strip().endswith("-int8")
    assert "Passed: 4/4 iterations" in line
    assert read_cache(cache)[0] == "TRT-8601-EntropyCalibration2"
    # The int8 model is not the float one: at the default tolerances the outputs differ.
    strict = run_parity("run", model, "--onnxrt", "--openvino", "--int8", "--data-loader-script", script,
                        "--calibration-cache", cache, timeout=300)
    assert strict.returncode == 1, strict.describe()
    assert "no calibration" in strict.output and "Calibrating" not in strict.output


def test_same_backend_float_against_int8(run_parity, chain):
    model, script = chain
    result = run_parity("run", model, "--onnxrt", "--onnxrt", "--int8", "--data-loader-script", script,
                        "--calibration-algo", "minmax", "--atol", "1", "--rtol", "0.2", timeout=300)
    assert result.returncode == 0, result.describe()
    (line,) = summary(result)
    assert line.split("|")[1].strip().endswith("-int8")


def test_keep_fp32_everything_leaves_the_float_model(run_parity, chain):
    model, script = chain
    result = run_parity("run", model, "--onnxrt", "--onnxrt", "--int8", "--data-loader-script", script,
                        "--keep-fp32", "Conv", "MatMul", "GlobalAveragePool", timeout=300)
    assert result.returncode == 0, result.describe()
    assert "0 node(s) to quantize (3 kept in float32" in result.output


def test_single_runner_runs_int8_against_loaded_outputs(run_parity, chain, tmp_path):
    model, script = chain
    floats = tmp_path / "float.json"
    saved = run_parity("run", model, "--onnxrt", "--data-loader-script", script, "--save-outputs", floats)
    assert saved.returncode == 0, saved.describe()
    result = run_parity("run", model, "--onnxrt", "--int8", "--data-loader-script", script, "--load-outputs", floats,
                        timeout=300)
    assert result.returncode == 1, result.describe()  # int8 differs from the saved float outputs
    loose = run_parity("run", model, "--onnxrt", "--int8", "--data-loader-script", script, "--load-outputs", floats,
                       "--atol", "1", "--rtol", "0.2", timeout=300)
    assert loose.returncode == 0, loose.describe()


def test_int8_flags_need_int8_and_gen_script_refuses(run_parity, chain, tmp_path):
    model, script = chain
    result = run_parity("run", model, "--onnxrt", "--calibration-algo", "minmax")
    assert result.returncode == 1 and "--calibration-algo requires --int8" in result.output, result.describe()
    assert_one_error(run_parity("run", model, "--onnxrt", "--openvino", "--int8", "--gen-script", "-"),
                     "--gen-script", "cannot express --int8")


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_exported_bert_float_onnxrt_against_int8_openvino(run_parity, tmp_path, exporter):
    model = export("bert", tmp_path / "bert.onnx", exporter)
    result = run_parity("run", model, "--onnxrt", "--openvino", "--int8", "--iterations", "3",
                        "--calibration-cache", tmp_path / "c.cache", "--check-error-stat", "mean",
                        "--atol", "0.2", "--rtol", "0.5", timeout=600)
    assert result.returncode == 0, result.describe()
    assert "activation Q/DQ pair(s)" in result.output
    quantized = int(result.output.split("int8: ")[1].split(" node(s) to quantize")[0])
    assert quantized > 0
