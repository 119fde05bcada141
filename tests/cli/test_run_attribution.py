"""`parity run --attribute`: each compared tensor's local error (its node alone on the runner under test,
fed the reference runner's values) beside the error it inherits, on planted models built here with
onnx.helper (the exporters make no peak detectors or planted kernel differences).

The differences between the runners are real kernel differences, not injected ones, and none goes
through a BLAS (so they hold under every OpenBLAS kernel):
- ReduceSum over float32 products: ONNX Runtime accumulates in float32, the reference interpreter in
  double (its float reductions always do), so ONNX Runtime's sums differ from the reference's in the
  last bits. Two ReduceSums add the same products in permuted orders: the reference's results are
  equal (a double sum of 512 float products rounds to the same float in either order), ONNX Runtime's
  differ by the rounding of its float accumulation; a peak detector Equal(x, MaxPool(x)) over the
  interleaved pairs then flips wherever ONNX Runtime breaks the reference's ties.
- ReduceSum over [1e8, x, -1e8]: float32 accumulation (ONNX Runtime) loses x entirely, the reference
  interpreter in fp64 (--ref-precision fp64) keeps it: one node whose kernel is wrong by up to 1.
"""

import json
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from run_util import RUN_TIMEOUT

K, C = 512, 256
TOLERANCES = ("--atol", "1e-3", "--rtol", "1e-3")


def peak_detector_nodes():
    """X [1, K] -> two float sums of the same products in permuted orders -> interleaved -> Equal(x, MaxPool(x))."""
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((C, K)).astype(np.float32)
    perm = rng.permutation(K)
    nodes = [
        helper.make_node("Gather", ["X", "perm"], ["Xp"], name="permute", axis=1),
        helper.make_node("Mul", ["X", "W"], ["products"], name="products"),
        helper.make_node("Mul", ["Xp", "Wp"], ["products_permuted"], name="products_permuted"),
        helper.make_node("ReduceSum", ["products", "axis1"], ["a"], name="sum", keepdims=0),
        helper.make_node("ReduceSum", ["products_permuted", "axis1"], ["b"], name="sum_permuted", keepdims=0),
        helper.make_node("Unsqueeze", ["a", "axis1"], ["a2"], name="a2"),
        helper.make_node("Unsqueeze", ["b", "axis1"], ["b2"], name="b2"),
        helper.make_node("Concat", ["a2", "b2"], ["pairs"], name="pairs", axis=1),
        helper.make_node("Reshape", ["pairs", "row"], ["x"], name="interleave"),
        helper.make_node("MaxPool", ["x"], ["pooled"], name="pool", kernel_shape=[3], pads=[1, 1], strides=[1]),
        helper.make_node("Equal", ["x", "pooled"], ["peaks"], name="peak_detector"),
    ]
    initializers = [
        numpy_helper.from_array(weights, "W"),
        numpy_helper.from_array(weights[:, perm], "Wp"),
        numpy_helper.from_array(perm.astype(np.int64), "perm"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        numpy_helper.from_array(np.array([1, 1, 2 * C], np.int64), "row"),
    ]
    return nodes, initializers


def save_model(path, nodes, initializers, outputs):
    graph = helper.make_graph(nodes, path.stem, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, K])],
                              outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


@pytest.fixture(scope="session")
def peak_model(tmp_path_factory):
    nodes, initializers = peak_detector_nodes()
    path = tmp_path_factory.mktemp("attribution") / "peaks.onnx"
    return save_model(path, nodes, initializers,
                      [helper.make_tensor_value_info("peaks", TensorProto.BOOL, [1, 1, 2 * C])])


@pytest.fixture(scope="session")
def planted_model(tmp_path_factory):
    """The peak detector, then (after it in topological order) a ReduceSum over [1e8, x, -1e8]."""
    nodes, initializers = peak_detector_nodes()
    nodes += [
        helper.make_node("Slice", ["X", "start", "end", "axis1"], ["x8"], name="take8"),
        helper.make_node("Reshape", ["x8", "column"], ["xc"], name="column_of_x"),
        helper.make_node("Concat", ["big", "xc", "minus_big"], ["rows"], name="rows", axis=1),
        helper.make_node("ReduceSum", ["rows", "axis1"], ["sums"], name="cancelling_sum", keepdims=0),
    ]
    initializers += [
        numpy_helper.from_array(np.array([0], np.int64), "start"),
        numpy_helper.from_array(np.array([8], np.int64), "end"),
        numpy_helper.from_array(np.array([8, 1], np.int64), "column"),
        numpy_helper.from_array(np.full((8, 1), 1e8, np.float32), "big"),
        numpy_helper.from_array(np.full((8, 1), -1e8, np.float32), "minus_big"),
    ]
    path = tmp_path_factory.mktemp("attribution") / "planted.onnx"
    return save_model(path, nodes, initializers,
                      [helper.make_tensor_value_info("peaks", TensorProto.BOOL, [1, 1, 2 * C]),
                       helper.make_tensor_value_info("sums", TensorProto.FLOAT, [8])])


