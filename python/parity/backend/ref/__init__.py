"""Parity's reference interpreter (`--ref`): exact kernels for every ONNX op."""
from parity import _parity
from parity._models import model_source
from parity.backend.base.runner import NativeRunner


class RefRunner(NativeRunner):
    """Runs a model (path, bytes, onnx.ModelProto or a loader) with the reference interpreter;
    fp64=True computes floats in float64; max_loop_iterations bounds the iterations of each Loop node
    (an error naming the node past it; default 100,000,000), as --ref-max-loop-iterations does."""

    def __init__(self, model, name=None, fp64=False, max_loop_iterations=None):
        super().__init__(_parity.RefRunner(model_source(model), fp64, max_loop_iterations), name)
