from collections import OrderedDict

import numpy as np


class BoundedShape(list):
    """A shape (list of int, str for a named dim, or None) with optional min/max bounds."""

    def __init__(self, shape, min=None, max=None):
        super().__init__(shape)
        self.min = list(min) if min is not None else None
        self.max = list(max) if max is not None else None

    def __repr__(self):
        text = repr(list(self))
        if self.min is not None or self.max is not None:
            text = f"BoundedShape({text}, min={self.min}, max={self.max})"
        return text


class MetadataTuple:
    def __init__(self, dtype, shape):
        self.dtype = dtype
        self.shape = shape

    def __iter__(self):
        yield self.dtype
        yield self.shape

    def __eq__(self, other):
        return tuple(self) == tuple(other)

    def __repr__(self):
        return f"MetadataTuple({self.dtype}, {self.shape})"

    def __str__(self):
        shape = "None"
        if self.shape is not None:
            dims = ", ".join(repr(d) if isinstance(d, str) else str(d) for d in self.shape)
            shape = "(" + dims + ("," if len(self.shape) == 1 else "") + ")"
        return f"[dtype={self.dtype}, shape={shape}]"


def _dtype_name(dtype):
    if dtype is None:
        return None
    name = getattr(dtype, "name", None)
    if isinstance(name, str):
        return name.lower()
    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(dtype).rsplit(".", 1)[-1].lower()


def _numpy_dtype(name):
    if name is None:
        return None
    try:
        return np.dtype(name)
    except TypeError:
        try:
            import ml_dtypes

            return np.dtype(getattr(ml_dtypes, name))
        except (ImportError, AttributeError):
            return name


class TensorMetadata(OrderedDict):
    """Names of tensors mapped to (dtype, shape), in order. dtypes are numpy dtypes; a dim is an int,
    a str (named dynamic dim) or None (unknown)."""

    @staticmethod
    def from_feed_dict(feed_dict):
        meta = TensorMetadata()
        for name, value in feed_dict.items():
            meta.add(name, value.dtype, value.shape)
        return meta

    def add(self, name, dtype, shape, min_shape=None, max_shape=None):
        if shape is not None:
            shape = BoundedShape(shape, min_shape, max_shape)
        self[name] = MetadataTuple(_numpy_dtype(_dtype_name(dtype)) if dtype is not None else None, shape)
        return self

    def __repr__(self):
        return "TensorMetadata(" + ", ".join(f"{name!r}: {value!r}" for name, value in self.items()) + ")"

    def __str__(self):
        return "{" + ",\n ".join(f"{name} {value}" for name, value in self.items()) + "}"

    @staticmethod
    def _from_entries(entries):
        meta = TensorMetadata()
        for name, dtype, shape, min_shape, max_shape in entries:
            meta.add(name, _numpy_dtype(dtype), shape, min_shape, max_shape)
        return meta


def _metadata_entries(metadata):
    """TensorMetadata (or {name: (dtype, shape)}) -> the C++ side's list of entries."""
    entries = []
    for name, value in metadata.items():
        dtype, shape = tuple(value)
        dims = None
        min_shape = max_shape = None
        if shape is not None:
            dims = [d if isinstance(d, (int, str)) or d is None else int(d) for d in shape]
            dims = [None if isinstance(d, int) and d < 0 else d for d in dims]
            min_shape = getattr(shape, "min", None)
            max_shape = getattr(shape, "max", None)
        entries.append((name, _dtype_name(dtype), dims, min_shape, max_shape))
    return entries
