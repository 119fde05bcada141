"""Fixtures for the Python API tests (`make test-python`): small ONNX models written with onnx.helper.

The package under test is the one `import parity` finds: the Makefile puts build/<preset>/python
first on PYTHONPATH (scripts/setup.sh also points .venv there). Tests fail, never skip, when it is
missing.
"""
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import parity  # noqa: F401  (fails loudly when the package was not built)

REPO_ROOT = Path(__file__).resolve().parents[2]


def _save(model, path):
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    paths = {}

    # Polygraphy's examples' identity.onnx: x [1, 1, 2, 2] float32 -> y.
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "identity",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 2])])
    paths["identity"] = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
                          folder / "identity.onnx")

    # A float and an integer input (seed 001's bounded inputs): y = tanh(x) * 3 + x, z = n * 2 + 1.
    nodes = [
        helper.make_node("Tanh", ["x"], ["t"]),
        helper.make_node("Mul", ["t", "three"], ["t3"]),
        helper.make_node("Add", ["t3", "x"], ["y"]),
        helper.make_node("Mul", ["n", "two"], ["n2"]),
        helper.make_node("Add", ["n2", "one"], ["z"]),
    ]
    initializers = [
        helper.make_tensor("three", TensorProto.FLOAT, [], [3.0]),
        helper.make_tensor("two", TensorProto.INT64, [], [2]),
        helper.make_tensor("one", TensorProto.INT64, [], [1]),
    ]
    graph = helper.make_graph(
        nodes, "mixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4]),
         helper.make_tensor_value_info("n", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4]),
         helper.make_tensor_value_info("z", TensorProto.INT64, [4])],
        initializers)
    paths["mixed"] = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), folder / "mixed.onnx")

    # 1 MiB output per inference (for the memory test): y = x + x on [256, 1024] float32.
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"])], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256, 1024])])
    paths["big"] = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), folder / "big.onnx")

    return paths


@pytest.fixture
def rng():
    return np.random.default_rng(0)
