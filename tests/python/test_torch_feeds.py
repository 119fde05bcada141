"""torch tensors as feeds: CPU tensors are read in place when contiguous (through numpy views of
their memory), copied when not; float16, bfloat16 and tensors that require grad work; a tensor on
another device is an InvalidInputError naming the input (never copied silently)."""
import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from parity._feeds import as_native_array
from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
from parity.backend.ref import RefRunner
from parity.exception import InvalidInputError


def _runner(kind, model):
    return RefRunner(model) if kind == "ref" else OnnxrtRunner(SessionFromOnnx(model))


def _unary_model(tmp_path, op, elem_type, name):
    """y = op(x) on [2, 3] of `elem_type`."""
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"])], op.lower(),
                              [helper.make_tensor_value_info("x", elem_type, [2, 3])],
                              [helper.make_tensor_value_info("y", elem_type, [2, 3])])
    path = tmp_path / f"{name}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return str(path)


def test_contiguous_cpu_tensor_is_read_in_place():
    tensor = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    array, dtype = as_native_array(tensor, "input 'x'")
    assert dtype == "float32"
    assert array.ctypes.data == tensor.data_ptr()  # the tensor's memory, not a copy


def test_non_contiguous_tensor_is_copied():
    tensor = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    assert not tensor.is_contiguous()
    array, _ = as_native_array(tensor, "input 'x'")
    assert array.flags.c_contiguous and array.ctypes.data != tensor.data_ptr()
    assert np.array_equal(array, tensor.contiguous().numpy())


@pytest.mark.parametrize("kind", ["ref", "onnxrt"])
def test_torch_feeds_give_the_numpy_feeds_results(models, kind):
    x = torch.linspace(-2, 2, 48, dtype=torch.float32).reshape(1, 3, 4, 4)
    n = torch.arange(4, dtype=torch.int64)
    with _runner(kind, models["mixed"]) as runner:
        expected = runner.infer({"x": x.numpy().copy(), "n": n.numpy().copy()})
        from_torch = runner.infer({"x": x, "n": n})
        strided = torch.zeros(1, 3, 4, 8)
        strided[..., ::2] = x
        from_strided = runner.infer({"x": strided[..., ::2], "n": n})  # non-contiguous: copied
        from_grad = runner.infer({"x": x.clone().requires_grad_(True), "n": n})
    for outputs in (from_torch, from_strided, from_grad):
        assert np.array_equal(outputs["y"], expected["y"]) and np.array_equal(outputs["z"], expected["z"])


@pytest.mark.parametrize("kind", ["ref", "onnxrt"])
@pytest.mark.parametrize("torch_dtype, onnx_type, numpy_name",
                         [(torch.float16, TensorProto.FLOAT16, "float16"),
                          (torch.bfloat16, TensorProto.BFLOAT16, "bfloat16")])
def test_reduced_precision_tensors(tmp_path, kind, torch_dtype, onnx_type, numpy_name):
    # ONNX Runtime's CPU provider has no bfloat16 Neg: Identity there (the output is then a copy).
    op = "Identity" if kind == "onnxrt" and torch_dtype == torch.bfloat16 else "Neg"
    model = _unary_model(tmp_path, op, onnx_type, numpy_name)
    x = torch.tensor([[0.5, -1.25, 3.0], [1e-2, 100.0, -7.5]], dtype=torch_dtype)
    array, dtype = as_native_array(x, "input 'x'")
    assert dtype == numpy_name and array.ctypes.data == x.data_ptr()  # zero-copy for bfloat16 too
    with _runner(kind, model) as runner:
        y = runner.infer({"x": x})["y"]
    assert y.dtype.name == numpy_name
    expected = (-x if op == "Neg" else x).float().numpy()
    assert np.array_equal(y.astype(np.float32), expected)


def test_tensor_on_another_device_is_a_clear_error(models):
    # No GPU here: the "meta" device stands for any non-CPU device (CUDA tensors take the same path).
    x = torch.empty(1, 3, 4, 4, device="meta")
    with OnnxrtRunner(SessionFromOnnx(models["mixed"])) as runner:
        with pytest.raises(InvalidInputError, match="input 'x'.*device 'meta'.*CPU"):
            runner.infer({"x": x, "n": torch.arange(4)})


def test_wrong_torch_dtype_is_named(models):
    with RefRunner(models["mixed"]) as runner:
        with pytest.raises(InvalidInputError, match="'x'"):
            runner.infer({"x": torch.zeros(1, 3, 4, 4, dtype=torch.float64), "n": torch.arange(4)})
