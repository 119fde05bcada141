"""OpenVINO (`--openvino`), through Parity's backend module (libparity_openvino.so, shipped in this
package) and the openvino package's runtime library."""
from parity import _parity
from parity._models import model_source
from parity.backend.base.runner import NativeRunner


class OpenVINORunner(NativeRunner):
    """Compiles a model (path, bytes, onnx.ModelProto or a loader) for the CPU with OpenVINO.
    precision: "f32", "bf16", "f16" or None (OpenVINO's choice); performance_hint: "latency" or
    "throughput"; streams: OpenVINO's execution streams (ov::num_streams) or None (what the hint picks)."""

    def __init__(self, model, name=None, precision=None, threads=None, performance_hint=None, cache_dir=None,
                 streams=None):
        native = _parity.OpenvinoRunner(model_source(model), precision, threads, performance_hint, cache_dir, streams)
        super().__init__(native, name)

    @property
    def inference_precision(self):
        return self._native.inference_precision


OpenvinoRunner = OpenVINORunner
