"""Helpers shared by the graph-tool CLI tests (surgeon, convert, check lint): building small
models, running models with the onnxruntime package, and checking the one-[E]-line contract."""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

SHARED_MODELS = Path(__file__).resolve().parents[3] / "shared" / "models"


def ort_run(model_or_path, feed, extra_outputs=()):
    """Runs with ONNX Runtime (CPU); extra_outputs are intermediate tensors marked as outputs."""
    model = onnx.load(str(model_or_path)) if not isinstance(model_or_path, onnx.ModelProto) else model_or_path
    if extra_outputs:
        model = onnx.shape_inference.infer_shapes(model)
        known = {v.name: v for v in list(model.graph.value_info) + list(model.graph.output)}
        for name in extra_outputs:
            if name in {o.name for o in model.graph.output}:
                continue
            model.graph.output.append(known.get(name) or helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feed)))


def total_nodes(graph):
    count = 0
    for node in graph.node:
        count += 1
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                count += total_nodes(attr.g)
            for g in attr.graphs:
                count += total_nodes(g)
    return count


def shared_feed(name):
    """Inputs for the shared models (see shared/models/README.md), small where shapes are free."""
    rng = np.random.default_rng(0)
    if name == "ppocrv4_det":
        return {"x": rng.random((1, 3, 64, 64), dtype=np.float32)}
    if name == "silero_vad_v5":
        return {"input": rng.random((1, 512), dtype=np.float32) - 0.5,
                "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}
    if name == "magika_standard_v3_3":
        return {"bytes": rng.integers(0, 257, (1, 2048)).astype(np.int32)}
    raise KeyError(name)


def assert_one_error(run, *needles):
    """Exit code 1, exactly one [E] line naming each needle, no crash marker."""
    assert run.returncode == 1, run.describe()
    assert not run.crash_markers(), run.describe()
    errors = run.lines("[E] ")
    assert len(errors) == 1, run.describe()
    for needle in needles:
        assert needle in errors[0], run.describe()
    return errors[0]


def shape_chain_model():
    """x [2,3,4]: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 1)), [-1])) + Constant 0.5.
    Every node but Reshape and Add is foldable because x's shape is static."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "one"], ["d"], name="gather"),
        helper.make_node("Unsqueeze", ["d", "axes0"], ["du"], name="unsqueeze"),
        helper.make_node("Concat", ["du", "minus_one"], ["new_shape"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "new_shape"], ["y"], name="reshape"),
        helper.make_node("Constant", [], ["c"], name="constant", value_floats=[0.5]),
        helper.make_node("Add", ["y", "c"], ["z"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "shape_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("one", TensorProto.INT64, [], [1]),
                     helper.make_tensor("axes0", TensorProto.INT64, [1], [0]),
                     helper.make_tensor("minus_one", TensorProto.INT64, [1], [-1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model
