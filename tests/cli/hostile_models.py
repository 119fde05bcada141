"""Models built to misbehave, shared by the command-line and Python API tests (no exporter writes them)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def endless_loop_model_bytes():
    """A Loop named 'endless' with trip count 10^12 and a condition that stays true: s = s + 1 each
    iteration."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["s_in", "one"], ["s_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [1])],
        initializer=[numpy_helper.from_array(np.ones(1, np.float32), "one")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "cond", "x"], ["y"], name="endless", body=body)], "endless_loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        initializer=[numpy_helper.from_array(np.array(10**12, np.int64), "trips"),
                     numpy_helper.from_array(np.array(True), "cond")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()
