class BaseLoader:
    """A lazy loader (Polygraphy's BaseLoader): calling it does the work. Subclasses implement
    call_impl(*args, **kwargs)."""

    def __call__(self, *args, **kwargs):
        return self.call_impl(*args, **kwargs)

    def call_impl(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement call_impl()")


def evaluate(value):
    """Calls `value` while it is a loader (or any callable that is not a model), as Polygraphy's
    util.invoke_if_callable does for loader arguments."""
    while callable(value) and not hasattr(value, "SerializeToString"):
        value = value()
    return value
