"""`parity convert --int8`: the calibration algorithms against numpy computations written from their
public descriptions (tests/cli/int8_util.py), streaming over several batches, per-channel weights,
TensorRT calibration caches both ways, --keep-fp32, an all-zero activation, and exported models of
both exporters quantized and run on ONNX Runtime."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from exported_models import export
from int8_util import (calibration_data, conv_chain_model, entropy_amax, hex_scale, initializers, read_cache,
                       write_calibration_script)


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    return conv_chain_model(tmp_path_factory.mktemp("int8") / "chain.onnx")


def convert(run_parity, model, out, *flags):
    result = run_parity("convert", model, "--int8", "-o", out, *flags, timeout=300)
    assert result.returncode == 0, result.describe()
    return result


def test_minmax_scale_of_graph_input_is_max_abs_over_all_batches(run_parity, chain, tmp_path):
    # The largest |x| is in the third batch: the scale must cover every batch, not the first.
    script = write_calibration_script(tmp_path / "calib.py", batches=4)
    cache = tmp_path / "c.cache"
    convert(run_parity, chain, tmp_path / "q.onnx", "--data-loader-script", script, "--calibration-algo", "minmax",
            "--calibration-cache", cache)
    header, scales = read_cache(cache)
    assert header == "TRT-8601-MinMaxCalibration"
    expected = max(np.abs(x).max() for x in calibration_data(4)) / 127
    assert scales["x"] == pytest.approx(expected, rel=1e-6)
    inits, _ = initializers(tmp_path / "q.onnx")
    assert inits["x_scale"] == np.float32(scales["x"])


def test_percentile_is_within_one_bin_of_numpy_percentile(run_parity, chain, tmp_path):
    # One batch: the histogram's range is that batch's max, so a bin is max / 2048 wide.
    script = write_calibration_script(tmp_path / "calib.py", batches=1, batch=64, outlier=40.0)
    cache = tmp_path / "c.cache"
    convert(run_parity, chain, tmp_path / "q.onnx", "--data-loader-script", script, "--calibration-algo", "percentile",
            "--percentile", "99.9", "--calibration-cache", cache)
    (x,) = calibration_data(1, batch=64, outlier=40.0)
    a = np.abs(x)
    width = a.max() / 2048
    amax = read_cache(cache)[1]["x"] * 127
    assert np.percentile(a, 99.9) - 1e-6 <= amax <= np.percentile(a, 99.9) + width + 1e-6
    assert amax < 10  # the outlier (40) is clipped


def test_entropy_matches_numpy_entropy_calibration(run_parity, chain, tmp_path):
    script = write_calibration_script(tmp_path / "calib.py", batches=1, batch=64, outlier=25.0)
    cache = tmp_path / "c.cache"
    convert(run_parity, chain, tmp_path / "q.onnx", "--data-loader-script", script, "--calibration-cache", cache)
    header, scales = read_cache(cache)
    assert header == "TRT-8601-EntropyCalibration2"
    (x,) = calibration_data(1, batch=64, outlier=25.0)
    expected = entropy_amax(x)
    assert expected < 25.0 / 2  # the reference clips the outlier: the test can tell entropy from min-max
    assert scales["x"] * 127 == pytest.approx(expected, rel=1e-5)


def test_weights_per_channel_symmetric(run_parity, chain, tmp_path):
    convert(run_parity, chain, tmp_path / "q.onnx", "--calibration-algo", "minmax")
    inits, model = initializers(tmp_path / "q.onnx")
    w = onnx.numpy_helper.to_array(next(i for i in onnx.load(str(chain)).graph.initializer if i.name == "W"))
    scale = np.abs(w).reshape(w.shape[0], -1).max(axis=1) / 127
    np.testing.assert_allclose(inits["W_scale"], scale, rtol=1e-6)
    assert inits["W_quantized"].dtype == np.int8
    np.testing.assert_array_equal(inits["W_quantized"], np.clip(np.rint(w / scale[:, None, None, None]), -127, 127))
    assert not np.any(inits["W_zero_point"])
    dq = next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "W_quantized")
    assert [a.i for a in dq.attribute if a.name == "axis"] == [0]
    # MatMul's weight [channels, 4]: per output column (axis 1).
    m = onnx.numpy_helper.to_array(next(i for i in onnx.load(str(chain)).graph.initializer if i.name == "M"))
    np.testing.assert_allclose(inits["M_scale"], np.abs(m).max(axis=0) / 127, rtol=1e-6)
    # The bias stays float32; every quantized node reads dequantized inputs.
    assert inits["B"].dtype == np.float32
    nodes = {n.name: n for n in model.graph.node}
    assert list(nodes["conv"].input) == ["x_dequantized", "W_dequantized", "B"]
    assert list(nodes["gap"].input) == ["r_dequantized"]
    assert list(nodes["fc"].input) == ["f_dequantized", "M_dequantized"]
    onnx.checker.check_model(model)


def test_hand_written_cache_gives_exactly_its_scales(run_parity, chain, tmp_path):
    cache = tmp_path / "hand.cache"
    known = {"x": 0.0125, "r": 0.03125, "f": 0.007}
    cache.write_text("TRT-8501-MinMaxCalibration\n" + "".join(f"{k}: {hex_scale(v)}\n" for k, v in known.items())
                     + "unused_tensor: 3c010a14\n")
    result = convert(run_parity, chain, tmp_path / "q.onnx", "--calibration-algo", "minmax",
                     "--calibration-cache", cache)
    assert "no calibration" in result.output
    inits, _ = initializers(tmp_path / "q.onnx")
    for name, scale in known.items():
        assert inits[f"{name}_scale"] == np.float32(scale), name


def test_cache_written_then_read_gives_the_same_model(run_parity, chain, tmp_path):
    script = write_calibration_script(tmp_path / "calib.py", batches=3)
    cache = tmp_path / "c.cache"
    convert(run_parity, chain, tmp_path / "a.onnx", "--data-loader-script", script, "--calibration-cache", cache)
    second = convert(run_parity, chain, tmp_path / "b.onnx", "--calibration-cache", cache)
    assert "Calibrating" not in second.output
    a, _ = initializers(tmp_path / "a.onnx")
    b, _ = initializers(tmp_path / "b.onnx")
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])


def test_progress_lines_count_batches_and_tensors(run_parity, chain, tmp_path):
    result = convert(run_parity, chain, tmp_path / "q.onnx", "--iterations", "3")
    assert "Calibrating: 3/3 batches, 3/3 tensors seen" in result.output, result.describe()


def test_keep_fp32_excludes_nodes(run_parity, chain, tmp_path):
    convert(run_parity, chain, tmp_path / "q.onnx", "--keep-fp32", "fc", "op:GlobalAveragePool")
    _, model = initializers(tmp_path / "q.onnx")
    nodes = {n.name: n for n in model.graph.node}
    assert list(nodes["fc"].input) == ["f", "M"]
    assert list(nodes["gap"].input) == ["r"]
    assert nodes["conv"].input[0] == "x_dequantized"


def test_all_zero_activation_gets_scale_one(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "zero.onnx", zero_activation=True)
    result = convert(run_parity, model, tmp_path / "q.onnx", "--calibration-cache", tmp_path / "c.cache")
    assert "'r' was zero in every batch" in result.output, result.describe()
    assert read_cache(tmp_path / "c.cache")[1]["r"] == 1.0
    run = run_parity("run", tmp_path / "q.onnx", "--onnxrt", "--ref", "--validate")
    assert run.returncode == 0, run.describe()


@pytest.fixture(scope="module", params=["torchscript", "dynamo"])
def resnet(request, tmp_path_factory):
    return export("resnet", tmp_path_factory.mktemp(f"resnet_{request.param}") / "model.onnx", request.param)


@pytest.mark.parametrize("algo", ["minmax", "entropy", "percentile"])
def test_exported_resnet_quantized_runs_close_to_float(run_parity, resnet, tmp_path, algo):
    out = tmp_path / "q.onnx"
    name = onnx.load(str(resnet)).graph.input[0].name
    convert(run_parity, resnet, out, "--calibration-algo", algo, "--iterations", "4", "--input-shapes",
            f"{name}:[2,3,32,32]")
    model = onnx.load(str(out))
    onnx.checker.check_model(model)
    quantized = [n for n in model.graph.node if n.op_type == "Conv"]
    assert quantized and all(n.input[0].endswith("_dequantized") and n.input[1].endswith("_dequantized")
                             for n in quantized)
    floats = tmp_path / "float.json"
    run = run_parity("run", resnet, "--onnxrt", "--input-shapes", f"{name}:[2,3,32,32]", "--save-outputs", floats)
    assert run.returncode == 0, run.describe()
    # Quantization error, not a broken graph: the int8 outputs stay within a loose tolerance.
    run = run_parity("run", out, "--onnxrt", "--input-shapes", f"{name}:[2,3,32,32]", "--load-outputs", floats,
                     "--atol", "0.5", "--rtol", "0.5", "--check-error-stat", "mean")
    assert run.returncode == 0, run.describe()


def test_feeds_that_cannot_be_stacked_run_one_at_a_time(run_parity, tmp_path):
    # x [N, 4] -> Reshape to [1, 4] (a batch of one written into the graph) -> MatMul: feeds stacked
    # along N fail to run, so calibration runs them one by one; the scale still covers every feed.
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["flat"], name="reshape"),
         helper.make_node("MatMul", ["flat", "M"], ["y"], name="fc")], "fixed_batch",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [numpy_helper.from_array(np.array([1, 4], np.int64), "shape"),
         numpy_helper.from_array(np.ones((4, 2), np.float32), "M")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "fixed.onnx"))
    script = write_calibration_script(tmp_path / "calib.py", batches=5, batch=1, shape_tail=(4,))
    result = convert(run_parity, tmp_path / "fixed.onnx", tmp_path / "q.onnx", "--data-loader-script", script,
                     "--calibration-algo", "minmax", "--calibration-cache", tmp_path / "c.cache")
    assert "running the feeds one at a time" in result.output, result.describe()
    assert "Calibrating: 5/5 batches" in result.output
    rng = np.random.default_rng(3)
    data = [rng.standard_normal((1, 4)).astype(np.float32) for _ in range(5)]
    assert read_cache(tmp_path / "c.cache")[1]["flat"] == pytest.approx(max(np.abs(d).max() for d in data) / 127,
                                                                         rel=1e-6)


def test_nameless_nodes(run_parity, tmp_path):
    # onnx.helper leaves node names empty unless given: only the quantizable nodes read Q/DQ outputs.
    # A second, unquantized reader of the quantized tensor r must keep reading the float r.
    model = onnx.load(str(conv_chain_model(tmp_path / "named.onnx")))
    model.graph.node.append(helper.make_node("Neg", ["r"], ["r_negated"]))
    model.graph.output.append(helper.make_tensor_value_info("r_negated", TensorProto.FLOAT, None))
    for node in model.graph.node:
        node.name = ""
    onnx.save(model, str(tmp_path / "nameless.onnx"))
    convert(run_parity, tmp_path / "nameless.onnx", tmp_path / "q.onnx", "--calibration-algo", "minmax")
    _, quantized = initializers(tmp_path / "q.onnx")
    inputs = {n.op_type: list(n.input) for n in quantized.graph.node if n.op_type not in ("QuantizeLinear",
                                                                                          "DequantizeLinear")}
    assert inputs["Relu"] == ["c"] and inputs["Flatten"] == ["g"] and inputs["Neg"] == ["r"]
    assert inputs["GlobalAveragePool"] == ["r_dequantized"]
    assert inputs["Conv"][:2] == ["x_dequantized", "W_dequantized"]
    assert inputs["MatMul"] == ["f_dequantized", "M_dequantized"]