def attribute(run_parity, model, report, *runners):
    run = run_parity("run", model, *runners, "--onnx-outputs", "mark", "all", "--attribute", *TOLERANCES,
                     "--report", report, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    assert not run.crash_markers(), run.describe()
    return run, json.loads(report.read_text())


def test_peak_detector_amplifies_an_introduced_difference(run_parity, peak_model, tmp_path):
    run, report = attribute(run_parity, peak_model, tmp_path / "report.json", "--ref", "--onnxrt")
    # The first tensor over the tolerance is the amplifier: the peak detector's output.
    assert report["layerwise"][0]["first_divergence"]["tensor"] == "peaks", report["layerwise"]
    attribution = report["attribution"]
    by_tensor = {t["tensor"]: t for t in attribution["tensors"]}
    assert set(by_tensor) >= {"Xp", "products", "a", "b", "x", "pooled", "peaks"}
    # The sums introduce the difference (within tolerance) and only they do: the products are exact,
    # and every node after the sums computes exactly what the reference does when fed its inputs.
    assert {t["node"] for t in attribution["top"]} == {"sum", "sum_permuted"}, attribution["top"]
    assert attribution["top"][0]["local"]["abs"] > 0 and attribution["top"][0]["inherited"]["abs"] == 0
    for name in ("Xp", "products", "products_permuted", "a2", "b2", "pairs", "x", "pooled", "peaks"):
        assert by_tensor[name]["local"]["abs"] == 0, by_tensor[name]
    assert attribution["first_local_failure"] is None
    # The Equal is flagged: exact alone, it flips on the inherited last-bit differences.
    flips = attribution["flips"]
    assert [f["node"] for f in flips] == ["peak_detector"], flips
    assert 0 < flips[0]["flipped"] <= 2 * C
    assert flips[0]["inherited"]["abs"] > 0
    assert by_tensor["peaks"]["amplification"] == "inf" or by_tensor["peaks"]["amplification"] > 1e3
    assert "'peak_detector' [Op: Equal] flips" in run.stdout, run.stdout
    assert "No node's local error exceeds the tolerance" in run.stdout
    assert "only inherits its error" in run.stdout


def test_planted_kernel_behind_an_earlier_exceedance_ranks_first(run_parity, planted_model, tmp_path):
    run, report = attribute(run_parity, planted_model, tmp_path / "report.json",
                            "--ref", "--ref-precision", "fp64", "--onnxrt")
    # The peak detector's flip comes first in topological order...
    assert report["layerwise"][0]["first_divergence"]["tensor"] == "peaks", report["layerwise"]
    attribution = report["attribution"]
    # ...but the node that computes differently is the cancelling sum.
    top = attribution["top"][0]
    assert (top["node"], top["op"]) == ("cancelling_sum", "ReduceSum"), attribution["top"]
    assert top["local"]["failed"] is True and top["inherited"]["abs"] == 0
    assert attribution["first_local_failure"]["node"] == "cancelling_sum"
    assert "First node whose local error exceeds the tolerance: 'cancelling_sum' [Op: ReduceSum]" in run.stdout
    assert [f["node"] for f in attribution["flips"]] == ["peak_detector"]


def test_top_lines_name_the_introducers(run_parity, peak_model, tmp_path):
    run, _ = attribute(run_parity, peak_model, tmp_path / "report.json", "--ref", "--onnxrt")
    table = run.stdout[run.stdout.index("Top "):]
    first_row = [line for line in table.splitlines()[2:3]][0].split()
    assert first_row[0] == "1" and first_row[2] == "ReduceSum", table


def test_node_that_cannot_run_alone_is_reported_and_the_rest_attributed(run_parity, tmp_path):
    # A sequence between two nodes: the reference streams no sequence values, so SequenceAt's node
    # cannot be fed and is reported with why; the Relu after it is still attributed.
    nodes = [
        helper.make_node("SequenceConstruct", ["X", "X"], ["seq"], name="make_sequence"),
        helper.make_node("SequenceAt", ["seq", "zero"], ["item"], name="take_item"),
        helper.make_node("Relu", ["item"], ["y"], name="relu"),
    ]
    model = save_model(tmp_path / "sequence.onnx", nodes, [numpy_helper.from_array(np.array(0, np.int64), "zero")],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, K])])
    report = tmp_path / "report.json"
    run = run_parity("run", model, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--attribute",
                     "--report", report, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert not run.crash_markers(), run.describe()
    by_tensor = {t["tensor"]: t for t in json.loads(report.read_text())["attribution"]["tensors"]}
    assert "no value for its input 'seq'" in by_tensor["item"]["not_run"], by_tensor
    assert by_tensor["y"]["local"]["abs"] == 0
    assert "Not attributed: 'item'" in run.stdout


@pytest.mark.parametrize("flags, message", [
    (["--ref", "--onnxrt"], "--attribute needs every tensor compared"),
    (["--ref", "--onnxrt", "--onnxrt", "--onnx-outputs", "mark", "all"], "--attribute compares two live runners"),
    (["--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--compare-func", "distance"],
     "--attribute measures errors as the `simple` comparison does"),
])
def test_refused_without_what_it_needs(run_parity, peak_model, flags, message):
    run = run_parity("run", peak_model, *flags, "--attribute", timeout=RUN_TIMEOUT)
    assert run.returncode != 0
    assert message in run.output, run.describe()
    assert not run.crash_markers()


def test_openvino_fused_layer_runs_its_onnx_nodes_together(run_parity, examples_dir, tmp_path):
    """--ov-outputs mark fused at bf16: relu1_out is written by one Convolution layer covering conv1, bn1 and
    relu1, so those three nodes are recompiled together (with the same precision) to give its local error."""
    report = tmp_path / "report.json"
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--openvino", "--ov-precision", "bf16",
                     "--ov-outputs", "mark", "fused", "--attribute", "--report", report, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    assert not run.crash_markers(), run.describe()
    by_tensor = {t["tensor"]: t for t in json.loads(report.read_text())["attribution"]["tensors"]}
    relu1 = by_tensor["relu1_out"]
    assert relu1["covering"] == ["conv1", "bn1", "relu1"], relu1
    # Fed the reference's input, the bf16 layer still differs: the error is its own.
    assert relu1["local"]["abs"] > 0 and relu1["inherited"]["abs"] == 0, relu1
    # A layer after it inherits relu1_out's error.
    assert by_tensor["pool1_out"]["inherited"]["abs"] == pytest.approx(relu1["total"]["abs"])
    assert "covering" not in by_tensor["pool1_out"] or len(by_tensor["pool1_out"]["covering"]) > 1


def test_openvino_f32_nodes_alone_agree_with_the_reference(run_parity, examples_dir, tmp_path):
    report = tmp_path / "report.json"
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--openvino", "--ov-precision", "f32",
                     "--onnx-outputs", "mark", "all", "--attribute", "--report", report, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    attribution = json.loads(report.read_text())["attribution"]
    assert attribution["first_local_failure"] is None
    assert all(t["local"] is not None for t in attribution["tensors"]), attribution["tensors"]


def test_memory_budget_bounds_the_batches_and_keeps_the_result(run_parity, planted_model, tmp_path):
    """--layerwise-memory 0: the reference's values all go through the spill file and every node runs in a
    batch of its own; the local errors are those of the run that holds everything in memory."""
    runners = ("--ref", "--ref-precision", "fp64", "--onnxrt")
    _, held = attribute(run_parity, planted_model, tmp_path / "held.json", *runners)
    _, filed = attribute(run_parity, planted_model, tmp_path / "filed.json", *runners, "--layerwise-memory", "0")
    assert held["attribution"]["batches"] == 1
    tensors = filed["attribution"]["tensors"]
    assert filed["attribution"]["batches"] == len({t["node"] for t in tensors}) > 1
    assert filed["layerwise"][0]["spilled_bytes"] > 0
    assert [(t["tensor"], t["local"]) for t in tensors] == [(t["tensor"], t["local"])
                                                            for t in held["attribution"]["tensors"]]


def test_weights_in_an_external_file_reach_the_single_nodes(run_parity, peak_model, tmp_path):
    """The batch models copy the initializers as the model holds them (weights left in their file), so a
    Mul run alone reads its weights from the model's external data file, from another working folder."""
    folder = tmp_path / "external"
    folder.mkdir()
    model = onnx.load(str(peak_model))
    onnx.save(model, str(folder / "peaks.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=4096)
    assert (folder / "weights.bin").stat().st_size >= 2 * K * C * 4  # both weight matrices are outside
    report = tmp_path / "report.json"
    run = run_parity("run", folder / "peaks.onnx", "--ref", "--onnxrt", "--onnx-outputs", "mark", "all",
                     "--attribute", *TOLERANCES, "--report", report, timeout=RUN_TIMEOUT, cwd=tmp_path)
    assert run.returncode == 1, run.describe()
    attribution = json.loads(report.read_text())["attribution"]
    assert all("not_run" not in t for t in attribution["tensors"]), attribution["tensors"]
    assert attribution["top"][0]["op"] == "ReduceSum"


@pytest.fixture(scope="session")
def overflow_model(tmp_path_factory):
    """X in [0, 1) -> +1 -> x40000 (beyond float16's 65504 for x > 1.6376) -> /40000: in float32 the chain
    gives back X + 1; converted to float16, the Mul overflows to inf and the Div passes the infinities on."""
    nodes = [
        helper.make_node("Add", ["X", "one"], ["shifted"], name="shift"),
        helper.make_node("Mul", ["shifted", "scale"], ["scaled"], name="overflow"),
        helper.make_node("Div", ["scaled", "scale"], ["y"], name="back"),
    ]
    initializers = [numpy_helper.from_array(np.array(1, np.float32), "one"),
                    numpy_helper.from_array(np.array(40000, np.float32), "scale")]
    path = tmp_path_factory.mktemp("attribution") / "overflow.onnx"
    return save_model(path, nodes, initializers, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, K])])


