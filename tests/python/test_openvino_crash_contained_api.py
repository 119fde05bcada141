"""A crash inside OpenVINO's compile or first inference does not take the Python interpreter down (issue
39, item 3): the OpenVINO runner's activation (or first infer()) raises InvalidInputError naming the node,
and the interpreter goes on.
The model is the real one OpenVINO's CPU plugin divides by zero on (a Slice with step INT64_MIN over a
dynamic shape), handed to OpenVINO with PARITY_SKIP_MODEL_VALIDATION=1 (Parity refuses it otherwise)."""
import sys
from pathlib import Path

import numpy as np
import pytest

from parity.exception import InvalidInputError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "cli"))
from test_bad_input_crash import INT64_MIN, shape_slice_model  # noqa: E402


def test_openvino_compile_crash_is_an_exception_naming_the_node(tmp_path, monkeypatch):
    from parity.backend.openvino import OpenVINORunner
    model = shape_slice_model(tmp_path / "slice.onnx", INT64_MIN, dynamic=True)
    monkeypatch.setenv("PARITY_SKIP_MODEL_VALIDATION", "1")
    runner = OpenVINORunner(str(model))
    with pytest.raises(InvalidInputError, match=r"signal 8 \(SIGFPE\).*node 'hostile_slice' \(Slice\)"):
        runner.activate()
    # The interpreter and OpenVINO in it still work: a model OpenVINO compiles runs.
    good = shape_slice_model(tmp_path / "good.onnx", -1, dynamic=True)
    with OpenVINORunner(str(good)) as working:
        outputs = working.infer({"x": np.ones((5, 3, 4), np.float32)})
    assert outputs["z"].shape == (5, 3, 4)


def range_model(path):
    """A Range whose delta is a graph input: fed 0, OpenVINO's CPU plugin divides by it while it infers
    (SIGFPE, a real crash: no switch). Built with onnx.helper: no exporter feeds a Range's delta."""
    import onnx
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Range", ["start", "limit", "delta"], ["steps"], name="hostile_range")]
    graph = helper.make_graph(nodes, "range", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                              helper.make_tensor_value_info("delta", TensorProto.INT64, [])],
                              [helper.make_tensor_value_info("steps", TensorProto.INT64, [None]),
                               helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor("start", TensorProto.INT64, [], [0]),
                               helper.make_tensor("limit", TensorProto.INT64, [], [10])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_openvino_first_inference_crash_is_an_exception_naming_the_node(tmp_path):
    """The runner's first inference runs in the child that compiled the model first: inputs that crash
    OpenVINO there raise InvalidInputError naming the node, and the interpreter goes on. After such a crash
    the next inference is contained again (the model compiled again in a child), so the same inputs again
    raise again; other inputs then run (inferences after a contained one that passed are not contained:
    docs say so)."""
    from parity.backend.openvino import OpenVINORunner
    model = range_model(tmp_path / "range.onnx")
    x = np.ones((2, 3), np.float32)
    crash = r"inferring it \(signal 8 \(SIGFPE\).*node 'hostile_range' \(Range\)"
    with OpenVINORunner(str(model)) as runner:
        for _ in range(2):
            with pytest.raises(InvalidInputError, match=crash):
                runner.infer({"x": x, "delta": np.array(0, np.int64)})
        outputs = runner.infer({"x": x, "delta": np.array(2, np.int64)})
    np.testing.assert_array_equal(outputs["steps"], np.arange(0, 10, 2))
