"""Feeds and outputs on their way into the C++ library: numpy arrays (or anything numpy can take,
CPU torch tensors included, bfloat16 and float8 too) as C-contiguous, native-byte-order arrays the
library reads in place. (The C++ side reads plain contiguous numpy arrays itself and sends only the
others here.)"""
import numpy as np

from parity._parity import InvalidInputError, UnsupportedError

# numpy dtypes DLPack describes directly; others (ml_dtypes' bfloat16, float8...) cross as
# unsigned integers of the same width with their real name beside them.
_DIRECT = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
}


# torch dtypes numpy has only through ml_dtypes: their bits are viewed as integers of the same
# width (torch's .numpy() refuses them), then as the ml_dtypes type. No copy either way.
_TORCH_ML_DTYPES = {
    "torch.bfloat16": ("int16", "bfloat16"),
    "torch.float8_e4m3fn": ("int8", "float8_e4m3fn"),
    "torch.float8_e4m3fnuz": ("int8", "float8_e4m3fnuz"),
    "torch.float8_e5m2": ("int8", "float8_e5m2"),
    "torch.float8_e5m2fnuz": ("int8", "float8_e5m2fnuz"),
}


def _torch_as_numpy(tensor):
    """A CPU torch tensor as a numpy array over its memory (strided as the tensor is)."""
    tensor = tensor.detach()
    ml_dtype = _TORCH_ML_DTYPES.get(str(tensor.dtype))
    if ml_dtype is None:
        return tensor.numpy()
    import ml_dtypes
    import torch

    bits, name = ml_dtype
    return tensor.view(getattr(torch, bits)).numpy().view(getattr(ml_dtypes, name))


def as_native_array(value, what):
    """Returns (array, dtype_name): `value` as an array the library can borrow. Non-contiguous or
    byte-swapped arrays are copied; a tensor on a GPU is an error naming it."""
    if not isinstance(value, np.ndarray):
        device = getattr(value, "device", None)
        if device is not None and getattr(device, "type", "cpu") != "cpu":
            raise InvalidInputError(f"{what}: a tensor on device '{device}': copy it to the CPU (.cpu()) first")
        if hasattr(value, "numpy") and callable(value.numpy):
            value = _torch_as_numpy(value) if hasattr(value, "detach") else value.numpy()
        else:
            value = np.asarray(value)
    if value.dtype.kind in "OUS":
        raise UnsupportedError(f"{what}: {value.dtype} arrays (strings, objects) cannot be fed to Parity yet")
    if not value.dtype.isnative:
        value = value.astype(value.dtype.newbyteorder("="))
    if not value.flags.c_contiguous:
        value = np.ascontiguousarray(value)
    name = value.dtype.name
    if name in _DIRECT:
        return value, name
    if value.dtype.kind == "V" or value.dtype.itemsize in (1, 2):
        return value.view(f"u{value.dtype.itemsize}"), name
    raise UnsupportedError(f"{what}: numpy dtype {value.dtype} is not supported")


def native_items(mapping, kind):
    """{name: array} -> [(name, array, dtype_name)] for the C++ side; `kind` is "input"/"output"."""
    if not hasattr(mapping, "items"):
        raise InvalidInputError(f"expected a dict of {kind} names to arrays, got {type(mapping).__name__}")
    items = []
    for name, value in mapping.items():
        if not isinstance(name, str):
            raise InvalidInputError(f"{kind} names must be strings, got {name!r}")
        array, dtype = as_native_array(value, f"{kind} '{name}'")
        items.append((name, array, dtype))
    return items
