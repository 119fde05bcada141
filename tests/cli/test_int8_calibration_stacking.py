"""`parity convert --int8`: calibration stacks feeds along a dynamic batch dimension only where the
model computes each sample on its own. The models are built with onnx.helper: the exported models
(tests/cli/exported_models.py) compute every sample on its own, and a model that mixes the samples of
a batch (a ReduceMean over axis 0) is what this test needs."""

import textwrap

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
import onnx

from int8_util import entropy_amax, initializers, read_cache

MIXING_LINE = "calibration: feeds are run one at a time: tensor '{}' mixes the samples of a batch"


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def feeds(batches, batch, seed, first_scale=1):
    """x ~ N(0, 1), the first feed's times first_scale."""
    rng = np.random.default_rng(seed)
    data = [rng.standard_normal((batch, 4)).astype(np.float32) for _ in range(batches)]
    data[0] *= np.float32(first_scale)
    return data


def write_script(path, batches, batch, seed, first_scale=1):
    # The same numbers as feeds(batches, batch, seed, first_scale).
    path.write_text(textwrap.dedent(f"""\
        import numpy as np

        def load_data():
            rng = np.random.default_rng({seed})
            data = [rng.standard_normal(({batch}, 4)).astype(np.float32) for _ in range({batches})]
            data[0] *= np.float32({first_scale})
            for x in data:
                yield {{"x": x}}
        """))
    return path


def convert(run_parity, model, out, *flags):
    result = run_parity("convert", model, "--int8", "-o", out, *flags, timeout=300)
    assert result.returncode == 0, result.describe()
    return result


def softmax_over_batch(x):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


# Ways of mixing the samples of a batch: the nodes from x [N, 4] to the quantized tensor "c" (a
# MatMul's input), numpy's c of one feed, and the calibrated tensors that mix the samples (the log
# names one of them). In a stack, c reads every feed of the stack.
MIXING = {
    # c = x - mean over the batch: a stack subtracts the mean of all its feeds.
    "reduce_mean": ([helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[0], keepdims=1),
                     helper.make_node("Sub", ["x", "m"], ["c"], name="center")],
                    lambda x: x - x.mean(axis=0, keepdims=True), {"c"}),
    # c = Softmax over the batch: a stack normalizes over all its rows.
    "softmax": ([helper.make_node("Softmax", ["x"], ["c"], name="softmax", axis=0)], softmax_over_batch, {"c"}),
    # c = -x^T x [4, 4] (a MatMul over the transposed batch): a stack sums the products of all its rows.
    # The transposed x (quantized too) is [4, N]: its leading dimension does not grow with a stack.
    "gram": ([helper.make_node("Transpose", ["x"], ["t"], name="transpose", perm=[1, 0]),
              helper.make_node("MatMul", ["t", "x"], ["g"], name="gram"),
              helper.make_node("Neg", ["g"], ["c"], name="neg")],
             lambda x: -(x.T @ x), {"t", "c"}),
}


@pytest.mark.parametrize("mixing", sorted(MIXING))
def test_a_model_that_mixes_the_samples_is_calibrated_feed_by_feed(run_parity, tmp_path, mixing):
    nodes, reference, mixed = MIXING[mixing]
    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        nodes + [helper.make_node("MatMul", ["c", "M"], ["y"], name="fc")], "mixing",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "M")])
    model = save(graph, tmp_path / "mixing.onnx")
    script = write_script(tmp_path / "calib.py", batches=5, batch=2, seed=3)
    result = convert(run_parity, model, tmp_path / "q.onnx", "--data-loader-script", script, "--calibration-algo",
                     "minmax", "-v")
    assert any(MIXING_LINE.format(name) in result.output for name in mixed), result.describe()
    assert "feeds stacked into one inference" not in result.output
    assert "Calibrating: 5/5 batches" in result.output

    data = [x.astype(np.float64) for x in feeds(5, 2, 3)]
    feed_by_feed = max(np.abs(reference(x)).max() for x in data)
    # The test can tell the two apart: the stacked calibration's max |c| is another number.
    assert abs(np.abs(reference(np.concatenate(data))).max() - feed_by_feed) > 0.01 * feed_by_feed
    inits, _ = initializers(tmp_path / "q.onnx")
    assert inits["c_scale"] == pytest.approx(feed_by_feed / 127, rel=1e-5)


