"""Parity's exceptions. Errors raised by the C++ library arrive as these classes, with the
library's message unchanged. ParityException is the base (Polygraphy's PolygraphyException)."""
from parity._parity import (  # noqa: F401
    FileError,
    InternalError,
    InvalidInputError,
    ParityError,
    ResourceLimitError,
    UnsupportedError,
)

ParityException = ParityError