@pytest.mark.parametrize("precision", ["--fp-to-fp16", "--fp-to-bf16"])
def test_reduced_precision_runs_each_node_converted(run_parity, overflow_model, tmp_path, precision):
    """--fp-to-fp16: the first ref runs the float32 model, the second the float16 model (ref computes each
    float16 op as float16 hardware does, rounding every result); each node alone runs converted too, fed the
    reference's values, and is compared with the reference's value rounded to float16 (so rounding its output
    is not its error). The Mul that overflows float16 is the first node over the tolerance alone, the Div after
    it fails only because it is fed infinities. bfloat16 (range up to 3.4e38) has no overflow here: the
    nodes err by the rounding of their inputs and constants, within the tolerance."""
    report_path = tmp_path / "report.json"
    run = run_parity("run", overflow_model, "--ref", "--ref", precision, "--onnx-outputs", "mark", "all",
                     "--attribute", "--atol", "1e-2", "--rtol", "1e-2", "--report", report_path, timeout=RUN_TIMEOUT)
    assert not run.crash_markers(), run.describe()
    attribution = json.loads(report_path.read_text())["attribution"]
    by_tensor = {t["tensor"]: t for t in attribution["tensors"]}
    assert attribution["under_test"].endswith("-fp16" if precision == "--fp-to-fp16" else "-bf16")
    assert set(by_tensor) == {"shifted", "scaled", "y"}
    if precision == "--fp-to-fp16":
        assert run.returncode == 1, run.describe()
        assert attribution["first_local_failure"]["node"] == "overflow", attribution
        assert by_tensor["scaled"]["local"]["abs"] in ("inf", None), by_tensor["scaled"]
        assert by_tensor["scaled"]["inherited"]["abs"] < 1e-2
        assert not by_tensor["shifted"]["local"]["failed"] and by_tensor["shifted"]["local"]["abs"] <= 2 ** -10
        assert "First node whose local error exceeds the tolerance: 'overflow' [Op: Mul]" in run.stdout
    else:
        assert run.returncode == 0, run.describe()
        assert attribution["first_local_failure"] is None, attribution
        # The Mul alone errs by what bfloat16 (8 bits) makes of its inputs: 40000 becomes 39936, -0.16%.
        assert 0 < by_tensor["scaled"]["local"]["rel"] < 1e-2, by_tensor["scaled"]


