"""Polygraphy's func.extend: extend a loader's result with your own function.

    @func.extend(OnnxFromPath("model.onnx"))
    def load_and_modify(model):
        ...           # change the model in place, or return a new value
"""
import functools
import inspect


def extend(extend_func):
    """Decorator: calls `extend_func` (a loader), passes its result(s) to the decorated function
    and returns the function's return value, or, when it returns None, the loader's result."""

    def decorator(func):
        @functools.wraps(func)
        def extended(*args, **kwargs):
            result = extend_func(*args, **kwargs)
            values = result if isinstance(result, tuple) else (result,)
            returned = func(*values)
            if returned is None:
                return result
            return returned

        extended.__signature__ = inspect.signature(extend_func) if callable(extend_func) else None
        return extended

    return decorator
