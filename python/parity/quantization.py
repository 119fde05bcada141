"""int8 quantization (docs/int8.md): a Calibrator holds the calibration data and settings (Polygraphy's
polygraphy.backend.trt.Calibrator(data_loader, cache=..., algo=...), for explicit Q/DQ quantization
instead of TensorRT's implicit one), and QuantizeOnnx is the ONNX loader that quantizes a float32
model with it: Q/DQ pairs on the activations (per tensor) and int8 weights (per channel), the scales
from the calibration cache when it exists, else calibrated on ONNX Runtime (and the cache written)."""
import os

from parity import _parity
from parity._models import serialized
from parity.backend.base.loader import BaseLoader, evaluate
from parity._feeds import native_items
from parity.common import TensorMetadata
from parity.comparator.data_loader import DataLoader

ALGORITHMS = ("entropy", "minmax", "percentile")


class Calibrator:
    """data_loader: a parity.comparator.DataLoader, or any iterable of {input name: array} (a
    Polygraphy data loader script's); cache: a TensorRT calibration cache path, read when it
    exists, else written after calibrating; algo: "entropy" (TensorRT's EntropyCalibration2,
    the default), "minmax" or "percentile" (percentile: of |x|, default 99.99)."""

    def __init__(self, data_loader, cache=None, algo=None, percentile=None):
        self.data_loader = data_loader
        self.cache = os.fspath(cache) if cache is not None else None
        self.algo = "entropy" if algo is None else str(algo)
        if self.algo not in ALGORITHMS:
            raise ValueError(f"Calibrator: algo {self.algo!r}: expected one of {', '.join(ALGORITHMS)}")
        if percentile is not None and self.algo != "percentile":
            raise ValueError(f"Calibrator: percentile applies to algo='percentile', not {self.algo!r}")
        self.percentile = 99.99 if percentile is None else float(percentile)
        if not 0 < self.percentile <= 100:
            raise ValueError(f"Calibrator: percentile must be in (0, 100], got {self.percentile}")


class QuantizeOnnx(BaseLoader):
    """Quantizes a float32 ONNX model (a ModelProto, bytes, path or loader) to int8 Q/DQ with
    `calibrator`; keep_fp32: nodes left unquantized, in `parity convert --keep-fp32`'s syntax (op
    types, node:NAME, op:TYPE, re:PATTERN, @FILE). Returns an onnx.ModelProto."""

    def __init__(self, model, calibrator, keep_fp32=None):
        self._model = model
        self.calibrator = calibrator
        self.keep_fp32 = list(keep_fp32 or [])

    def call_impl(self):
        import onnx

        c = self.calibrator
        data = _parity.quantize_model(serialized(evaluate(self._model)), c.algo, c.percentile, self.keep_fp32,
                                      c.cache or "", _streamed_feeds(c.data_loader))
        return onnx.ModelProto.FromString(data)


def _streamed_feeds(data_loader):
    """The calibration data as the C++ calibration takes it: called with the model's input metadata,
    returning an iterator of native feeds that it takes one at a time (a generator's feeds are never
    all held)."""

    def feeds(entries):
        if isinstance(data_loader, DataLoader):
            entries = data_loader._entries(TensorMetadata._from_entries(entries))
            native = data_loader._native(entries)
            iterations = (native.generate(entries, index) for index in range(data_loader.iterations))
        else:
            if hasattr(data_loader, "input_metadata"):
                data_loader.input_metadata = TensorMetadata._from_entries(entries)
            iterations = iter(data_loader)
        return (native_items(feed, "input") for feed in iterations)

    return feeds


def quantize_onnx(model, calibrator, keep_fp32=None):
    """QuantizeOnnx(model, calibrator, keep_fp32)(), evaluated now."""
    return QuantizeOnnx(model, calibrator, keep_fp32)()
