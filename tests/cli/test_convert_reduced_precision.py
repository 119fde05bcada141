"""`parity convert --fp-to-fp16/--fp-to-bf16` with kept nodes: converted models pass ONNX's checker
and run on ref and onnxrt; a tensor between two kept nodes stays float32 (so an intermediate that
overflows float16 stays finite); --keep-fp32 entries (op types, node names, re:, @file) and the
default keep list. The pass itself is unit-tested in tests/unit/test_reduced_precision.cpp."""

import numpy as np
import onnx
from onnx import TensorProto, helper

from graph_tools_util import assert_one_error
from run_util import load_polygraphy_json


def square_root_model(path):
    """x -> square (x*x) -> root (Sqrt) -> shift (+1) -> y. For x = 300 the square, 90000, is
    beyond float16's largest value, 65504, although x and y are not."""
    nodes = [
        helper.make_node("Mul", ["x", "x"], ["squared"], name="square"),
        helper.make_node("Sqrt", ["squared"], ["root"], name="root"),
        helper.make_node("Add", ["root", "one"], ["y"], name="shift"),
    ]
    graph = helper.make_graph(nodes, "square_root", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                              [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def save_inputs(path, **arrays):
    from polygraphy.json import save_json
    save_json([arrays], str(path))
    return path


def convert(run_parity, source, out, *flags):
    result = run_parity("convert", source, "-o", out, *flags, timeout=300)
    assert result.returncode == 0, result.describe()
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    return model, result


def run_outputs(run_parity, model, tmp_path, inputs, *runners):
    """Runs `model` on the runners with the saved inputs; returns {runner: {output: array}}."""
    saved = tmp_path / "outputs.json"
    result = run_parity("run", model, *runners, "--load-inputs", inputs, "--save-outputs", saved,
                        "--atol", "1e9", "--rtol", "1e9", timeout=300)
    assert result.returncode == 0, result.describe()
    found = {}
    for name, iterations in load_polygraphy_json(saved).lst:
        found[name.split("-")[0]] = dict(iterations[0].items())
    assert set(found) == {r.lstrip("-") for r in runners}, found.keys()
    return found


def value_types(inferred):
    """Element type of every value that shape inference typed, graph outputs included."""
    return {v.name: v.type.tensor_type.elem_type for v in list(inferred.graph.value_info) + list(inferred.graph.output)}


def cast_inputs_and_outputs(model):
    return {name for node in model.graph.node if node.op_type == "Cast" for name in (*node.input, *node.output)}


def test_adjacent_kept_nodes_keep_an_overflowing_intermediate_finite_on_ref_and_onnxrt(run_parity, tmp_path):
    source = square_root_model(tmp_path / "square_root.onnx")
    inputs = save_inputs(tmp_path / "inputs.json", x=np.array([300, -300, 2, 1000], np.float32))
    out = tmp_path / "fp16.onnx"
    model, _ = convert(run_parity, source, out, "--fp-to-fp16", "--keep-fp32", "square", "root")
    assert "squared" not in cast_inputs_and_outputs(model)
    for runner, outputs in run_outputs(run_parity, out, tmp_path, inputs, "--ref", "--onnxrt").items():
        y = outputs["y"]
        assert y.dtype == np.float32 and np.all(np.isfinite(y)), (runner, y)
        np.testing.assert_allclose(y, [301, 301, 3, 1001], rtol=1e-3, err_msg=runner)


def test_keeping_only_the_producer_overflows_on_ref(run_parity, tmp_path):
    """The control: the root reads float16, and 90000 becomes infinity at its Cast (ONNX's rule,
    which ref follows; ONNX Runtime may fold the Cast pair away: docs/reduced-precision.md)."""
    source = square_root_model(tmp_path / "square_root.onnx")
    inputs = save_inputs(tmp_path / "inputs.json", x=np.array([300, -300, 2, 1000], np.float32))
    out = tmp_path / "fp16.onnx"
    model, _ = convert(run_parity, source, out, "--fp-to-fp16", "--keep-fp32", "square")
    assert "squared" in cast_inputs_and_outputs(model)
    y = run_outputs(run_parity, out, tmp_path, inputs, "--ref")["ref"]["y"]
    assert np.isinf(y[0]) and np.isfinite(y[2]), y


def test_keep_list_file_with_regex_and_comments(run_parity, examples_dir, tmp_path):
    keep = tmp_path / "keep.txt"
    keep.write_text("# first block and the classifier\nre:^(conv1|bn1)$   # a pattern\n\nnode:fc\n")
    out = tmp_path / "fp16.onnx"
    model, result = convert(run_parity, examples_dir / "small_cnn.onnx", out, "--fp-to-fp16", "--keep-fp32",
                            f"@{keep}", "--no-default-keep")
    assert "3 node(s) kept in float32" in result.output, result.describe()
    inferred = onnx.shape_inference.infer_shapes(model)
    types = value_types(inferred)
    by_name = {n.name: n for n in model.graph.node}
    for kept in ("conv1", "bn1", "fc"):
        assert types[by_name[kept].output[0]] == TensorProto.FLOAT, kept
    # conv1 -> bn1: both kept, nothing cast between them.
    assert by_name["conv1"].output[0] not in cast_inputs_and_outputs(model)
    assert types[by_name["conv2"].output[0]] == TensorProto.FLOAT16
    softmax = next(n for n in model.graph.node if n.op_type == "Softmax")
    assert types[softmax.input[0]] == TensorProto.FLOAT16  # --no-default-keep: Softmax converted


def test_default_list_keeps_softmax(run_parity, examples_dir, tmp_path):
    out = tmp_path / "fp16.onnx"
    model, _ = convert(run_parity, examples_dir / "small_cnn.onnx", out, "--fp-to-fp16")
    inferred = onnx.shape_inference.infer_shapes(model)
    types = value_types(inferred)
    softmax = next(n for n in model.graph.node if n.op_type == "Softmax")
    assert types[softmax.input[0]] == TensorProto.FLOAT
    assert types[softmax.output[0]] == TensorProto.FLOAT


def test_fp_to_bf16_keeps_ops_without_bf16_schema_and_runs_on_ref(run_parity, examples_dir, tmp_path):
    """Conv-11 and MaxPool-12 have no bfloat16 version (small_cnn's opset): they stay float32.
    ONNX Runtime's CPU build has no bfloat16 BatchNormalization, so ref alone runs this one."""
    out = tmp_path / "bf16.onnx"
    model, result = convert(run_parity, examples_dir / "small_cnn.onnx", out, "--fp-to-bf16")
    lines = [line for line in result.lines("[I] ") if "because ONNX defines no bfloat16 version" in line]
    assert len(lines) == 1 and lines[0].endswith("Conv, MaxPool"), result.describe()
    initializers = {t.name: t.data_type for t in model.graph.initializer}
    assert initializers["conv1.weight"] == TensorProto.FLOAT
    assert initializers["fc.weight"] == TensorProto.BFLOAT16
    inputs = save_inputs(tmp_path / "inputs.json", image=np.random.default_rng(0).random((1, 3, 32, 32), np.float32))
    reduced = run_outputs(run_parity, out, tmp_path, inputs, "--ref")["ref"]["probabilities"]
    full = run_outputs(run_parity, examples_dir / "small_cnn.onnx", tmp_path, inputs, "--ref")["ref"]["probabilities"]
    error = np.abs(reduced - full).max()
    assert 0 < error < 5e-2, error


def test_fp_to_bf16_runs_on_onnxrt_with_compute_kept(run_parity, tmp_path):
    """ONNX Runtime 1.30's CPU build has bfloat16 kernels for data movement (Transpose, Identity,
    Cast) and none for arithmetic (MatMul, Add, Relu...): with the MatMul kept in float32, the
    bfloat16 Transpose runs there, and ref and onnxrt agree exactly."""
    rng = np.random.default_rng(1)
    weight = helper.make_tensor("w", TensorProto.FLOAT, [8, 4], rng.standard_normal(32).astype(np.float32))
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], name="flip", perm=[1, 0]),
             helper.make_node("MatMul", ["xt", "w"], ["y"], name="project")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [weight])
    source = tmp_path / "mlp.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(source))
    out = tmp_path / "bf16.onnx"
    model, _ = convert(run_parity, source, out, "--fp-to-bf16", "--keep-fp32", "project")
    assert model.graph.initializer[0].data_type == TensorProto.FLOAT  # read only by the kept MatMul
    assert [n.op_type for n in model.graph.node] == ["Cast", "Transpose", "Cast", "MatMul"]
    inputs = save_inputs(tmp_path / "inputs.json", x=rng.random((8, 2), np.float32))
    outputs = run_outputs(run_parity, out, tmp_path, inputs, "--ref", "--onnxrt")
    np.testing.assert_allclose(outputs["ref"]["y"], outputs["onnxrt"]["y"], rtol=1e-6, atol=1e-6)


