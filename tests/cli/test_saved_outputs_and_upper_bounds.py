"""Output marking in saved models (`surgeon sanitize --outputs/--exclude-outputs`, `convert --onnx-outputs/
--onnx-exclude-outputs`) and `surgeon sanitize --set-unbounded-dds-upper-bound` (a Min node bounding each
tensor whose value sets a data-dependent size). Every saved model passes ONNX's checker; the bounded one
runs under ONNX Runtime with the bound in effect; bad input is one error and no output file."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from graph_tools_util import assert_one_error, ort_run


def identity_chain_model():
    """x [2,3] -> Identity -> mid -> Identity -> y (only y is a graph output)."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["mid"], name="first"),
         helper.make_node("Identity", ["mid"], ["y"], name="second")],
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def unbounded_range_model(limit_type=TensorProto.INT64):
    """x [4] float -> ReduceMax -> Cast -> limit; Range(0, limit, 1) -> Cast float -> y [?]. The length of
    y is the runtime value of `limit`: an unbounded data-dependent shape."""
    nodes = [
        helper.make_node("ReduceMax", ["x"], ["max"], name="reduce", keepdims=0),
        helper.make_node("Cast", ["max"], ["limit"], name="cast_limit", to=limit_type),
        helper.make_node("Range", ["start", "limit", "delta"], ["range"], name="range"),
        helper.make_node("Cast", ["range"], ["y"], name="cast_out", to=TensorProto.FLOAT),
    ]
    scalar = {TensorProto.INT64: np.int64, TensorProto.INT32: np.int32}[limit_type]
    initializers = [onnx.numpy_helper.from_array(np.array(0, scalar), "start"),
                    onnx.numpy_helper.from_array(np.array(1, scalar), "delta")]
    graph = helper.make_graph(nodes, "unbounded", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def save(model, path):
    onnx.save(model, str(path))
    return path


def saved(path):
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    return model


def outputs_of(model):
    return [(value.name, value.type.tensor_type.elem_type) for value in model.graph.output]


# --- surgeon sanitize --outputs / --exclude-outputs ---

def test_sanitize_outputs_mark_all_keeps_types(run_parity, tmp_path):
    source, out = save(identity_chain_model(), tmp_path / "chain.onnx"), tmp_path / "out.onnx"
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--outputs", "mark", "all")
    assert result.returncode == 0, result.describe()
    assert outputs_of(saved(out)) == [("mid", TensorProto.FLOAT), ("y", TensorProto.FLOAT)]


def test_sanitize_outputs_with_cleanup_drops_the_rest(run_parity, tmp_path):
    source, out = save(identity_chain_model(), tmp_path / "chain.onnx"), tmp_path / "out.onnx"
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--outputs", "mid", "--cleanup")
    assert result.returncode == 0, result.describe()
    model = saved(out)
    assert [node.name for node in model.graph.node] == ["first"]
    assert outputs_of(model) == [("mid", TensorProto.FLOAT)]


def test_sanitize_exclude_outputs_after_mark_all(run_parity, tmp_path):
    source, out = save(identity_chain_model(), tmp_path / "chain.onnx"), tmp_path / "out.onnx"
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--outputs", "mark", "all",
                        "--exclude-outputs", "y")
    assert result.returncode == 0, result.describe()
    assert outputs_of(saved(out)) == [("mid", TensorProto.FLOAT)]


@pytest.mark.parametrize("flags, needles", [
    (["--outputs", "nope"], ["--outputs", "'nope'"]),
    (["--exclude-outputs", "nope"], ["--exclude-outputs", "'nope'"]),
    (["--outputs", "mark"], ["--outputs", "mark all"]),
])
def test_sanitize_bad_output_names_are_one_error(run_parity, tmp_path, flags, needles):
    source, out = save(identity_chain_model(), tmp_path / "chain.onnx"), tmp_path / "out.onnx"
    assert_one_error(run_parity("surgeon", "sanitize", source, "-o", out, *flags), *needles)
    assert not out.exists()


# --- convert --onnx-outputs / --onnx-exclude-outputs ---

def test_convert_onnx_outputs_alone_saves_the_model_with_new_outputs(run_parity, tmp_path):
    source, out = save(identity_chain_model(), tmp_path / "chain.onnx"), tmp_path / "out.onnx"
    result = run_parity("convert", source, "-o", out, "--onnx-outputs", "mark", "all")
    assert result.returncode == 0, result.describe()
    model = saved(out)
    assert outputs_of(model) == [("mid", TensorProto.FLOAT), ("y", TensorProto.FLOAT)]
    assert [node.op_type for node in model.graph.node] == ["Identity", "Identity"]


def test_convert_onnx_outputs_then_fp16(run_parity, tmp_path):
    source, out = save(identity_chain_model(), tmp_path / "chain.onnx"), tmp_path / "out.onnx"
    result = run_parity("convert", source, "-o", out, "--fp-to-fp16", "--onnx-outputs", "mid")
    assert result.returncode == 0, result.describe()
    assert [name for name, _ in outputs_of(saved(out))] == ["mid"]


