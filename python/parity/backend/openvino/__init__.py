"""OpenVINO (`--openvino`), through Parity's backend module (libparity_openvino.so, shipped in this
package) and the openvino package's runtime library."""
from parity import _parity
from parity._models import model_source
from parity.backend.base.runner import NativeRunner


def _named_shapes(shapes):
    return [(name, [int(dim) for dim in shape]) for name, shape in (shapes or {}).items()]


class OpenVINORunner(NativeRunner):
    """Compiles a model (path, bytes, onnx.ModelProto or a loader) for the CPU with OpenVINO.
    precision: "f32", "bf16", "f16" or None (OpenVINO's choice); performance_hint: "latency" or
    "throughput"; streams: OpenVINO's execution streams (ov::num_streams) or None (what the hint picks);
    min_shapes/max_shapes: {input name: shape}, the bounds of dynamic inputs the model is compiled for
    (`--ov-min-shapes`/`--ov-max-shapes`; any shape within them runs without compiling again)."""

    def __init__(self, model, name=None, precision=None, threads=None, performance_hint=None, cache_dir=None,
                 streams=None, min_shapes=None, max_shapes=None):
        native = _parity.OpenvinoRunner(model_source(model), precision, threads, performance_hint, cache_dir, streams,
                                        _named_shapes(min_shapes), _named_shapes(max_shapes))
        super().__init__(native, name)

    @property
    def inference_precision(self):
        return self._native.inference_precision


OpenvinoRunner = OpenVINORunner
