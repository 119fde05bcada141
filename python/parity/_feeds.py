"""Feeds and outputs on their way into the C++ library: numpy arrays (or anything numpy can take,
torch CPU tensors included) as C-contiguous, native-byte-order arrays the library reads in place."""
import numpy as np

from parity._parity import InvalidInputError, UnsupportedError

# numpy dtypes DLPack describes directly; others (ml_dtypes' bfloat16, float8...) cross as
# unsigned integers of the same width with their real name beside them.
_DIRECT = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
}


def as_native_array(value, what):
    """Returns (array, dtype_name): `value` as an array the library can borrow. Non-contiguous or
    byte-swapped arrays are copied; a tensor on a GPU is an error naming it."""
    if not isinstance(value, np.ndarray):
        device = getattr(value, "device", None)
        if device is not None and getattr(device, "type", "cpu") != "cpu":
            raise InvalidInputError(f"{what}: a tensor on device '{device}': copy it to the CPU (.cpu()) first")
        if hasattr(value, "numpy") and callable(value.numpy):
            value = value.detach().numpy() if hasattr(value, "detach") else value.numpy()
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
