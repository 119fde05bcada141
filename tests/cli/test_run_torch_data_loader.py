"""`--data-loader-backend-module torch`: Parity replays torch's CPU generator without Python, so the
inputs it generates must be exactly those Polygraphy's DataLoader(data_loader_backend_module="torch")
yields, for every dtype, seed and iteration. Polygraphy and torch run in this test to give the
expected values; nothing is copied from an earlier run.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from polygraphy.comparator import DataLoader
from polygraphy.common import TensorMetadata
from polygraphy.json import load_json

TIMEOUT = 120

# name, ONNX dtype, numpy dtype, shape (a str is a dynamic dim; Polygraphy and Parity make it 1)
INPUTS = [
    ("x", TensorProto.FLOAT, np.float32, ["N", 3]),
    ("big", TensorProto.FLOAT, np.float32, [17, 1000]),
    ("d", TensorProto.DOUBLE, np.float64, [16]),
    ("h", TensorProto.FLOAT16, np.float16, [40, 100]),  # large enough for values torch turns from 1 to 0
    ("i64", TensorProto.INT64, np.int64, [4, 5]),
    ("i32", TensorProto.INT32, np.int32, [2, 3]),
    ("u8", TensorProto.UINT8, np.uint8, [9]),
]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return make_model(tmp_path_factory.mktemp("torch_loader") / "many_dtypes.onnx", INPUTS)


def make_model(path, entries):
    nodes, inputs, outputs = [], [], []
    for name, onnx_dtype, _, shape in entries:
        inputs.append(helper.make_tensor_value_info(name, onnx_dtype, shape))
        outputs.append(helper.make_tensor_value_info(name + "_out", onnx_dtype, shape))
        nodes.append(helper.make_node("Identity", [name], [name + "_out"]))
    graph = helper.make_graph(nodes, "torch_loader", inputs, outputs)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def polygraphy_feeds(seed, iterations, val_range=None):
    loader = DataLoader(seed=seed, iterations=iterations, val_range=val_range, data_loader_backend_module="torch")
    metadata = TensorMetadata()
    for name, _, np_dtype, shape in INPUTS:
        metadata.add(name, np_dtype, [-1 if isinstance(dim, str) else dim for dim in shape])
    loader.input_metadata = metadata
    return [{name: tensor.numpy() for name, tensor in feed.items()} for feed in loader]


def parity_feeds(run_parity, model, tmp_path, *flags):
    saved = tmp_path / "inputs.json"
    result = run_parity("run", str(model), "--onnxrt", "--data-loader-backend-module", "torch", "--save-inputs",
                        str(saved), *flags, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    return load_json(str(saved)), result


def assert_same(expected, actual):
    assert len(expected) == len(actual)
    for iteration, (want, got) in enumerate(zip(expected, actual)):
        assert list(want) == list(got)
        for name in want:
            assert got[name].dtype == want[name].dtype, (iteration, name)
            assert got[name].shape == want[name].shape, (iteration, name)
            assert np.array_equal(got[name], want[name]), (iteration, name, got[name], want[name])


@pytest.mark.parametrize("seed,iterations", [(1, 3), (0, 2), (123456, 2), (4294967294, 1)])
def test_values_are_torchs(run_parity, model, tmp_path, seed, iterations):
    actual, _ = parity_feeds(run_parity, model, tmp_path, "--seed", str(seed), "--iterations", str(iterations))
    assert_same(polygraphy_feeds(seed, iterations), actual)


def test_integer_ranges_and_ignored_float_range(run_parity, model, tmp_path):
    # i64's range needs torch's 64-bit draws; the float range is dropped by torch.rand, as in Polygraphy.
    ranges = {"i64": (-5, 2000000000), "i32": (-3, 7), "u8": (0, 255), "x": (-10.0, 10.0)}
    actual, result = parity_feeds(run_parity, model, tmp_path, "--seed", "7", "--iterations", "2", "--val-range",
                                  "i64:[-5,2000000000]", "i32:[-3,7]", "u8:[0,255]", "x:[-10,10]")
    assert_same(polygraphy_feeds(7, 2, ranges), actual)
    assert "ignores --val-range for floating-point inputs" in result.stdout + result.stderr


def test_unknown_module_is_refused(run_parity, model):
    result = run_parity("run", str(model), "--onnxrt", "--data-loader-backend-module", "jax", timeout=TIMEOUT)
    assert result.returncode != 0
    assert "invalid choice: 'jax' (choose from 'numpy', 'torch')" in result.stdout + result.stderr



def test_bool_input_is_refused_like_polygraphy(run_parity, tmp_path):
    # Polygraphy's torch.randint(False, True + 1, ...) raises a TypeError: there are no values to match.
    entries = [("b", TensorProto.BOOL, np.bool_, [17])]
    loader = DataLoader(data_loader_backend_module="torch")
    metadata = TensorMetadata()
    metadata.add("b", np.bool_, [17])
    loader.input_metadata = metadata
    with pytest.raises(TypeError):
        loader[0]
    model = make_model(tmp_path / "bool.onnx", entries)
    result = run_parity("run", str(model), "--onnxrt", "--data-loader-backend-module", "torch", timeout=TIMEOUT)
    assert result.returncode != 0
    assert "Input tensor: b | The torch data loader backend cannot generate bool data" in result.stdout + result.stderr
