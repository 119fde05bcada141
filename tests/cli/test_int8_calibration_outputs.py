"""`parity convert --int8` calibrates through one ONNX Runtime session whose graph outputs are the
model's outputs plus the activations to calibrate (added for calibration only): the min-max scales of
intermediate tensors equal max |x| of the same tensors computed by ONNX Runtime's Python API, and the
written model has exactly the graph outputs of the float model (the added ones removed again, one
that was an output already kept once)."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from int8_util import calibration_data, conv_chain_model, read_cache, write_calibration_script


def reference_amax(model_path, batches):
    """max |x| of every value of the model over `batches`, from ONNX Runtime with each as an output."""
    model = onnx.load(str(model_path))
    outputs = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for name in node.output:
            if name not in outputs:
                model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
                outputs.add(name)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    amax = {"x": max(float(np.abs(x).max()) for x in batches)}
    for x in batches:
        for name, value in zip(names, session.run(None, {"x": x})):
            amax[name] = max(amax.get(name, 0.0), float(np.abs(value).max()))
    return amax


@pytest.mark.parametrize("activation_is_output", [False, True])
def test_minmax_scales_of_intermediate_tensors_and_graph_outputs_unchanged(run_parity, tmp_path, activation_is_output):
    model_path = conv_chain_model(tmp_path / "chain.onnx")
    if activation_is_output:
        # The MatMul's input (an activation to calibrate) is also a graph output of the float model.
        model = onnx.load(str(model_path))
        model.graph.output.append(helper.make_tensor_value_info("f", TensorProto.FLOAT, None))
        onnx.save(model, str(model_path))
    script = write_calibration_script(tmp_path / "calib.py", batches=5, batch=3)
    cache = tmp_path / "c.cache"
    out = tmp_path / "q.onnx"
    result = run_parity("convert", model_path, "--int8", "--calibration-algo", "minmax", "--data-loader-script",
                        script, "--calibration-cache", cache, "-o", out, timeout=300)
    assert result.returncode == 0, result.describe()

    _, scales = read_cache(cache)
    intermediate = set(scales) - {"x"}
    assert intermediate, scales  # the chain has activations past the graph input
    expected = reference_amax(model_path, calibration_data(5, batch=3))
    for name, scale in scales.items():
        assert scale * 127 == pytest.approx(expected[name], rel=1e-6), name

    written = [o.name for o in onnx.load(str(out)).graph.output]
    assert written == [o.name for o in onnx.load(str(model_path)).graph.output]
