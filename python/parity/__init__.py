"""Parity's Python API: Polygraphy's module layout over Parity's C++ library.

    from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
    from parity.backend.ref import RefRunner
    from parity.comparator import Comparator, CompareFunc

See docs/python-api.md for the modules and the Polygraphy <-> Parity names.
"""
import os as _os
import sys as _sys

__version__ = "0.1.0"

# ONNX Runtime's library is looked for in the onnxruntime package of this interpreter, and the
# OpenVINO backend module beside this package (unless the user pointed Parity elsewhere).
_os.environ.setdefault("PARITY_PYTHON", _sys.executable)
_openvino_module = _os.path.join(_os.path.dirname(__file__), "libparity_openvino.so")
if _os.path.exists(_openvino_module):
    _os.environ.setdefault("PARITY_OPENVINO_MODULE", _openvino_module)

from parity import _parity  # noqa: E402

from parity.logger import G_LOGGER  # noqa: E402,F401  (routes Parity's log lines to sys.stdout)
from parity.exception import ParityException  # noqa: E402,F401
