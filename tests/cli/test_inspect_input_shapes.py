"""`inspect model --openvino` and `inspect capability` take `--input-shapes` as `run` does, and the
shapes take effect: a GPT-2 exported with dynamic batch and sequence dims is compiled (inspect model)
or partitioned (inspect capability) for the static shapes given."""

import json

import onnx
import pytest
from onnx import TensorProto, helper

from exported_models import export
from run_util import RUN_TIMEOUT, single_error_line

SHAPE = [2, 5]


@pytest.fixture(scope="session")
def gpt2(tmp_path_factory):
    return export("gpt2", tmp_path_factory.mktemp("input_shapes") / "gpt2.onnx", "torchscript")


@pytest.fixture(scope="session")
def gpt2_with_det(gpt2, tmp_path_factory):
    """The GPT-2 export with a float64 determinant of logits @ logits^T as a second output: Det has no OpenVINO
    conversion rule and no float64 kernel in ONNX Runtime's CPU provider, so inspect capability partitions the
    model (a fully supported one is only said to be so, and nothing is written)."""
    model = onnx.load(str(gpt2))
    graph = model.graph
    graph.node.extend([
        helper.make_node("Transpose", ["logits"], ["logits_t"], perm=[0, 2, 1], name="planted_transpose"),
        helper.make_node("MatMul", ["logits", "logits_t"], ["gram"], name="planted_gram"),
        helper.make_node("Cast", ["gram"], ["gram64"], to=TensorProto.DOUBLE, name="planted_cast"),
        helper.make_node("Det", ["gram64"], ["det"], name="planted_det"),
    ])
    graph.output.append(helper.make_tensor_value_info("det", TensorProto.DOUBLE, ["batch"]))
    path = tmp_path_factory.mktemp("input_shapes_det") / "gpt2_det.onnx"
    onnx.save(model, str(path))
    return path


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
def test_inspect_capability_partitions_the_model_with_the_input_shapes(run_parity, gpt2_with_det, tmp_path, backend):
    out = tmp_path / "dumps"
    run = run_parity("inspect", "capability", gpt2_with_det, backend, "-o", out, "--input-shapes", "input_ids:[2,5]",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    subgraphs = sorted(out.glob("*.onnx"))
    assert subgraphs, run.describe()
    models = [onnx.load(str(path)) for path in subgraphs]
    given = [dims(i) for m in models for i in m.graph.input if i.name == "input_ids"]
    assert given and all(d == SHAPE for d in given), given
    outputs = {o.name: dims(o) for m in models for o in m.graph.output}
    assert outputs.get("logits") == [2, 5, 100], outputs  # batch, sequence, vocab: inferred from the shapes given


def test_inspect_capability_input_shapes_name_an_input(run_parity, gpt2, tmp_path):
    run = run_parity("inspect", "capability", gpt2, "--onnxrt", "-o", tmp_path / "dumps", "--input-shapes",
                     "no_such_input:[2,5]")
    assert run.returncode == 1, run.describe()
    assert "no_such_input" in single_error_line(run), run.describe()
