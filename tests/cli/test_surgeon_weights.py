"""`parity inspect sparsity`, `surgeon prune`, `surgeon weight-strip` and `surgeon weight-reconstruct`
against Polygraphy's commands of the same names, on Polygraphy's own test models
(../shared/polygraphy/tests/models) and on models built here for the cases those do not cover
(Gemm with transB, Transpose with a perm, Cast and Q/DQ before a weight, Gather and Slice size
thresholds, a plugin op, uint8 and shared weights, ties between magnitudes).

Compared: the report lines, the pruned values (bit for bit), which initializers are stripped and
their doc_string marks, node counts, and that stripped files reconstruct across the two tools.
Known differences, each with its reason, are in KNOWN_DIFFERENCES and docs/graph-tools.md.
"""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import REPO_ROOT
from run_util import polygraphy, single_error_line

POLYGRAPHY_MODELS = (REPO_ROOT / ".." / "shared" / "polygraphy" / "tests" / "models").resolve()
SHARED_MODEL_NAMES = ["matmul", "matmul.fp16", "matmul.bf16", "matmul.bf16.i32data", "conv", "sparse.matmul",
                      "sparse.conv", "transpose_matmul", "qdq_conv"]
BUILT_MODEL_NAMES = ["gemm_transb", "transpose_perm_matmul", "cast_qdq_matmul", "gather_slice_plugin",
                     "shared_and_uint8", "ties"]

# Where Parity deliberately differs from Polygraphy (also listed in docs/graph-tools.md).
KNOWN_DIFFERENCES = {
    # Polygraphy prunes bfloat16 weights at fixed positions (the 2nd and 3rd of each run of 4, since
    # numpy has no bfloat16) and, for int32_data storage, zeroes only one value per run. Parity prunes
    # bfloat16 like float32/float16: the two smallest magnitudes of each run.
    "prune_bf16": ("matmul.bf16", "matmul.bf16.i32data"),
}

RNG = np.random.default_rng(7)


