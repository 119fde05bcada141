"""The quantization plan reads the type of every input it may quantize: from the model's value infos
when each of them has one (a model its loader ran shape inference on), from ONNX shape inference
otherwise. Both give the same quantized model; a model typed only in part is inferred."""
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper, shape_inference

from parity.quantization import Calibrator, quantize_onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from int8_util import conv_chain_model, hex_scale  # noqa: E402  (the CLI tests' model and cache helpers)

# The chain's quantized inputs: x (conv), r (relu -> gap), f (flat -> fc); r and f have no value info.
SCALES = {"x": 0.02, "r": 0.0625, "f": 0.001}


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    return onnx.load(str(conv_chain_model(tmp_path_factory.mktemp("plan_types") / "chain.onnx")))


@pytest.fixture()
def cache(tmp_path):
    path = tmp_path / "c.cache"
    path.write_text("TRT-8601-EntropyCalibration2\n" + "".join(f"{k}: {hex_scale(v)}\n" for k, v in SCALES.items()))
    return path


def no_data():
    raise AssertionError("the cache has every scale: no calibration")
    yield


def activation_scales(model):
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return {n.input[0]: float(inits[n.input[1]]) for n in model.graph.node
            if n.op_type == "QuantizeLinear" and n.input[0] not in inits}


def without_value_info(model):
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.value_info[:]
    return copy


def test_typed_model_quantizes_as_the_untyped_one(chain, cache):
    untyped = without_value_info(chain)
    typed = shape_inference.infer_shapes(untyped)
    assert {v.name for v in typed.graph.value_info} >= {"r", "f"}
    from_untyped = quantize_onnx(untyped, Calibrator(no_data(), cache=cache))
    from_typed = quantize_onnx(typed, Calibrator(no_data(), cache=cache))
    assert activation_scales(from_untyped) == {k: float(np.float32(v)) for k, v in SCALES.items()}
    assert activation_scales(from_typed) == activation_scales(from_untyped)
    assert [(n.op_type, list(n.input), list(n.output)) for n in from_typed.graph.node] == \
        [(n.op_type, list(n.input), list(n.output)) for n in from_untyped.graph.node]


def test_model_typed_in_part_is_inferred(chain, cache):
    # r has a value info, f (flat -> fc) none: the plan must still see f as float32 and quantize it.
    partial = without_value_info(chain)
    partial.graph.value_info.append(helper.make_tensor_value_info("r", onnx.TensorProto.FLOAT, None))
    model = quantize_onnx(partial, Calibrator(no_data(), cache=cache))
    assert set(activation_scales(model)) == set(SCALES)
