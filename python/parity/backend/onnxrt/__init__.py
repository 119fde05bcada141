"""ONNX Runtime (Polygraphy's polygraphy.backend.onnxrt), run by Parity's C++ runner through ONNX
Runtime's C API (the library inside the onnxruntime package of this interpreter by default)."""
from parity import _parity
from parity._models import model_source
from parity.backend.base.loader import BaseLoader
from parity.backend.base.runner import NativeRunner


class SessionFromOnnx(BaseLoader):
    """Lazy ONNX Runtime session from a model (path, bytes, onnx.ModelProto or a loader)."""

    def __init__(self, model_bytes, providers=None, intra_op_threads=None, inter_op_threads=None,
                 optimization_level=None, profile_prefix=None, library_path=None, layerwise_budget_mib=None):
        """layerwise_budget_mib: in layerwise runs (every tensor streamed or returned), the MiB of
        intermediate tensors one partial ONNX Runtime run may produce; the graph is split into
        pieces that fit (the CLI's --ort-layerwise-budget; default 64, 0: half the available memory)."""
        self._model = model_bytes
        self.options = _parity.OnnxrtOptions(
            providers=list(providers) if providers is not None else None,
            intra_op_threads=intra_op_threads or 0,
            inter_op_threads=inter_op_threads or 0,
            optimization_level=optimization_level,
            profile_prefix=profile_prefix or "",
            library_path=library_path or "",
            intermediate_memory_budget=(64 if layerwise_budget_mib is None else int(layerwise_budget_mib)) << 20,
        )

    def call_impl(self):
        return _parity.session_from_model(model_source(self._model), self.options)


# Polygraphy's older name.
SessionFromOnnxBytes = SessionFromOnnx


def session_from_onnx(*args, **kwargs):
    """Immediately evaluated SessionFromOnnx."""
    return SessionFromOnnx(*args, **kwargs)()


class OnnxrtRunner(NativeRunner):
    """Runs a model with ONNX Runtime. `sess`: a SessionFromOnnx, a session it made, or a callable
    returning one."""

    def __init__(self, sess, name=None):
        if isinstance(sess, SessionFromOnnx):
            native = _parity.OnnxrtRunner(model_source(sess._model), sess.options)
        else:
            native = _parity.OnnxrtRunner.from_session(sess)
        super().__init__(native, name)