def test_reduced_precision_refuses_int8(run_parity, overflow_model):
    run = run_parity("run", overflow_model, "--ref", "--ref", "--fp-to-fp16", "--int8", timeout=RUN_TIMEOUT)
    assert run.returncode != 0
    assert "--fp-to-fp16 converts the float32 model the runners under test run: leave out --int8" in run.output, \
        run.describe()
    assert "Calibrat" not in run.output  # refused before anything ran
    assert not run.crash_markers()


def test_int8_runs_each_node_as_its_qdq_version(run_parity, examples_dir, tmp_path):
    """--int8: the runner under test runs the Q/DQ model; each node alone runs its Q/DQ version taken from that
    model (its activation quantized with the calibrated scale, its weight int8), fed the reference's float
    values. The first Conv reads the graph input in both runs, so alone it errs as much as in the whole run;
    the BatchNormalization after it is not quantized and only inherits."""
    report_path = tmp_path / "report.json"
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--onnxrt", "--int8", "--onnx-outputs", "mark",
                     "all", "--attribute", "--atol", "1e-2", "--rtol", "1e-2", "--report", report_path,
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    assert not run.crash_markers(), run.describe()
    attribution = json.loads(report_path.read_text())["attribution"]
    assert attribution["under_test"].endswith("-int8")
    by_tensor = {t["tensor"]: t for t in attribution["tensors"]}
    conv1 = by_tensor["conv1_out"]
    assert conv1["inherited"]["abs"] == 0 and conv1["local"]["abs"] > 1e-3, conv1
    assert conv1["local"]["abs"] == pytest.approx(conv1["total"]["abs"], rel=0.05), conv1
    assert attribution["first_local_failure"]["node"] == "conv1"
    assert by_tensor["bn1_out"]["local"]["abs"] < 1e-5 < by_tensor["bn1_out"]["inherited"]["abs"], by_tensor["bn1_out"]
    assert {t["op"] for t in attribution["top"][:5]} <= {"Conv", "Gemm", "MaxPool"}, attribution["top"]


