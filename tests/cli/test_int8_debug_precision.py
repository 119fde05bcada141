"""`parity debug precision --int8` (docs/debug-precision.md, docs/int8.md): the search over the
quantizer's keep list names the quantized node whose int8 input breaks accuracy, calibrating once;
its keep list, fed back to `parity convert --int8 --keep-fp32 @FILE` and (as nodes_to_exclude) to
ONNX Runtime's quantize_static, brings the int8 model's error under the tolerance, and its ModelOpt
patterns match exactly the nodes named."""

import json
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from exported_models import export
from int8_util import write_calibration_script

WIDTH, BATCH, BATCHES = 16, 4, 8
ATOL = RTOL = 0.05
# Names with regular-expression characters, one a prefix of another: ModelOpt's patterns must
# escape and anchor them.
OUTLIER_READER = "/block.1/reads+outlier"
OUTLIER_READER_NEXT = "/block.1/reads+outlier/next"
# ModelOpt and ONNX Runtime quantize what the quantizer quantizes here: these op types.
QUANTIZED_OPS = ["Conv", "ConvTranspose", "MatMul", "Gemm", "MaxPool", "AveragePool", "GlobalAveragePool"]


def outlier_model(path):
    """x [4,16] -> first (MatMul) -> Relu -> makes_outlier (MatMul: column 0 of its weight times 1000,
    so its output h has one channel 1000 times the others) -> OUTLIER_READER (MatMul reading h, its
    row 0 divided by 1000) -> Relu -> OUTLIER_READER_NEXT (MatMul) -> last (MatMul) -> y.
    Built with onnx.helper: the exporters make no activation with an outlier channel. h's per-tensor
    int8 scale is set by the outlier channel, so the other channels of h quantize to about 0: only
    quantizing OUTLIER_READER's input hurts; every other quantized input is N(0, 1)-like."""
    rng = np.random.default_rng(0)

    def weight(name):
        return (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)

    w = {name: weight(name) for name in ("W0", "W1", "W2", "W3", "W4")}
    w["W1"][:, 0] *= 1000
    w["W2"][0, :] /= 1000
    nodes = [helper.make_node("MatMul", ["x", "W0"], ["a"], name="first"),
             helper.make_node("Relu", ["a"], ["ar"], name="first_relu"),
             helper.make_node("MatMul", ["ar", "W1"], ["h"], name="makes_outlier"),
             helper.make_node("MatMul", ["h", "W2"], ["b"], name=OUTLIER_READER),
             helper.make_node("Relu", ["b"], ["br"], name="second_relu"),
             helper.make_node("MatMul", ["br", "W3"], ["c"], name=OUTLIER_READER_NEXT),
             helper.make_node("MatMul", ["c", "W4"], ["y"], name="last")]
    graph = helper.make_graph(nodes, "outlier", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, WIDTH])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, WIDTH])],
                              [numpy_helper.from_array(value, name) for name, value in w.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def feeds():
    """The batches of the calibration script write_calibration_script writes (same seed)."""
    rng = np.random.default_rng(3)
    return [rng.standard_normal((BATCH, WIDTH)).astype(np.float32) for _ in range(BATCHES)]


def within_tolerance(fp32, int8, inputs=None, input_name="x"):
    """Whether every output of `int8` is within ATOL/RTOL of `fp32` (run's rule: |a - b| <= atol +
    rtol * |b|) on ONNX Runtime, and the largest absolute error."""
    ref, quantized = ort.InferenceSession(str(fp32)), ort.InferenceSession(str(int8))
    ok, worst = True, 0.0
    for x in inputs if inputs is not None else feeds():
        for expected, actual in zip(ref.run(None, {input_name: x}), quantized.run(None, {input_name: x})):
            ok = ok and bool(np.all(np.abs(actual - expected) <= ATOL + RTOL * np.abs(expected)))
            worst = max(worst, float(np.max(np.abs(actual - expected))))
    return ok, worst


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("int8_debug_precision")
    model = outlier_model(folder / "outlier.onnx")
    script = write_calibration_script(folder / "calib.py", BATCHES, batch=BATCH, name="x", shape_tail=(WIDTH,))
    return folder, model, script


def search(run_parity, model, script, folder, *flags):
    keep, ort_list, modelopt, report = (folder / name for name in ("keep.txt", "ort.json", "modelopt.json", "r.json"))
    result = run_parity("debug", "precision", model, "--onnxrt", "--int8", "--calibration-algo", "minmax",
                        "--data-loader-script", script, "--atol", str(ATOL), "--rtol", str(RTOL),
                        "--save-keep-list", keep, "--save-ort-nodes-to-exclude", ort_list,
                        "--save-modelopt-nodes-to-exclude", modelopt, "--report", report, *flags, timeout=300)
    return result, keep, ort_list, modelopt, report


def kept_names(keep_list):
    return [line.split()[0][len("node:"):] for line in keep_list.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("mode", ["bisect", "linear"])
def test_names_the_node_whose_quantized_input_hurts(run_parity, planted, tmp_path, mode):
    _, model, script = planted
    result, keep, ort_list, modelopt, report = search(run_parity, model, script, tmp_path, "--mode", mode)
    assert result.returncode == 0, result.describe()
    assert kept_names(keep) == [OUTLIER_READER]
    # One calibration for the whole search, not one per candidate.
    assert result.output.count("int8: calibrated") == 1, result.output
    assert "Searching 5 quantized node(s)" in result.output
    data = json.loads(report.read_text())
    assert data["precision"] == "int8" and data["outcome"] == "found"
    assert [node["name"] for node in data["kept"]] == [OUTLIER_READER]
    assert "latency_ms" in data
    assert json.loads(ort_list.read_text()) == [OUTLIER_READER]
    patterns = json.loads(modelopt.read_text())
    # ModelOpt's expand_node_names_from_patterns: re.match of each pattern against every node name.
    names = [node.name for node in onnx.load(str(model)).graph.node]
    assert [name for pattern in patterns for name in names if re.match(pattern, name)] == [OUTLIER_READER]


def test_keep_list_fixes_convert_and_quantize_static(run_parity, planted, tmp_path):
    _, model, script = planted
    result, keep, ort_list, _, _ = search(run_parity, model, script, tmp_path)
    assert result.returncode == 0, result.describe()
    calibration = ("--calibration-algo", "minmax", "--data-loader-script", script)
    plain, fixed = tmp_path / "plain.onnx", tmp_path / "fixed.onnx"
    for out, flags in ((plain, ()), (fixed, ("--keep-fp32", f"@{keep}"))):
        converted = run_parity("convert", model, "--int8", *calibration, *flags, "-o", out, timeout=300)
        assert converted.returncode == 0, converted.describe()
    assert not within_tolerance(model, plain)[0]
    ok, worst = within_tolerance(model, fixed)
    assert ok, worst

    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, \
        quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter(feeds())

        def get_next(self):
            x = next(self.batches, None)
            return None if x is None else {"x": x}

    for out, excluded in ((tmp_path / "ort_plain.onnx", []), (tmp_path / "ort_fixed.onnx", json.loads(ort_list.read_text()))):
        # The quantizer's placement (Q/DQ on the inputs of quantized ops, TensorRT's), which the keep list is for:
        # ONNX Runtime also quantizes the outputs of quantized ops unless told not to.
        quantize_static(str(model), str(out), Reader(), quant_format=QuantFormat.QDQ, op_types_to_quantize=QUANTIZED_OPS,
                        per_channel=True, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        nodes_to_exclude=excluded, calibrate_method=CalibrationMethod.MinMax,
                        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True,
                                       "OpTypesToExcludeOutputQuantization": QUANTIZED_OPS})
    assert not within_tolerance(model, tmp_path / "ort_plain.onnx")[0]
    ok, worst = within_tolerance(model, tmp_path / "ort_fixed.onnx")
    assert ok, worst


def test_keep_fp32_entries_and_calibration_cache(run_parity, planted, tmp_path):
    _, model, script = planted
    cache = tmp_path / "c.cache"
    result, keep, ort_list, _, _ = search(run_parity, model, script, tmp_path, "--keep-fp32", "first",
                                          "--calibration-cache", cache)
    assert result.returncode == 0, result.describe()
    assert "Searching 4 quantized node(s)" in result.output
    assert kept_names(keep) == [OUTLIER_READER]
    # The other quantizers need every node to leave unquantized, --keep-fp32's too.
    assert json.loads(ort_list.read_text()) == ["first", OUTLIER_READER]
    assert cache.is_file()
    again, keep_again, _, _, _ = search(run_parity, model, script, tmp_path, "--keep-fp32", "first",
                                        "--calibration-cache", cache)
    assert again.returncode == 0, again.describe()
    assert "int8: calibrated" not in again.output and "from the calibration cache" in again.output
    assert kept_names(keep_again) == [OUTLIER_READER]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_exported_resnet_keep_list_passes(run_parity, tmp_path, exporter):
    """On an exported model: whatever the search names (at a tolerance the fully quantized model
    misses), the keep list makes `convert --int8` pass it, and names only nodes the quantizer quantizes."""
    model = export("resnet", tmp_path / "resnet.onnx", exporter)
    script = tmp_path / "calib.py"
    shape = [d.dim_value or 2 for d in onnx.load(str(model)).graph.input[0].type.tensor_type.shape.dim]
    input_name = onnx.load(str(model)).graph.input[0].name
    write_calibration_script(script, 4, batch=shape[0], name=input_name, shape_tail=tuple(shape[1:]))
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
    plain = tmp_path / "plain.onnx"
    converted = run_parity("convert", model, "--int8", "--calibration-algo", "minmax", "--data-loader-script", script,
                           "-o", plain, timeout=300)
    assert converted.returncode == 0, converted.describe()
    _, worst = within_tolerance(model, plain, inputs, input_name)
    tolerance = worst / 2  # the fully quantized model fails it
    keep = tmp_path / "keep.txt"
    result = run_parity("debug", "precision", model, "--onnxrt", "--int8", "--calibration-algo", "minmax",
                        "--data-loader-script", script, "--atol", str(tolerance), "--rtol", "0",
                        "--save-keep-list", keep, "--latency-runs", "0", timeout=600)
    assert result.returncode == 0, result.describe()
    names = kept_names(keep)
    quantized = {node.name for node in onnx.load(str(model)).graph.node if node.op_type in QUANTIZED_OPS}
    assert names and set(names) <= quantized
    fixed = tmp_path / "fixed.onnx"
    converted = run_parity("convert", model, "--int8", "--calibration-algo", "minmax", "--data-loader-script", script,
                           "--keep-fp32", f"@{keep}", "-o", fixed, timeout=300)
    assert converted.returncode == 0, converted.describe()
    _, fixed_worst = within_tolerance(model, fixed, inputs, input_name)
    assert fixed_worst <= tolerance


def test_bad_input(run_parity, planted, tmp_path):
    _, model, script = planted
    both = run_parity("debug", "precision", model, "--onnxrt", "--int8", "--bf16")
    assert both.returncode != 0 and "--bf16" in both.output and "--int8" in both.output, both.describe()
    no_int8 = run_parity("debug", "precision", model, "--onnxrt", "--save-ort-nodes-to-exclude", tmp_path / "o.json")
    assert no_int8.returncode != 0 and "[E]" in no_int8.output and "need --int8" in no_int8.output, no_int8.describe()
    default_keep = run_parity("debug", "precision", model, "--onnxrt", "--int8", "--no-default-keep")
    assert default_keep.returncode != 0 and "--int8 has no default keep list" in default_keep.output, \
        default_keep.describe()
    quantized = tmp_path / "quantized.onnx"
    converted = run_parity("convert", model, "--int8", "--calibration-algo", "minmax", "--data-loader-script", script,
                           "-o", quantized)
    assert converted.returncode == 0, converted.describe()
    qdq = run_parity("debug", "precision", quantized, "--onnxrt", "--int8", "--data-loader-script", script)
    assert qdq.returncode != 0 and "[E]" in qdq.output and "QuantizeLinear" in qdq.output, qdq.describe()
    assert "Traceback" not in qdq.output


def test_check_command_judges_int8_candidates(run_parity, planted, tmp_path):
    """--check with --int8: each candidate (written to --iter-artifact) is the int8 model; -o saves
    the one with the answer kept, whose kept node reads float32 tensors only."""
    _, model, script = planted
    artifact, keep, fixed = tmp_path / "candidate.onnx", tmp_path / "keep.txt", tmp_path / "fixed.onnx"
    check = tmp_path / "check.py"
    check.write_text(textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import onnx
        from test_int8_debug_precision import within_tolerance
        count = sum(node.op_type == "QuantizeLinear" for node in onnx.load({str(artifact)!r}).graph.node)
        with open({str(tmp_path / "counts.txt")!r}, "a") as log:
            log.write(f"{{count}}\\n")
        sys.exit(0 if within_tolerance({str(model)!r}, {str(artifact)!r})[0] else 1)
        """))
    result = run_parity("debug", "precision", model, "--int8", "--calibration-algo", "minmax",
                        "--data-loader-script", script, "--iter-artifact", artifact, "--save-keep-list", keep,
                        "-o", fixed, "--check", sys.executable, check, timeout=300)
    assert result.returncode == 0, result.describe()
    assert kept_names(keep) == [OUTLIER_READER]
    assert "the check exited with status" in result.output
    # Keep none: every MatMul's activation input quantized; keep all: none.
    assert (tmp_path / "counts.txt").read_text().split()[:2] == ["5", "0"]
    graph = onnx.load(str(fixed)).graph
    producers = {output: node.op_type for node in graph.node for output in node.output}
    (reader,) = [node for node in graph.node if node.name == OUTLIER_READER]
    assert all(producers.get(name) != "DequantizeLinear" for name in reader.input)
    assert sum(node.op_type == "QuantizeLinear" for node in graph.node) == 4  # the other four MatMuls' inputs
    assert within_tolerance(model, fixed)[0]


def test_recalibrate_a_quantized_model(run_parity, planted, tmp_path):
    """--recalibrate: a Q/DQ model is taken back to float (its weights dequantized) and searched as one."""
    _, model, script = planted
    quantized = tmp_path / "quantized.onnx"
    converted = run_parity("convert", model, "--int8", "--calibration-algo", "minmax", "--data-loader-script", script,
                           "-o", quantized)
    assert converted.returncode == 0, converted.describe()
    result, keep, _, _, _ = search(run_parity, quantized, script, tmp_path, "--recalibrate")
    assert result.returncode == 0, result.describe()
    assert kept_names(keep) == [OUTLIER_READER]


def test_model_with_nothing_to_quantize(run_parity, tmp_path):
    model = tmp_path / "relu.onnx"
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    onnx.save(proto, str(model))
    result = run_parity("debug", "precision", model, "--onnxrt", "--int8")
    assert result.returncode != 0 and "[E]" in result.output, result.describe()
    assert "no quantized node left to search" in result.output and "Traceback" not in result.output