def weights(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def save(graph_nodes, inputs, outputs, initializers, path, opset=17):
    graph = helper.make_graph(graph_nodes, "g", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, path)


def build_model(name, path):
    f32 = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    if name == "gemm_transb":
        # Gemm B with transB=1 runs along axis 1; A is an input; the bias C is stripped (Gemm threshold 1).
        save([helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, name="gemm")],
             [vi("x", f32, [2, 8])], [vi("y", f32, [2, 12])],
             [numpy_helper.from_array(weights(12, 8), "w"), numpy_helper.from_array(weights(12), "c")], path)
    elif name == "transpose_perm_matmul":
        # MatMul's B through Transpose(perm=[1,0]): the weight's axis 1 carries the runs.
        save([helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0], name="t"),
              helper.make_node("MatMul", ["x", "wt"], ["y"], name="mm")],
             [vi("x", f32, [2, 8])], [vi("y", f32, [2, 6])], [numpy_helper.from_array(weights(6, 8), "w")], path)
    elif name == "cast_qdq_matmul":
        # w -> Cast -> MatMul (A side, axis 1) and q -> QuantizeLinear -> DequantizeLinear -> MatMul input 1.
        save([helper.make_node("Cast", ["w"], ["w32"], to=f32, name="cast"),
              helper.make_node("MatMul", ["w32", "x"], ["a"], name="mm0"),
              helper.make_node("QuantizeLinear", ["q", "scale", "zero"], ["q8"], name="quant"),
              helper.make_node("DequantizeLinear", ["q8", "scale", "zero"], ["qf"], name="dequant"),
              helper.make_node("MatMul", ["a", "qf"], ["y"], name="mm1")],
             [vi("x", f32, [8, 4])], [vi("y", f32, [4, 4])],
             [numpy_helper.from_array(weights(4, 8, dtype=np.float16), "w"),
              numpy_helper.from_array(weights(4, 4), "q"),
              numpy_helper.from_array(np.array(0.1, np.float32), "scale"),
              numpy_helper.from_array(np.array(0, np.int8), "zero")], path)
    elif name == "gather_slice_plugin":
        # Gather/Slice data: stripped at 1024 elements and more, not below; Slice's starts/ends never;
        # a custom op's initializer inputs are all stripped.
        i64 = TensorProto.INT64
        save([helper.make_node("Gather", ["big_table", "idx"], ["g0"], name="gather_big"),
              helper.make_node("Gather", ["small_table", "idx"], ["g1"], name="gather_small"),
              helper.make_node("Slice", ["big_slice", "starts", "ends"], ["s0"], name="slice_big"),
              helper.make_node("MyPlugin", ["g0", "plugin_weight"], ["p"], domain="custom", name="plugin"),
              helper.make_node("Add", ["p", "g1"], ["y0"], name="add")],
             [vi("idx", i64, [2])], [vi("y0", f32, None), vi("s0", f32, None)],
             [numpy_helper.from_array(weights(256, 4), "big_table"),
              numpy_helper.from_array(weights(16, 4), "small_table"),
              numpy_helper.from_array(weights(32, 32), "big_slice"),
              numpy_helper.from_array(np.array([0, 0], np.int64), "starts"),
              numpy_helper.from_array(np.array([2, 2], np.int64), "ends"),
              numpy_helper.from_array(weights(4), "plugin_weight")], path)
        model = onnx.load(path)
        model.opset_import.append(helper.make_opsetid("custom", 1))
        onnx.save(model, path)
    elif name == "shared_and_uint8":
        # One weight read by two MatMuls; a uint8 weight is never stripped; a 1-D weight has no axis 1.
        save([helper.make_node("MatMul", ["x", "w"], ["a"], name="mm0"),
              helper.make_node("MatMul", ["a", "w"], ["b"], name="mm1"),
              helper.make_node("Cast", ["u"], ["uf"], to=f32, name="cast"),
              helper.make_node("MatMul", ["b", "uf"], ["y"], name="mm2")],
             [vi("x", f32, [2, 8])], [vi("y", f32, [2, 4])],
             [numpy_helper.from_array(weights(8, 8), "w"),
              numpy_helper.from_array(RNG.integers(0, 255, (8, 4)).astype(np.uint8), "u")], path)
    elif name == "ties":
        # Equal magnitudes, signed zeros and a NaN: Polygraphy takes the first of equal values.
        w = np.array([[1, -1, 1, -1], [2, 0, -0.0, 2], [np.nan, 3, 1, 2], [5, 5, 5, -5]], np.float32).T.copy()
        save([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
             [vi("x", f32, [2, 4])], [vi("y", f32, [2, 4])], [numpy_helper.from_array(w, "w")], path)
    else:
        raise AssertionError(name)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("weight_models")
    paths = {name: POLYGRAPHY_MODELS / f"{name}.onnx" for name in SHARED_MODEL_NAMES}
    for name in BUILT_MODEL_NAMES:
        paths[name] = folder / f"{name}.onnx"
        build_model(name, paths[name])
    return paths


def raw_values(tensor):
    """Values as an array; bfloat16 as its 16-bit patterns (numpy has no bfloat16)."""
    if tensor.data_type == TensorProto.BFLOAT16:
        if tensor.raw_data:
            return np.frombuffer(tensor.raw_data, np.uint16).reshape(tensor.dims)
        return np.array(tensor.int32_data, np.uint16).reshape(tensor.dims)
    return numpy_helper.to_array(tensor)


def magnitudes(tensor):
    values = raw_values(tensor)
    if tensor.data_type == TensorProto.BFLOAT16:
        values = (values.astype(np.uint32) << 16).view(np.float32)
    return np.abs(values.astype(np.float64))


def runs_of_four(values, axis):
    """Every run of 4 consecutive values along `axis`, as rows."""
    moved = np.moveaxis(values, axis, -1)
    return moved.reshape(-1, 4)


def is_2_4_sparse(tensor, axis):
    return all((run == 0).sum() >= 2 for run in runs_of_four(magnitudes(tensor), axis))


def report(output):
    """The [I]/[W] lines both tools print about the weights, in order (trailing spaces dropped)."""
    keys = ("Found: ", "Found sparse tensor", "Found non-sparse tensor", "Skipping tensor", "Checking the sparsity",
            "Pruning ", "Finished", "The following weights", "Beginning weight", "Calling Sparsity")
    lines = [line.rstrip() for line in output.splitlines()]
    return [line for line in lines if line.startswith(("[I] ", "[W] ")) and any(key in line for key in keys)
            and "Runtime" not in line]


def initializers(path):
    return {t.name: t for t in onnx.load(str(path)).graph.initializer}


def test_every_case_is_covered(models):
    assert set(models) == set(SHARED_MODEL_NAMES) | set(BUILT_MODEL_NAMES)
    for path in models.values():
        assert Path(path).is_file(), path


@pytest.mark.parametrize("name", SHARED_MODEL_NAMES + BUILT_MODEL_NAMES)
def test_inspect_sparsity_same_report_as_polygraphy(models, run_parity, name):
    ours = run_parity("inspect", "sparsity", models[name])
    assert ours.returncode == 0, ours.describe()
    code, theirs = polygraphy("inspect", "sparsity", models[name])
    assert report(ours.output) == report(theirs), f"{ours.output}\n---- polygraphy:\n{theirs}"


def test_inspect_sparsity_tells_sparse_from_dense(models, run_parity):
    dense = run_parity("inspect", "sparsity", models["conv"])
    sparse = run_parity("inspect", "sparsity", models["sparse.conv"])
    assert "[W] Found non-sparse tensor: b" in dense.output, dense.describe()
    assert "[I] Found sparse tensor: b" in sparse.output, sparse.describe()


@pytest.mark.parametrize("name", SHARED_MODEL_NAMES + BUILT_MODEL_NAMES)
def test_prune_keeps_the_same_values_as_polygraphy(models, run_parity, tmp_path, name):
    ours_path, theirs_path = tmp_path / "ours.onnx", tmp_path / "theirs.onnx"
    ours = run_parity("surgeon", "prune", models[name], "-o", ours_path)
    assert ours.returncode == 0, ours.describe()
    code, theirs = polygraphy("surgeon", "prune", models[name], "-o", theirs_path)
    assert report(ours.output) == report(theirs), f"{ours.output}\n---- polygraphy:\n{theirs}"
    ours_model, theirs_model = onnx.load(str(ours_path)), onnx.load(str(theirs_path))
    assert len(ours_model.graph.node) == len(theirs_model.graph.node)
    ours_weights, theirs_weights = initializers(ours_path), initializers(theirs_path)
    assert set(ours_weights) == set(theirs_weights)
    for weight_name, tensor in ours_weights.items():
        assert tensor.dims == theirs_weights[weight_name].dims
        assert tensor.data_type == theirs_weights[weight_name].data_type
        if name in KNOWN_DIFFERENCES["prune_bf16"]:
            continue
        np.testing.assert_array_equal(raw_values(tensor), raw_values(theirs_weights[weight_name]),
                                      err_msg=f"{name}: {weight_name}")


@pytest.mark.parametrize("name", KNOWN_DIFFERENCES["prune_bf16"])
def test_prune_bfloat16_keeps_the_two_largest_magnitudes(models, run_parity, tmp_path, name):
    out = tmp_path / "pruned.onnx"
    assert run_parity("surgeon", "prune", models[name], "-o", out).returncode == 0
    (before,) = initializers(models[name]).values()
    (after,) = initializers(out).values()
    assert is_2_4_sparse(after, 0)
    kept = runs_of_four(magnitudes(after), 0)
    largest = np.sort(runs_of_four(magnitudes(before), 0), axis=1)[:, 2:]
    np.testing.assert_array_equal(np.sort(kept, axis=1)[:, 2:], largest)
    assert "TRT_WEIGHTLESS" not in after.doc_string


def test_pruned_model_reads_as_sparse(models, run_parity, tmp_path):
    out = tmp_path / "pruned.onnx"
    pruned = run_parity("surgeon", "prune", models["conv"], "-o", out)
    assert pruned.returncode == 0, pruned.describe()
    assert onnx.load(str(out)).producer_name == "parity surgeon prune"
    assert is_2_4_sparse(initializers(out)["b"], 1)
    code, theirs = polygraphy("inspect", "sparsity", out)
    assert "Found sparse tensor: b" in theirs


def stripped_marks(path):
    """{initializer: doc_string} of the stripped ones, checking they carry no data."""
    marks = {}
    for name, tensor in initializers(path).items():
        if "TRT_WEIGHTLESS" in tensor.doc_string:
            assert tensor.raw_data == b"" and not tensor.external_data, name
            marks[name] = tensor.doc_string
    return marks


@pytest.mark.parametrize("name", SHARED_MODEL_NAMES + BUILT_MODEL_NAMES)
def test_weight_strip_strips_the_same_weights_as_polygraphy(models, run_parity, tmp_path, name):
    ours_path, theirs_path = tmp_path / "ours.onnx", tmp_path / "theirs.onnx"
    ours = run_parity("surgeon", "weight-strip", models[name], "-o", ours_path)
    assert ours.returncode == 0, ours.describe()
    code, theirs = polygraphy("surgeon", "weight-strip", models[name], "-o", theirs_path)
    assert report(ours.output) == report(theirs), f"{ours.output}\n---- polygraphy:\n{theirs}"
    assert stripped_marks(ours_path) == stripped_marks(theirs_path)
    ours_model, theirs_model = onnx.load(str(ours_path)), onnx.load(str(theirs_path))
    assert ours_model.doc_string == theirs_model.doc_string
    assert len(ours_model.graph.node) == len(theirs_model.graph.node)
    for weight_name, tensor in initializers(theirs_path).items():
        ours_tensor = initializers(ours_path)[weight_name]
        assert (ours_tensor.dims, ours_tensor.data_type) == (tensor.dims, tensor.data_type)
        if "TRT_WEIGHTLESS" not in tensor.doc_string:
            np.testing.assert_array_equal(raw_values(ours_tensor), raw_values(tensor))


@pytest.mark.parametrize("name,exclude", [("matmul", "matmul.exclude_list.txt"),
                                          ("sparse.conv", "sparse.conv.exclude_list.txt"),
                                          ("qdq_conv", "qdq_conv.exclude_list.txt"),
                                          ("qdq_conv", "matmul.exclude_list.txt")])
def test_weight_strip_exclude_list_as_polygraphy(models, run_parity, tmp_path, name, exclude):
    exclude_path = POLYGRAPHY_MODELS / exclude
    ours_path, theirs_path = tmp_path / "ours.onnx", tmp_path / "theirs.onnx"
    ours = run_parity("surgeon", "weight-strip", models[name], "-o", ours_path, "--exclude-list", exclude_path)
    assert ours.returncode == 0, ours.describe()
    code, theirs = polygraphy("surgeon", "weight-strip", models[name], "-o", theirs_path, "--exclude-list",
                              exclude_path)
    assert report(ours.output) == report(theirs), f"{ours.output}\n---- polygraphy:\n{theirs}"
    assert stripped_marks(ours_path) == stripped_marks(theirs_path)
    for excluded in exclude_path.read_text().split():
        assert excluded not in stripped_marks(ours_path)


@pytest.mark.parametrize("name", ["matmul.fp16", "conv", "sparse.matmul", "sparse.conv", "transpose_matmul",
                                  "qdq_conv", "gemm_transb", "cast_qdq_matmul", "gather_slice_plugin"])
@pytest.mark.parametrize("stripper,reconstructor", [("polygraphy", "parity"), ("parity", "polygraphy"),
                                                    ("parity", "parity")])
def test_stripped_files_reconstruct_across_tools(models, run_parity, tmp_path, name, stripper, reconstructor):
    stripped, rebuilt = tmp_path / "stripped.onnx", tmp_path / "rebuilt.onnx"

    def tool(which, *args):
        if which == "polygraphy":
            polygraphy("surgeon", *args)
        else:
            run = run_parity("surgeon", *args)
            assert run.returncode == 0, run.describe()

    tool(stripper, "weight-strip", models[name], "-o", stripped)
    marks = stripped_marks(stripped)
    assert marks, "nothing was stripped"
    tool(reconstructor, "weight-reconstruct", stripped, "-o", rebuilt)
    original, result = initializers(models[name]), initializers(rebuilt)
    assert set(result) == set(original)
    sparse_candidates = set()
    code, checked = polygraphy("inspect", "sparsity", rebuilt)
    for weight_name, tensor in result.items():
        before = original[weight_name]
        assert (tensor.dims, tensor.data_type) == (before.dims, before.data_type), weight_name
        values = raw_values(tensor)
        assert values.shape == tuple(before.dims)
        if weight_name not in marks:
            np.testing.assert_array_equal(values, raw_values(before))
        elif marks[weight_name].endswith("SPARSE_2_4"):
            sparse_candidates.add(weight_name)
            assert f"Found sparse tensor: {weight_name}" in checked, checked
        if reconstructor == "parity":
            assert "TRT_WEIGHTLESS" not in tensor.doc_string
    if "sparse" in name:
        assert sparse_candidates, marks


def test_reconstructed_weights_are_random_normal(models, run_parity, tmp_path):
    stripped, first, second = tmp_path / "s.onnx", tmp_path / "a.onnx", tmp_path / "b.onnx"
    assert run_parity("surgeon", "weight-strip", models["conv"], "-o", stripped).returncode == 0
    assert run_parity("surgeon", "weight-reconstruct", stripped, "-o", first).returncode == 0
    assert run_parity("surgeon", "weight-reconstruct", stripped, "-o", second).returncode == 0
    a, b = raw_values(initializers(first)["b"]), raw_values(initializers(second)["b"])
    assert not np.array_equal(a, b)
    assert abs(float(a.mean())) < 0.2 and 0.8 < float(a.std()) < 1.2
    assert "TRT_WEIGHTLESS" not in onnx.load(str(first)).doc_string


# ---- bad input: one clear error, non-zero exit, nothing written ----

@pytest.fixture
def corrupt_model(tmp_path):
    path = tmp_path / "corrupt.onnx"
    path.write_bytes(b"\x08\x07\x12\xff\xff not a model")
    return path


@pytest.mark.parametrize("command", [["inspect", "sparsity"], ["surgeon", "prune"], ["surgeon", "weight-strip"],
                                     ["surgeon", "weight-reconstruct"]])
def test_corrupt_model_is_one_clear_error(run_parity, corrupt_model, tmp_path, command):
    out = tmp_path / "out.onnx"
    args = [*command, corrupt_model] + ([] if command[0] == "inspect" else ["-o", out])
    run = run_parity(*args)
    assert run.returncode != 0, run.describe()
    assert "corrupt.onnx" in single_error_line(run)
    assert not out.exists()


@pytest.mark.parametrize("command", [["prune"], ["weight-strip"], ["weight-reconstruct"]])
def test_unwritable_output_is_one_clear_error(models, run_parity, tmp_path, command):
    model = models["conv"]
    if command == ["weight-reconstruct"]:
        model = POLYGRAPHY_MODELS / "weightless.conv.onnx"
    out = tmp_path / "missing_folder" / "out.onnx"
    run = run_parity("surgeon", *command, model, "-o", out)
    assert run.returncode != 0, run.describe()
    assert "missing_folder" in single_error_line(run)
    assert not out.parent.exists()


def test_missing_exclude_list_is_one_clear_error(models, run_parity, tmp_path):
    out = tmp_path / "out.onnx"
    run = run_parity("surgeon", "weight-strip", models["matmul"], "-o", out, "--exclude-list", tmp_path / "nope.txt")
    assert run.returncode != 0, run.describe()
    assert "nope.txt" in single_error_line(run)
    assert not out.exists()


def test_reconstruct_refuses_a_marked_weight_that_has_data(models, run_parity, tmp_path):
    model = onnx.load(str(models["conv"]))
    model.graph.initializer[0].doc_string = "TRT_WEIGHTLESS/"
    marked, out = tmp_path / "marked.onnx", tmp_path / "out.onnx"
    onnx.save(model, str(marked))
    run = run_parity("surgeon", "weight-reconstruct", marked, "-o", out)
    assert run.returncode != 0, run.describe()
    assert "'b'" in single_error_line(run)
    assert not out.exists()
    code, theirs = polygraphy("surgeon", "weight-reconstruct", marked, "-o", tmp_path / "theirs.onnx", expect=None)
    assert code != 0