def test_a_model_that_keeps_the_samples_apart_still_stacks(run_parity, tmp_path):
    # x [N, 4] -> r = 2x -> MatMul. Five feeds fit one stack: the percentile calibration's histogram
    # of r is filled with every feed once (the check's run of the first feed alone is not added a
    # second time). The first feed is 4 times wider than the others, so counting it twice moves the
    # 90th percentile by far more than a bin.
    rng = np.random.default_rng(1)
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["r"], name="double"),
         helper.make_node("MatMul", ["r", "M"], ["y"], name="fc")], "per_sample",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(np.array(2, np.float32), "two"),
         numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "M")])
    model = save(graph, tmp_path / "per_sample.onnx")
    script = write_script(tmp_path / "calib.py", batches=5, batch=64, seed=5, first_scale=4)
    cache = tmp_path / "c.cache"
    result = convert(run_parity, model, tmp_path / "q.onnx", "--data-loader-script", script, "--calibration-algo",
                     "percentile", "--percentile", "90", "--calibration-cache", cache, "-v")
    assert "feeds are run one at a time" not in result.output, result.describe()
    assert "calibration: up to 16 feeds stacked into one inference" in result.output, result.describe()

    r = [np.abs(2 * x) for x in feeds(5, 64, 5, first_scale=4)]
    width = max(a.max() for a in r) / 2048
    expected = np.percentile(np.concatenate(r), 90)
    assert np.percentile(np.concatenate([r[0]] + r), 90) > expected + 10 * width  # the test can tell
    amax = read_cache(cache)[1]["r"] * 127
    assert expected - 1e-6 <= amax <= expected + width + 1e-6


@pytest.mark.parametrize("rows, per_stack", [(1, 4), (2, 2), (8, 1)])
def test_feeds_per_stack_keep_the_largest_activation_within_a_mebibyte(run_parity, tmp_path, rows, per_stack):
    # x [N, 65536] -> r = 2x (256 KiB per row of float32) -> MatMul: a stack holds as many feeds of
    # `rows` rows as keep r within 1 MiB (docs/int8.md), at least one (then nothing is stacked); the
    # scale is r's largest |x| over every feed either way.
    width = 65536
    rng = np.random.default_rng(2)
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["r"], name="double"),
         helper.make_node("MatMul", ["r", "M"], ["y"], name="fc")], "wide",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])],
        [numpy_helper.from_array(np.array(2, np.float32), "two"),
         numpy_helper.from_array(rng.standard_normal((width, 1)).astype(np.float32), "M")])
    model = save(graph, tmp_path / "wide.onnx")
    script = tmp_path / "calib.py"
    script.write_text(textwrap.dedent(f"""\
        import numpy as np

        def load_data():
            rng = np.random.default_rng(4)
            for _ in range(9):
                yield {{"x": rng.standard_normal(({rows}, {width})).astype(np.float32)}}
        """))
    cache = tmp_path / "c.cache"
    result = convert(run_parity, model, tmp_path / "q.onnx", "--data-loader-script", script, "--calibration-algo",
                     "minmax", "--calibration-cache", cache, "-v")
    if per_stack > 1:
        assert f"calibration: up to {per_stack} feeds stacked into one inference" in result.output, result.describe()
    else:
        assert "feeds stacked into one inference" not in result.output, result.describe()
    assert "Calibrating: 9/9 batches" in result.output
    rng = np.random.default_rng(4)
    amax = max(np.abs(2 * rng.standard_normal((rows, width)).astype(np.float32)).max() for _ in range(9))
    assert read_cache(cache)[1]["r"] == pytest.approx(amax / 127, rel=1e-6)
