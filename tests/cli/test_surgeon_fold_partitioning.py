"""`parity surgeon sanitize --fold-constants --partitioning` and
`surgeon sanitize|extract --force-fallback-shape-inference` (--no-onnxruntime-shape-inference:
test_sanitize_onnxruntime_shape_inference.py).

The partitioning model has two constant chains feeding the graph: one folds (Add, Mul), the other
ends in a Gather whose index is out of range, so it fails to evaluate. Without partitioning that
failure folds nothing (Polygraphy's behaviour); 'basic' folds the good chain; 'recursive' also
folds the Neg in front of the failing Gather."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graph_tools_util import assert_one_error


def partially_foldable_model():
    initializers = [numpy_helper.from_array(np.ones((3,), np.float32), "a"),
                    numpy_helper.from_array(np.full((3,), 2, np.float32), "b"),
                    numpy_helper.from_array(np.array([10], np.int64), "idx")]
    nodes = [helper.make_node("Add", ["a", "b"], ["good"], name="good_add"),
             helper.make_node("Mul", ["good", "b"], ["good2"], name="good_mul"),
             helper.make_node("Neg", ["a"], ["neg"], name="bad_neg"),
             helper.make_node("Gather", ["neg", "idx"], ["bad"], name="bad_gather"),
             helper.make_node("Add", ["X", "good2"], ["y0"], name="use_good"),
             helper.make_node("Add", ["y0", "bad"], ["Y"], name="use_bad")]
    graph = helper.make_graph(nodes, "partially_foldable", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("partitioning, kept, warning", [
    (None, ["good_add", "good_mul", "bad_neg", "bad_gather", "use_good", "use_bad"],
     "Inference failed. You may want to try enabling partitioning"),
    ("basic", ["bad_neg", "bad_gather", "use_good", "use_bad"], "Inference failed for subgraph: Folding: ['bad']"),
    ("recursive", ["bad_gather", "use_good", "use_bad"], "Inference failed for subgraph: Folding: ['bad']"),
])
def test_partitioning_decides_what_a_failing_node_keeps_from_folding(run_parity, tmp_path, partitioning, kept,
                                                                     warning):
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(partially_foldable_model(), source)
    flags = ["--partitioning", partitioning] if partitioning else []
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--fold-constants", *flags)
    assert result.returncode == 0, result.describe()
    assert warning in result.output, result.describe()
    assert [node.name for node in onnx.load(str(out)).graph.node] == kept


def test_partitioning_unknown_mode_is_refused(run_parity, tmp_path):
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(partially_foldable_model(), source)
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--fold-constants", "--partitioning", "greedy")
    assert result.returncode != 0
    assert "--partitioning" in result.output and "greedy" in result.output, result.describe()
    assert not out.exists()


def dynamic_chain_model():
    """x [N, 2, H, W] -> Relu -> Neg -> y, no value_info: every dim past the second is dynamic."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["y"])]
    graph = helper.make_graph(nodes, "dynamic_chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "H", "W"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, "H", "W"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def dims(value_info):
    return [dim.dim_param or dim.dim_value for dim in value_info.type.tensor_type.shape.dim]


def test_sanitize_force_fallback_shape_inference_fixes_every_shape_from_one_run(run_parity, tmp_path):
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(dynamic_chain_model(), source)
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--force-fallback-shape-inference", "-v")
    assert result.returncode == 0, result.describe()
    assert "Running fallback shape inference using input metadata" in result.output
    assert "Shape inference completed successfully" not in result.output  # ONNX's is not run
    model = onnx.load(str(out))
    assert dims(model.graph.input[0]) == [1, 2, 1, 1]  # the data loader's size for dynamic dims
    assert dims(model.graph.output[0]) == [1, 2, 1, 1]
    assert [(value.name, dims(value)) for value in model.graph.value_info] == [("r", [1, 2, 1, 1])]


def test_extract_force_fallback_shape_inference_takes_data_loader_shapes(run_parity, tmp_path):
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(dynamic_chain_model(), source)
    result = run_parity("surgeon", "extract", source, "-o", out, "--inputs", "r:auto:auto", "--outputs", "y:auto",
                        "--force-fallback-shape-inference", "--model-input-shapes", "x:[3,2,4,5]", "--seed", "7")
    assert result.returncode == 0, result.describe()
    model = onnx.load(str(out))
    assert [node.op_type for node in model.graph.node] == ["Neg"]
    assert dims(model.graph.input[0]) == [3, 2, 4, 5]
    assert dims(model.graph.output[0]) == [3, 2, 4, 5]


@pytest.mark.parametrize("command", [["surgeon", "sanitize"], ["surgeon", "extract"]])
def test_force_fallback_and_no_shape_inference_exclude_each_other(run_parity, tmp_path, command):
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(dynamic_chain_model(), source)
    result = run_parity(*command, source, "-o", out, "--force-fallback-shape-inference", "--no-shape-inference")
    assert result.returncode != 0
    assert "--no-shape-inference" in result.output, result.describe()
    assert not out.exists()


def test_extract_force_fallback_bad_model_input_shape_names_the_input(run_parity, tmp_path):
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(dynamic_chain_model(), source)
    result = run_parity("surgeon", "extract", source, "-o", out, "--force-fallback-shape-inference",
                        "--model-input-shapes", "z:[1,2,3,4]")
    assert_one_error(result, "'z'")
    assert not out.exists()


def test_folding_options_without_fold_constants_draw_polygraphy_warning(run_parity, tmp_path):
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(partially_foldable_model(), source)
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--partitioning", "basic")
    assert result.returncode == 0, result.describe()
    assert "Argument: '--partitioning' will be ignored since constant folding is not enabled." in result.output
    assert len(onnx.load(str(out)).graph.node) == 6