def test_unknown_node_in_keep_list_is_one_error(run_parity, examples_dir, tmp_path):
    out = tmp_path / "fp16.onnx"
    keep = tmp_path / "keep.txt"
    keep.write_text("conv1\nno_such_node\n")
    result = run_parity("convert", examples_dir / "small_cnn.onnx", "--fp-to-fp16", "--keep-fp32", f"@{keep}",
                        "-o", out)
    assert_one_error(result, "node 'no_such_node'", f"{keep}:2")
    assert not out.exists()


def test_fp16_and_bf16_together_are_refused(run_parity, examples_dir, tmp_path):
    out = tmp_path / "model.onnx"
    result = run_parity("convert", examples_dir / "small_cnn.onnx", "--fp-to-fp16", "--fp-to-bf16", "-o", out)
    assert result.returncode != 0 and "--fp-to-bf16" in result.output, result.describe()
    assert not out.exists()


def loop_and_scan_model(path):
    """A Loop doubling a carried state 3 times ('double' in its body) and a Scan adding each row
    of x to a running sum ('accumulate' in its body), then y = loop result + scan sum."""
    f = TensorProto.FLOAT
    loop_body = helper.make_graph(
        [helper.make_node("Mul", ["state_in", "two"], ["state_out"], name="double"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going")],
        "loop_body",
        [helper.make_tensor_value_info("iteration", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("state_in", f, [4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("state_out", f, [4])])
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "row"], ["sum_out"], name="accumulate")],
        "scan_body",
        [helper.make_tensor_value_info("sum_in", f, [4]), helper.make_tensor_value_info("row", f, [4])],
        [helper.make_tensor_value_info("sum_out", f, [4])])
    nodes = [
        helper.make_node("Loop", ["trips", "", "start"], ["doubled"], name="repeat", body=loop_body),
        helper.make_node("Scan", ["start", "x"], ["total"], name="rows", body=scan_body, num_scan_inputs=1),
        helper.make_node("Add", ["doubled", "total"], ["y"], name="combine"),
    ]
    graph = helper.make_graph(
        nodes, "loop_scan", [helper.make_tensor_value_info("x", f, [3, 4])],
        [helper.make_tensor_value_info("y", f, [4])],
        [helper.make_tensor("trips", TensorProto.INT64, [], [3]), helper.make_tensor("two", f, [], [2.0]),
         helper.make_tensor("start", f, [4], [1.0, 2.0, 3.0, 4.0])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_loop_and_scan_bodies_with_kept_nodes(run_parity, tmp_path):
    """Converted Loop/Scan: their bodies take and return float16; a kept node inside reads and
    writes float32 through Casts made inside the body. A kept Loop keeps its body float32."""
    source = loop_and_scan_model(tmp_path / "loop_scan.onnx")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    inputs = save_inputs(tmp_path / "inputs.json", x=x)
    expected = np.array([1, 2, 3, 4], np.float32) * 8 + np.array([1, 2, 3, 4], np.float32) + x.sum(axis=0)
    for keep in (["double", "accumulate"], ["repeat", "rows"]):
        out = tmp_path / f"fp16_{keep[0]}.onnx"
        model, _ = convert(run_parity, source, out, "--fp-to-fp16", "--keep-fp32", *keep)
        bodies = {n.name: n.attribute[0].g for n in model.graph.node if n.op_type in ("Loop", "Scan")}
        state_type = bodies["repeat"].output[1].type.tensor_type.elem_type
        kept_loop = keep[0] == "repeat"
        assert state_type == (TensorProto.FLOAT if kept_loop else TensorProto.FLOAT16), keep
        assert any(n.op_type == "Cast" for n in bodies["repeat"].node) != kept_loop, keep
        for runner, outputs in run_outputs(run_parity, out, tmp_path, inputs, "--ref", "--onnxrt").items():
            np.testing.assert_allclose(outputs["y"], expected, rtol=1e-3, err_msg=f"{keep} {runner}")


def test_magika_layer_norm_variance_kept_by_pattern_matches_float32_on_ref(run_parity, tmp_path):
    """magika's decomposed layer norms compute var = E[x^2] - E[x]^2: in float16 on ref the
    subtraction cancels and the top probability collapses; keeping that chain by a pattern brings
    it back (docs/reduced-precision.md, "The reference question")."""
    from graph_tools_util import SHARED_MODELS, shared_feed
    source = SHARED_MODELS / "magika_standard_v3_3.onnx"
    inputs = save_inputs(tmp_path / "inputs.json", **shared_feed("magika_standard_v3_3"))
    full = run_outputs(run_parity, source, tmp_path, inputs, "--ref")["ref"]["target_label"]
    errors = {}
    variance_chain = r"re:LayerNorm_\d+/(truediv(_1)?|Square_1|Sub|Maximum)$"
    for name, keep in (("default", ()), ("kept", ("--keep-fp32", variance_chain))):
        out = tmp_path / f"{name}.onnx"
        convert(run_parity, source, out, "--fp-to-fp16", *keep)
        reduced = run_outputs(run_parity, out, tmp_path, inputs, "--ref")["ref"]["target_label"]
        errors[name] = float(np.abs(reduced - full).max())
    assert errors["default"] > 0.1 and errors["kept"] < 1e-2, errors
