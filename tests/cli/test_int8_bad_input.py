"""`parity convert --int8` on bad input: one [E] line naming the file, line, tensor or node, exit 1."""

import textwrap

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graph_tools_util import assert_one_error
from int8_util import conv_chain_model, hex_scale, initializers, write_calibration_script


def convert(run_parity, model, out, *flags):
    return run_parity("convert", model, "--int8", "-o", out, *flags, timeout=300)


def test_cache_of_another_algorithm(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "m.onnx")
    cache = tmp_path / "c.cache"
    cache.write_text(f"TRT-8601-MinMaxCalibration\nx: {hex_scale(0.01)}\n")
    assert_one_error(convert(run_parity, model, tmp_path / "q.onnx", "--calibration-cache", cache),
                     "c.cache:1", "MinMaxCalibration", "--calibration-algo entropy")


def test_cache_of_an_unknown_algorithm(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "m.onnx")
    cache = tmp_path / "c.cache"
    cache.write_text("TRT-8601-LegacyCalibration\n")
    assert_one_error(convert(run_parity, model, tmp_path / "q.onnx", "--calibration-cache", cache),
                     "c.cache:1", "LegacyCalibration")


def test_garbled_cache_line_names_its_number(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "m.onnx")
    cache = tmp_path / "c.cache"
    cache.write_text(f"TRT-8601-EntropyCalibration2\nx: {hex_scale(0.01)}\nr: 3c01zz14\n")
    assert_one_error(convert(run_parity, model, tmp_path / "q.onnx", "--calibration-cache", cache),
                     "c.cache:3", "r: 3c01zz14")


def test_cache_missing_a_tensor(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "m.onnx")
    cache = tmp_path / "c.cache"
    cache.write_text(f"TRT-8601-EntropyCalibration2\nx: {hex_scale(0.01)}\n")
    assert_one_error(convert(run_parity, model, tmp_path / "q.onnx", "--calibration-cache", cache),
                     "c.cache", "'r'")


def test_data_loader_inputs_not_matching_the_model(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "m.onnx")
    script = write_calibration_script(tmp_path / "calib.py", batches=2, name="image")
    assert_one_error(convert(run_parity, model, tmp_path / "q.onnx", "--data-loader-script", script),
                     "image", "model's inputs are x")


def test_tensor_no_batch_reached(run_parity, tmp_path):
    # Every batch is empty (batch size 0): the activations hold no values.
    model = conv_chain_model(tmp_path / "m.onnx")
    script = write_calibration_script(tmp_path / "calib.py", batches=2, batch=0)
    assert_one_error(convert(run_parity, model, tmp_path / "q.onnx", "--data-loader-script", script),
                     "no batch reached tensor 'x'")


def test_model_with_qdq_is_refused_unless_recalibrate(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "m.onnx")
    first = tmp_path / "q.onnx"
    assert convert(run_parity, model, first, "--calibration-algo", "minmax").returncode == 0
    assert_one_error(convert(run_parity, first, tmp_path / "again.onnx"), "already has", "QuantizeLinear",
                     "--recalibrate")
    # --recalibrate: the Q/DQ nodes removed (weights dequantized), then quantized again with new scales.
    cache = tmp_path / "c.cache"
    cache.write_text("TRT-8601-MinMaxCalibration\n" + "".join(f"{t}: {hex_scale(0.5)}\n" for t in "xrf"))
    result = convert(run_parity, first, tmp_path / "again.onnx", "--recalibrate", "--calibration-algo", "minmax",
                     "--calibration-cache", cache)
    assert result.returncode == 0, result.describe()
    inits, model = initializers(tmp_path / "again.onnx")
    assert sum(n.op_type == "QuantizeLinear" for n in model.graph.node) == 3
    assert inits["x_scale"] == np.float32(0.5)
    # The weights went through int8 once: quantizing them again keeps the same int8 values.
    def conv_weight(inits, model):
        conv = next(n for n in model.graph.node if n.name == "conv")
        dq = next(n for n in model.graph.node if n.output[0] == conv.input[1])
        return inits[dq.input[0]]

    first_inits, first_model = initializers(first)
    np.testing.assert_array_equal(conv_weight(inits, model), conv_weight(first_inits, first_model))


def matmul_model(path, opset):
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "M"], ["y"], name="fc")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
                              [numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(4, 2) - 3, "M")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7 if opset > 9 else 4
    onnx.save(model, str(path))
    return path


def test_opset_below_10_is_refused(run_parity, tmp_path):
    model = matmul_model(tmp_path / "old.onnx", 9)
    assert_one_error(convert(run_parity, model, tmp_path / "q.onnx"), "opset 10", "opset 9")


def test_opset_below_13_quantizes_weights_per_tensor(run_parity, tmp_path):
    # Opset 11 has no per-channel DequantizeLinear: one scale for the whole weight, max |w| / 127.
    model = matmul_model(tmp_path / "old.onnx", 11)
    result = convert(run_parity, model, tmp_path / "q.onnx")
    assert result.returncode == 0, result.describe()
    assert "weights are quantized per tensor" in result.output
    inits, quantized = initializers(tmp_path / "q.onnx")
    assert inits["M_scale"].shape == () and inits["M_scale"] == np.float32(4 / 127)
    onnx.checker.check_model(quantized)


def test_percentile_needs_the_percentile_algorithm(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "m.onnx")
    assert_one_error(convert(run_parity, model, tmp_path / "q.onnx", "--percentile", "99.9"),
                     "--percentile", "entropy")
    assert_one_error(convert(run_parity, model, tmp_path / "q.onnx", "--calibration-algo", "percentile",
                             "--percentile", "0"), "--percentile must be in (0, 100]")


def test_keep_fp32_node_matching_nothing(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "m.onnx")
    assert_one_error(convert(run_parity, model, tmp_path / "q.onnx", "--keep-fp32", "node:no_such_node"),
                     "no_such_node")


def test_data_loader_flags_without_int8_or_report_error(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "m.onnx")
    assert_one_error(run_parity("convert", model, "--fp-to-fp16", "--iterations", "4", "-o", tmp_path / "h.onnx"),
                     "--iterations", "--int8", "--report-error")
