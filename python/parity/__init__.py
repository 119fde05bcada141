"""Parity's Python API: Polygraphy's module layout over Parity's C++ library.

    from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
    from parity.backend.ref import RefRunner
    from parity.comparator import Comparator, CompareFunc

See docs/python-api.md for the modules and the Polygraphy <-> Parity names.
"""
import os as _os
import sys as _sys

__version__ = "0.1.0"

# ONNX Runtime's and OpenVINO's libraries are taken from the onnxruntime and openvino packages this
# interpreter imports (sys.path, PYTHONPATH included), and the OpenVINO backend module from beside
# this package, unless the user pointed Parity elsewhere with the environment variables.
def _package_folder(name, *subfolders):
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = _os.path.join(list(spec.submodule_search_locations)[0], *subfolders)
    return folder if _os.path.isdir(folder) else None


_os.environ.setdefault("PARITY_PYTHON", _sys.executable)
if "PARITY_ORT_LIBRARY" not in _os.environ and _package_folder("onnxruntime", "capi"):
    _os.environ["PARITY_ORT_LIBRARY"] = _package_folder("onnxruntime", "capi")
if "PARITY_OPENVINO_LIBRARY_DIR" not in _os.environ and _package_folder("openvino", "libs"):
    _os.environ["PARITY_OPENVINO_LIBRARY_DIR"] = _package_folder("openvino", "libs")
_openvino_module = _os.path.join(_os.path.dirname(__file__), "libparity_openvino.so")
if _os.path.exists(_openvino_module):
    _os.environ.setdefault("PARITY_OPENVINO_MODULE", _openvino_module)

from parity import _parity  # noqa: E402

from parity.logger import G_LOGGER  # noqa: E402,F401  (routes Parity's log lines to sys.stdout)
from parity.exception import ParityException  # noqa: E402,F401
