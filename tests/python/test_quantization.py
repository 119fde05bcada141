"""parity.quantization: Calibrator and QuantizeOnnx (docs/int8.md) against numpy: min-max scales over
a Polygraphy-style list of feeds, a hand-written TensorRT cache's exact scales, the cache written then
read back, the default DataLoader, keep_fp32, and bad arguments."""
import struct
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from parity.backend.onnx import OnnxFromPath
from parity.comparator import DataLoader
from parity.exception import ParityException
from parity.quantization import Calibrator, QuantizeOnnx, quantize_onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from int8_util import conv_chain_model, hex_scale  # noqa: E402  (the CLI tests' model and cache helpers)


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    return str(conv_chain_model(tmp_path_factory.mktemp("quantization") / "chain.onnx"))


def feeds(count=3, seed=5):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((2, 3, 8, 8)).astype(np.float32)} for _ in range(count)]


def scales(model):
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return {n.input[0]: float(inits[n.input[1]]) for n in model.graph.node if n.op_type == "QuantizeLinear"}


def test_minmax_over_a_list_of_feeds(chain):
    data = feeds()
    model = QuantizeOnnx(OnnxFromPath(chain), Calibrator(data, algo="minmax"))()
    onnx.checker.check_model(model)
    assert scales(model)["x"] == pytest.approx(max(np.abs(f["x"]).max() for f in data) / 127, rel=1e-6)
    assert {n.op_type for n in model.graph.node} >= {"QuantizeLinear", "DequantizeLinear"}


def test_hand_written_cache_gives_its_scales_without_calibrating(chain, tmp_path):
    cache = tmp_path / "c.cache"
    known = {"x": 0.02, "r": 0.0625, "f": 0.001}
    cache.write_text("TRT-8601-EntropyCalibration2\n" + "".join(f"{k}: {hex_scale(v)}\n" for k, v in known.items()))

    def no_data():
        raise AssertionError("the data loader must not run when the cache has the scales")
        yield

    model = quantize_onnx(chain, Calibrator(no_data(), cache=cache))
    assert scales(model) == {k: float(np.float32(v)) for k, v in known.items()}


def test_cache_written_then_read(chain, tmp_path):
    cache = tmp_path / "c.cache"
    first = quantize_onnx(chain, Calibrator(feeds(), cache=cache, algo="percentile", percentile=99.9))
    header, *lines = cache.read_text().splitlines()
    assert header == "TRT-8601-PercentileCalibration"
    written = {line.rsplit(":", 1)[0]: struct.unpack(">f", bytes.fromhex(line.rsplit(":", 1)[1].strip()))[0]
               for line in lines}
    assert written == pytest.approx(scales(first), rel=0)
    second = quantize_onnx(chain, Calibrator([], cache=cache, algo="percentile"))
    assert scales(second) == scales(first)


def test_default_data_loader_and_keep_fp32(chain):
    model = quantize_onnx(chain, Calibrator(DataLoader(iterations=2, input_metadata=None)), keep_fp32=["fc"])
    nodes = {n.name: n for n in model.graph.node}
    assert list(nodes["fc"].input) == ["f", "M"]
    assert nodes["conv"].input[0] == "x_dequantized"


def test_bad_arguments(chain, tmp_path):
    with pytest.raises(ValueError, match="algo"):
        Calibrator(feeds(), algo="kl")
    with pytest.raises(ValueError, match="percentile"):
        Calibrator(feeds(), percentile=99.0)
    cache = tmp_path / "bad.cache"
    cache.write_text("TRT-8601-MinMaxCalibration\nx 3c010a14\n")
    with pytest.raises(ParityException, match=r"bad.cache:2"):
        quantize_onnx(chain, Calibrator(feeds(), cache=cache, algo="minmax"))


def test_a_generator_is_taken_one_feed_at_a_time(chain):
    # The calibration takes the feeds as it runs them: when the generator makes feed i, the feeds it made
    # long before have been run and let go (weak references to them are dead), where a list of every feed
    # would keep all of them alive. The scales are those of the same feeds given as a list.
    count = 400
    rng = np.random.default_rng(12)
    arrays = [rng.standard_normal((2, 3, 8, 8)).astype(np.float32) for _ in range(count)]
    alive_at_yield = []

    def generate():
        import weakref

        made = []
        for array in arrays:
            copy = array.copy()
            made.append(weakref.ref(copy))
            alive_at_yield.append(sum(ref() is not None for ref in made))
            yield {"x": copy}
            del copy

    streamed = quantize_onnx(chain, Calibrator(generate(), algo="entropy"))
    listed = quantize_onnx(chain, Calibrator([{"x": a} for a in arrays], algo="entropy"))
    assert len(alive_at_yield) == count
    assert max(alive_at_yield) <= 64, f"feeds alive at once: up to {max(alive_at_yield)} of {count}"
    assert scales(streamed) == scales(listed)


def test_a_generator_that_raises_part_way_raises_its_error(chain):
    def generate():
        for i, feed in enumerate(feeds(50)):
            if i == 30:
                raise RuntimeError("feed 30 is unreadable")
            yield feed

    with pytest.raises(RuntimeError, match="feed 30 is unreadable"):
        quantize_onnx(chain, Calibrator(generate(), algo="minmax"))
