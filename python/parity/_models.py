"""Models as the C++ runners take them: a path (str), the serialized bytes, or a callable that
returns either when the runner activates. Polygraphy-style sources are reduced to these: an
onnx.ModelProto is serialized, Parity's loaders are called at activation, and an OnnxFromPath
that nothing else wraps is passed on as its path (so external data is read by the library)."""
import os


def serialized(model):
    """bytes of an onnx.ModelProto, bytes or path."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        from parity import _parity

        return _parity.load_model_bytes(os.fspath(model))
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    raise TypeError(f"expected an ONNX model (onnx.ModelProto, bytes or a path), got {type(model).__name__}")


def _evaluated(value):
    while callable(value) and not hasattr(value, "SerializeToString"):
        value = value()
    return value


def model_source(model):
    """What the C++ runners accept: str path, (path, external data folder), bytes, or a callable
    giving str or bytes."""
    from parity.backend.onnx.loader import OnnxFromPath

    if isinstance(model, OnnxFromPath) and model.is_plain_path():
        return (model.path, model.external_data_dir) if model.external_data_dir else model.path
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    if isinstance(model, (bytes, bytearray, memoryview)) or hasattr(model, "SerializeToString"):
        return serialized(model)
    if callable(model):

        def load():
            value = _evaluated(model)
            if isinstance(value, (str, os.PathLike)):
                return os.fspath(value)
            return serialized(value)

        return load
    raise TypeError(
        f"expected an ONNX model: a path, bytes, onnx.ModelProto or a loader, got {type(model).__name__}"
    )