@pytest.mark.parametrize("flags, needles", [
    (["--onnx-outputs", "nope"], ["--onnx-outputs", "'nope'"]),
    (["--onnx-exclude-outputs", "nope"], ["--onnx-exclude-outputs", "'nope'"]),
    (["--openvino", "--onnx-outputs", "mid"], ["--onnx-outputs"]),
])
def test_convert_bad_output_flags_are_one_error(run_parity, tmp_path, flags, needles):
    source, out = save(identity_chain_model(), tmp_path / "chain.onnx"), tmp_path / "out.onnx"
    assert_one_error(run_parity("convert", source, "-o", out, *flags), *needles)
    assert not out.exists()


# --- surgeon sanitize --set-unbounded-dds-upper-bound ---

def min_nodes(model):
    return [node for node in model.graph.node if node.op_type == "Min"]


def bound_value(model, node):
    [tensor] = [tensor for tensor in model.graph.initializer if tensor.name == node.input[1]]
    return onnx.numpy_helper.to_array(tensor)


def test_upper_bound_inserts_min_after_the_producer_and_bounds_the_size(run_parity, inspect_model, tmp_path):
    source, out = save(unbounded_range_model(), tmp_path / "range.onnx"), tmp_path / "out.onnx"
    listed = inspect_model(source, "--list-unbounded-dds")
    assert "Variable (limit)" in listed.output, listed.describe()
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--set-unbounded-dds-upper-bound", "7")
    assert result.returncode == 0, result.describe()
    assert "Set tensor upper bounds: {'limit': 7}" in result.output
    model = saved(out)
    assert [node.op_type for node in model.graph.node] == ["ReduceMax", "Cast", "Min", "Range", "Cast"]
    [bound] = min_nodes(model)
    assert list(bound.input) == ["limit_copy", "limit_upper_bound"] and list(bound.output) == ["limit"]
    assert bound_value(model, bound).dtype == np.int64 and int(bound_value(model, bound)) == 7
    feed = {"x": np.array([1, 100, 3, 2], np.float32)}
    assert ort_run(source, feed)["y"].shape == (100,)
    assert ort_run(out, feed)["y"].shape == (7,)
    # Bounded now: nothing left to list, and a second run adds no Min.
    assert "Found tensors with unbounded DDS: []" in inspect_model(out, "--list-unbounded-dds").output
    again = tmp_path / "again.onnx"
    assert run_parity("surgeon", "sanitize", out, "-o", again, "--set-unbounded-dds-upper-bound", "5").returncode == 0
    assert len(min_nodes(saved(again))) == 1


def test_upper_bound_per_tensor_wins_and_uses_the_tensor_type(run_parity, tmp_path):
    source, out = save(unbounded_range_model(TensorProto.INT32), tmp_path / "range.onnx"), tmp_path / "out.onnx"
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--set-unbounded-dds-upper-bound", "2000",
                        "limit:4")
    assert result.returncode == 0, result.describe()
    model = saved(out)
    [bound] = min_nodes(model)
    assert bound_value(model, bound).dtype == np.int32 and int(bound_value(model, bound)) == 4
    assert ort_run(out, {"x": np.array([9, 8, 7, 6], np.float32)})["y"].shape == (4,)


def test_upper_bound_named_tensor_that_is_bounded_gets_a_warning(run_parity, tmp_path):
    source, out = save(unbounded_range_model(), tmp_path / "range.onnx"), tmp_path / "out.onnx"
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--set-unbounded-dds-upper-bound", "max:50")
    assert result.returncode == 0, result.describe()
    assert any("'max'" in line for line in result.lines("[W] ")), result.describe()
    model = saved(out)
    [bound] = min_nodes(model)
    assert list(bound.output) == ["max"] and bound_value(model, bound).dtype == np.float32


@pytest.mark.parametrize("bounds, needles", [
    (["nope:5"], ["--set-unbounded-dds-upper-bound", "'nope'"]),
    (["x:5"], ["--set-unbounded-dds-upper-bound", "'x'", "no node produces"]),
    (["abc"], ["--set-unbounded-dds-upper-bound", "'abc'", "integer"]),
    (["limit:"], ["--set-unbounded-dds-upper-bound", "'limit:'", "integer"]),
    (["1.5"], ["--set-unbounded-dds-upper-bound", "'1.5'", "integer"]),
])
def test_upper_bound_bad_input_is_one_error(run_parity, tmp_path, bounds, needles):
    source, out = save(unbounded_range_model(), tmp_path / "range.onnx"), tmp_path / "out.onnx"
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--set-unbounded-dds-upper-bound", *bounds)
    assert_one_error(result, *needles)
    assert not out.exists()


def test_upper_bound_that_does_not_fit_the_type_is_one_error(run_parity, tmp_path):
    source, out = save(unbounded_range_model(TensorProto.INT32), tmp_path / "range.onnx"), tmp_path / "out.onnx"
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--set-unbounded-dds-upper-bound", "5000000000")
    assert_one_error(result, "'limit'", "INT32")
    assert not out.exists()
