"""Polygraphy's polygraphy.backend.common loaders."""
import os

from parity.backend.base.loader import BaseLoader, evaluate


class BytesFromPath(BaseLoader):
    """Reads a file's bytes."""

    def __init__(self, path):
        self.path = path

    def call_impl(self):
        with open(os.fspath(evaluate(self.path)), "rb") as f:
            return f.read()


class SaveBytes(BaseLoader):
    """Writes bytes (or what a loader returns) to `path` and returns them."""

    def __init__(self, obj, path):
        self._obj = obj
        self.path = path

    def call_impl(self):
        data = evaluate(self._obj)
        with open(os.fspath(self.path), "wb") as f:
            f.write(data)
        return data


class InvokeFromScript(BaseLoader):
    """Calls the function `name` of the Python script `path` (Polygraphy's script loaders)."""

    def __init__(self, path, name):
        self.path = os.fspath(path)
        self.name = name

    def call_impl(self, *args, **kwargs):
        import importlib.util

        spec = importlib.util.spec_from_file_location("parity_invoked_script", self.path)
        if spec is None:
            raise FileNotFoundError(f"{self.path}: cannot load it as a Python script")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if not hasattr(module, self.name):
            raise AttributeError(f"{self.path}: has no function '{self.name}'")
        return getattr(module, self.name)(*args, **kwargs)


def bytes_from_path(*args, **kwargs):
    return BytesFromPath(*args, **kwargs)()


def save_bytes(*args, **kwargs):
    return SaveBytes(*args, **kwargs)()


def invoke_from_script(path, name, *args, **kwargs):
    return InvokeFromScript(path, name)(*args, **kwargs)
