"""Polygraphy's JSON format (polygraphy.json): numpy arrays as {"array": base64 of .npy bytes,
"polygraphy_class": "ndarray"} (encoded and decoded by Parity's C++ .npy code), RunResults,
IterationResult and LazyArray objects tagged with "polygraphy_class"."""
import base64
import json as _json
import os

from parity import _parity
from parity._feeds import as_native_array


def _encode(obj):
    import numpy as np

    from parity.comparator.struct import IterationResult, RunResults

    if isinstance(obj, np.ndarray) or type(obj).__module__ == "numpy" and hasattr(obj, "dtype"):
        array, dtype = as_native_array(np.asarray(obj), "array")
        return {"array": base64.b64encode(_parity.encode_npy(array, dtype)).decode(), "polygraphy_class": "ndarray"}
    if isinstance(obj, IterationResult):
        return {
            "outputs": {
                name: {"values": _encode(value), "polygraphy_class": "LazyArray"} for name, value in obj.items()
            },
            "runtime": obj.runtime,
            "runner_name": obj.runner_name,
            "polygraphy_class": "IterationResult",
        }
    if isinstance(obj, RunResults):
        return {"lst": [[name, [_encode(r) for r in iterations]] for name, iterations in obj.items()],
                "polygraphy_class": "RunResults"}
    if isinstance(obj, dict):
        return {key: _encode(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_encode(value) for value in obj]
    return obj


def _decode(obj):
    from parity.comparator.struct import IterationResult, RunResults

    if isinstance(obj, list):
        return [_decode(value) for value in obj]
    if not isinstance(obj, dict):
        return obj
    tag = obj.get("polygraphy_class")
    legacy = [key for key in obj if key.startswith("__polygraphy_encoded_")]
    if legacy:
        tag = legacy[0][len("__polygraphy_encoded_"):]
        obj = obj[legacy[0]] if isinstance(obj[legacy[0]], dict) else obj
    if tag == "ndarray":
        return _parity.decode_npy(base64.b64decode(obj["array"]), "array")
    if tag in ("LazyArray", "LazyNumpyArray"):
        return _decode(obj["values"])
    if tag == "IterationResult":
        return IterationResult({name: _decode(v) for name, v in obj["outputs"].items()}, obj.get("runtime"),
                               obj.get("runner_name"))
    if tag == "RunResults":
        results = RunResults()
        for name, iterations in obj["lst"]:
            results.append((name, [_decode(r) for r in iterations]))
        return results
    return {key: _decode(value) for key, value in obj.items()}


def to_json(obj):
    return _json.dumps(_encode(obj), indent=4)


def from_json(text):
    return _decode(_json.loads(text))


def save_json(obj, dest, description=None):
    """Writes `obj` (lists/dicts of numpy arrays, RunResults...) as Polygraphy's JSON to a path or
    file-like object."""
    text = to_json(obj)
    if hasattr(dest, "write"):
        dest.write(text)
        return
    try:
        with open(os.fspath(dest), "w") as f:
            f.write(text)
    except OSError as error:
        from parity.exception import FileError

        raise FileError(f"{os.fspath(dest)}: cannot write {description or 'JSON'}: {error.strerror}") from None
    if description:
        from parity.logger import G_LOGGER

        G_LOGGER.info(f"Saving {description} to {dest}")


def load_json(src, description=None):
    """Reads Polygraphy's JSON (e.g. --save-inputs files: a list of {name: array})."""
    if hasattr(src, "read"):
        return from_json(src.read())
    try:
        with open(os.fspath(src)) as f:
            text = f.read()
    except OSError as error:
        from parity.exception import FileError

        raise FileError(f"{os.fspath(src)}: cannot read {description or 'JSON'}: {error.strerror}") from None
    return from_json(text)
