"""Polygraphy's default DataLoader, reproduced bit for bit by Parity's C++ data loader (numpy's
RandomState stream without numpy)."""
import numpy as np

from parity import _parity
from parity.common import MetadataTuple, TensorMetadata, _metadata_entries
from parity.constants import DEFAULT_SEED


def _range(value, default):
    if value is None or not isinstance(value, (tuple, list)):
        return default
    return tuple(d if v is None else v for v, d in zip(value, default))


class DataLoader:
    """Generates synthetic inputs: values uniform in val_range (per input with a dict, "" for the
    default), shapes from the model (dynamic dims from input_metadata, else their bounds, else 1).
    int_range/float_range (deprecated in Polygraphy) bound integer/float inputs."""

    def __init__(self, seed=None, iterations=None, input_metadata=None, int_range=None, float_range=None,
                 val_range=None, data_loader_backend_module=None):
        self.data_loader_backend_module = "numpy" if data_loader_backend_module is None else data_loader_backend_module
        self.seed = DEFAULT_SEED if seed is None else seed
        self.iterations = 1 if iterations is None else iterations
        self.user_input_metadata = input_metadata or TensorMetadata()
        self._int_range = _range(int_range, (1, 25)) if int_range is not None else None
        self._float_range = _range(float_range, (-1.0, 1.0)) if float_range is not None else None
        self.default_val_range = _range(val_range, (0.0, 1.0))
        self.val_range = val_range if val_range is not None else self.default_val_range
        self.input_metadata = None

    def __repr__(self):
        return (f"DataLoader(seed={self.seed}, iterations={self.iterations}, val_range={self.val_range}, "
                f"int_range={self._int_range}, float_range={self._float_range})")

    def _native(self, entries):
        ranges = []
        if isinstance(self.val_range, dict):
            for name, value in self.val_range.items():
                ranges.append((name, _range(value, self.default_val_range)))
        elif self.val_range is not self.default_val_range:  # [0, 1], the native default, needs no entry
            ranges.append(("", self.default_val_range))
        if self._int_range is not None or self._float_range is not None:
            for name, dtype, *_ in entries:
                kind = np.dtype(dtype).kind if dtype is not None and dtype not in ("bfloat16",) else "f"
                if kind in "iu" and self._int_range is not None:
                    ranges.append((name, tuple(float(v) for v in self._int_range)))
                elif kind == "f" and self._float_range is not None:
                    ranges.append((name, tuple(float(v) for v in self._float_range)))
        shapes = []
        for name, (_, shape) in self.user_input_metadata.items():
            if shape is not None:
                shapes.append((name, [int(d) if isinstance(d, (int, np.integer)) else -1 for d in shape]))
        return _parity.DataLoader(int(self.seed), int(self.iterations), ranges, shapes,
                                  str(self.data_loader_backend_module))

    def _entries(self, metadata):
        metadata = metadata if metadata is not None else self.input_metadata
        if metadata is None:
            metadata = self.user_input_metadata
        merged = TensorMetadata()
        for name, value in metadata.items():
            dtype, shape = tuple(value)
            user = self.user_input_metadata.get(name)
            if user is not None and user.dtype is not None:
                dtype = user.dtype
            merged[name] = MetadataTuple(dtype, shape)
        return _metadata_entries(merged)

    def __getitem__(self, index):
        if index >= self.iterations:
            raise IndexError()
        entries = self._entries(None)
        return self._native(entries).generate(entries, index)

    def __iter__(self):
        for index in range(self.iterations):
            yield self[index]

    def __len__(self):
        return self.iterations

    def _generate_all(self, entries):
        native = self._native(entries)
        return [native.generate(entries, index) for index in range(self.iterations)]
