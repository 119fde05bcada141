"""`inspect model --openvino` and `inspect capability` take `--input-shapes` as `run` does, and the
shapes take effect: a GPT-2 exported with dynamic batch and sequence dims is compiled (inspect model)
or partitioned (inspect capability) for the static shapes given."""

import json

import onnx
import pytest

from exported_models import export
from run_util import RUN_TIMEOUT, single_error_line

SHAPE = [2, 5]


@pytest.fixture(scope="session")
def gpt2(tmp_path_factory):
    return export("gpt2", tmp_path_factory.mktemp("input_shapes") / "gpt2.onnx", "torchscript")


def dims(value_info):
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in value_info.type.tensor_type.shape.dim]


def output_shapes(run_parity, model, tmp_path, *flags):
    report = tmp_path / "layers.json"
    run = run_parity("inspect", "model", model, "--openvino", "--json", report, *flags, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    return [shape for layer in json.loads(report.read_text())["layers"] for shape in layer["output_shapes"]]


def test_inspect_model_openvino_compiles_for_the_input_shapes(run_parity, gpt2, tmp_path):
    assert any("?" in shape for shape in output_shapes(run_parity, gpt2, tmp_path))  # dynamic as exported
    shapes = output_shapes(run_parity, gpt2, tmp_path, "--input-shapes", f"input_ids:{SHAPE}".replace(" ", ""))
    assert shapes and not any("?" in shape for shape in shapes), shapes
    assert "[2,5,100]" in [shape.replace(" ", "") for shape in shapes], shapes  # the logits: batch, sequence, vocab


def test_inspect_model_input_shapes_needs_openvino_and_excludes_bounds(run_parity, gpt2):
    run = run_parity("inspect", "model", gpt2, "--input-shapes", "input_ids:[2,5]")
    assert run.returncode == 1 and "give --openvino" in single_error_line(run), run.describe()
    run = run_parity("inspect", "model", gpt2, "--openvino", "--input-shapes", "input_ids:[2,5]",
                     "--ov-min-shapes", "input_ids:[1,1]", "--ov-max-shapes", "input_ids:[4,8]")
    assert run.returncode == 1 and "one or the other" in single_error_line(run), run.describe()


@pytest.mark.parametrize("backend", ["--openvino", "--onnxrt"])
def test_inspect_capability_partitions_the_model_with_the_input_shapes(run_parity, gpt2, tmp_path, backend):
    out = tmp_path / "dumps"
    run = run_parity("inspect", "capability", gpt2, backend, "-o", out, "--input-shapes", "input_ids:[2,5]",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    subgraphs = sorted(out.glob("*.onnx"))
    assert subgraphs, run.describe()
    model = onnx.load(str(subgraphs[0]))
    assert [dims(i) for i in model.graph.input if i.name == "input_ids"] == [SHAPE]
    assert [dims(o) for o in model.graph.output] == [[2, 5, 100]]


def test_inspect_capability_input_shapes_name_an_input(run_parity, gpt2, tmp_path):
    run = run_parity("inspect", "capability", gpt2, "--onnxrt", "-o", tmp_path / "dumps", "--input-shapes",
                     "no_such_input:[2,5]")
    assert run.returncode == 1, run.describe()
    assert "no_such_input" in single_error_line(run), run.describe()