def test_reduced_precision_does_not_charge_a_backend_that_keeps_float32(run_parity, examples_dir, tmp_path):
    """OpenVINO at f32 computes the float16 model's data-movement ops on float32 values (it drops the Casts
    around them): their outputs are the reference's exact values, not its float16 roundings. Compared with
    whichever of the two is closer, they introduce nothing; the convolutions, on float16 weights, do."""
    report_path = tmp_path / "report.json"
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--openvino", "--ov-precision", "f32",
                     "--fp-to-fp16", "--onnx-outputs", "mark", "all", "--attribute", "--report", report_path,
                     timeout=RUN_TIMEOUT)
    assert not run.crash_markers(), run.describe()
    by_tensor = {t["tensor"]: t for t in json.loads(report_path.read_text())["attribution"]["tensors"]}
    for name in ("relu1_out", "pool1_out", "relu2_out", "pool2_out"):
        assert by_tensor[name]["local"]["abs"] == 0, by_tensor[name]
    assert by_tensor["conv1_out"]["local"]["abs"] > 0 and by_tensor["conv1_out"]["inherited"]["abs"] == 0


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    from exported_models import export

    folder = tmp_path_factory.mktemp("attribution_exported")
    return {(kind, exporter): export(kind, folder / f"{kind}_{exporter}.onnx", exporter)
            for kind in ("bert", "resnet") for exporter in ("torchscript", "dynamo")}


def default_keep_op_types(run_parity):
    """convert's default keep list, as `parity convert --help` prints it."""
    listed = re.search(r"Do not keep the default op types in float32 \(([^;]*);", run_parity("convert", "--help").stdout)
    return set(listed.group(1).split())


@pytest.mark.parametrize("kind, exporter, precision", [
    ("bert", "torchscript", "--int8"), ("bert", "dynamo", "--int8"),
    ("resnet", "torchscript", "--int8"), ("resnet", "dynamo", "--int8"),
    ("bert", "torchscript", "--fp-to-fp16"), ("bert", "dynamo", "--fp-to-fp16"),
])
def test_exported_models_attributed_in_reduced_precision(run_parity, exported, kind, exporter, precision, tmp_path):
    """On exported models every tensor is attributed, and only the nodes the precision changes introduce an
    error of its size: under --int8 the quantized ops (docs/int8.md), under --fp-to-fp16 the converted ones;
    the nodes left in float32 (every other op under --int8, the default keep list under --fp-to-fp16: the
    exports' LayerNormalization and Softmax) agree with the reference alone to float32 rounding."""
    report_path = tmp_path / "report.json"
    run = run_parity("run", exported[(kind, exporter)], "--ref", "--onnxrt", precision, "--onnx-outputs", "mark",
                     "all", "--attribute", "--report", report_path, timeout=RUN_TIMEOUT)
    assert run.returncode in (0, 1) and not run.crash_markers(), run.describe()
    tensors = json.loads(report_path.read_text())["attribution"]["tensors"]
    assert all(t["local"] is not None for t in tensors), [t for t in tensors if t["local"] is None]
    quantized = {"Conv", "MatMul", "Gemm", "MaxPool", "AveragePool", "GlobalAveragePool"}
    kept = default_keep_op_types(run_parity)
    changed = (lambda op: op in quantized) if precision == "--int8" else (lambda op: op not in kept)
    reduced = [t["local"]["abs"] for t in tensors if changed(t["op"])]
    left = {t["tensor"]: t["local"]["abs"] for t in tensors if not changed(t["op"])}
    assert left and max(left.values()) < 1e-5, left
    assert max(reduced) > 1e-4, reduced
