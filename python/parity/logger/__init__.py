"""Parity's logger (Polygraphy's G_LOGGER): one logger shared with the C++ library, whose lines are
written to whatever ``sys.stdout`` is when they are logged (pytest's capture, Jupyter), in order."""
import atexit
import contextlib
import os
import sys

from parity import _parity

# The parity package's folder: Python messages from files below it match rules as `python/parity/...`.
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Logger:
    ULTRA_VERBOSE = -20
    SUPER_VERBOSE = -10
    EXTRA_VERBOSE = 0
    VERBOSE = 10
    INFO = 20
    START = 22
    FINISH = 28
    WARNING = 30
    ERROR = 40
    CRITICAL = 50

    @property
    def module_severity(self):
        """The default severity, or with per-path rules a dict of them ({"": default, path: severity})."""
        rules = _parity.log_path_severities()
        if not rules:
            return _parity.log_severity()
        return {"": _parity.log_severity(), **dict(rules)}

    @module_severity.setter
    def module_severity(self, value):
        """A severity, or as Polygraphy a dict of paths to severities with "" for the default
        (INFO when absent). A path names a folder or file of Parity's tree as its C++ logging calls
        see it (`runtime`, `compare/simple.cpp`; see `--verbosity`), or of its Python package as
        `python/parity/...`; the most specific rule wins."""
        if isinstance(value, dict):
            rules = {str(path): int(severity) for path, severity in value.items()}
            default = rules.pop("", self.INFO)
            _parity.set_log_path_severities(list(rules.items()))  # checked before anything changes
            _parity.set_log_severity(default)
        else:
            _parity.set_log_path_severities([])
            _parity.set_log_severity(int(value))

    # Polygraphy's older name for the same setting.
    severity = module_severity

    @contextlib.contextmanager
    def verbosity(self, severity=CRITICAL):
        """Temporarily sets the severity (default: only critical messages)."""
        old = self.module_severity
        self.module_severity = severity
        try:
            yield
        finally:
            self.module_severity = old

    @contextlib.contextmanager
    def indent(self, level=1):
        """Indents every message logged inside the block (Parity's C++ lines too) by `level` steps."""
        indent = _parity.LogIndent(level)
        try:
            yield
        finally:
            del indent

    def log(self, message, severity, mode=None):
        if severity < self._threshold():
            return
        if callable(message):
            message = message()
        _parity.log(int(severity), str(message))

    @staticmethod
    def _threshold():
        """The severity for the calling code: the default, or with per-path rules the one that
        covers the caller's file (as `python/parity/...` for Parity's own modules)."""
        if not _parity.log_path_severities():
            return _parity.log_severity()
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
        path = os.path.abspath(frame.f_code.co_filename) if frame is not None else ""
        if path.startswith(_PACKAGE_ROOT + os.sep):
            path = "python/parity/" + os.path.relpath(path, _PACKAGE_ROOT).replace(os.sep, "/")
        return _parity.log_severity_at(path)

    def ultra_verbose(self, message, mode=None):
        self.log(message, self.ULTRA_VERBOSE)

    def super_verbose(self, message, mode=None):
        self.log(message, self.SUPER_VERBOSE)

    def extra_verbose(self, message, mode=None):
        self.log(message, self.EXTRA_VERBOSE)

    def verbose(self, message, mode=None):
        self.log(message, self.VERBOSE)

    def info(self, message, mode=None):
        self.log(message, self.INFO)

    def start(self, message, mode=None):
        self.log(message, self.START)

    def finish(self, message, mode=None):
        self.log(message, self.FINISH)

    def warning(self, message, mode=None):
        self.log(message, self.WARNING)

    def error(self, message, mode=None):
        self.log(message, self.ERROR)

    def critical(self, message):
        """Logs the message and raises ParityException with it (as Polygraphy's critical does)."""
        if callable(message):
            message = message()
        if self.CRITICAL >= self._threshold():
            _parity.log(self.CRITICAL, str(message))
        raise _parity.ParityError(str(message))

    def log_file(self, path):
        """Also writes every message to `path`."""
        _parity.set_log_file(str(path))


G_LOGGER = Logger()

_parity.route_log_to_python()
# Lines logged while the interpreter shuts down (after sys.stdout may be gone) go to C's stdout.
atexit.register(_parity.route_log_to_c_stdout)
