from parity.backend.base.loader import BaseLoader  # noqa: F401
from parity.backend.base.runner import BaseRunner  # noqa: F401
