import time

import numpy as np

from parity import _parity
from parity._parity import InternalError, InvalidInputError
from parity.common import TensorMetadata


class BaseRunner:
    """Polygraphy's BaseRunner protocol: construct, activate (or `with runner:`), infer(feed_dict)
    any number of times, deactivate. A subclass written in Python implements activate_impl,
    get_input_metadata_impl, infer_impl(feed_dict) and deactivate_impl, and works with
    Comparator.run beside Parity's runners."""

    def __init__(self, name=None, prefix=None):
        """name: the runner's name; default "<prefix>-N<k>-<date>-<time>" (prefix default "Runner"),
        counted per prefix together with Parity's own runners."""
        if name is None:
            # The adapter through which Comparator.run drives this runner names it, so the log
            # lines and the results carry the same name.
            self._parity_adapter = _parity.PythonRunnerAdapter(self, prefix if prefix is not None else "Runner")
            name = self._parity_adapter.name
        self.name = name
        self.inference_time = None
        self._is_active = False

    @property
    def is_active(self):
        """Whether the runner has been activated (context manager or activate())."""
        return self._is_active

    @is_active.setter
    def is_active(self, value):
        self._is_active = bool(value)

    def __enter__(self):
        self.activate()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.deactivate()

    def activate_impl(self):
        pass

    def activate(self):
        if self.is_active:
            from parity.logger import G_LOGGER

            G_LOGGER.warning(f"{self.name:35} | Runner is already active; ignoring activate()")
            return
        self.activate_impl()
        self.is_active = True

    def get_input_metadata_impl(self):
        raise NotImplementedError(f"{type(self).__name__} must implement get_input_metadata_impl()")

    def get_input_metadata(self, use_numpy_dtypes=None):
        """TensorMetadata of the inputs (numpy dtypes). Requires an active runner."""
        if not self.is_active:
            raise InternalError(f"{self.name}: get_input_metadata() needs an active runner; call activate() first")
        return self.get_input_metadata_impl()

    def infer_impl(self, feed_dict):
        raise NotImplementedError(f"{type(self).__name__} must implement infer_impl()")

    def infer(self, feed_dict, check_inputs=True, *args, **kwargs):
        """Runs inference on {name: array}; returns {name: array}."""
        if not self.is_active:
            raise InternalError(f"{self.name}: infer() needs an active runner; call activate() first")
        if check_inputs:
            _check_feed(self.name, self.get_input_metadata(), feed_dict)
        start = time.perf_counter()
        outputs = self.infer_impl(feed_dict, *args, **kwargs)
        self.inference_time = time.perf_counter() - start
        return outputs

    def last_inference_time(self):
        """Seconds the last infer() took (None before the first)."""
        return self.inference_time

    def deactivate_impl(self):
        pass

    def deactivate(self):
        if not self.is_active:
            return
        self.is_active = False
        self.deactivate_impl()


def _check_feed(runner_name, metadata, feed_dict):
    for name in feed_dict:
        if name not in metadata:
            raise InvalidInputError(
                f"{runner_name}: input '{name}' is not an input of the model; inputs: {list(metadata.keys())}"
            )
    for name, (dtype, shape) in metadata.items():
        if name not in feed_dict:
            raise InvalidInputError(f"{runner_name}: input '{name}' is missing from the feed")
        value = feed_dict[name]
        value_dtype = getattr(value, "dtype", None)
        if dtype is not None and value_dtype is not None and np.dtype(value_dtype) != dtype:
            raise InvalidInputError(f"{runner_name}: input '{name}': expected dtype {dtype}, got {value_dtype}")
        value_shape = tuple(getattr(value, "shape", ()))
        if shape is not None:
            if len(value_shape) != len(shape):
                raise InvalidInputError(
                    f"{runner_name}: input '{name}': expected rank {len(shape)} (shape {list(shape)}), "
                    f"got shape {list(value_shape)}"
                )
            for expected, got in zip(shape, value_shape):
                if isinstance(expected, int) and expected >= 0 and expected != got:
                    raise InvalidInputError(
                        f"{runner_name}: input '{name}': expected shape {list(shape)}, got {list(value_shape)}"
                    )


class NativeRunner(BaseRunner):
    """A runner implemented by Parity's C++ library (the ref, ONNX Runtime and OpenVINO runners).
    Inference runs without the GIL; outputs are numpy arrays over buffers made for that call
    (never reused, never changed later), valid after deactivate()."""

    _inferred = False

    def __init__(self, native, name=None):
        self._native = native
        self._user_name = name
        if name is not None:
            native.name = name  # the C++ runner's log lines carry it too

    @property
    def name(self):
        return self._user_name if self._user_name is not None else self._native.name

    @name.setter
    def name(self, value):
        self._user_name = value
        if value is not None:
            self._native.name = value

    @property
    def inference_time(self):
        """Seconds the last infer() took in the backend (None before the first)."""
        return self._native.last_inference_time if self._inferred else None

    @property
    def is_active(self):
        return self._native.is_active

    def activate(self):
        self._native.activate()

    def deactivate(self):
        self._native.deactivate()

    def get_input_metadata(self, use_numpy_dtypes=None):
        return TensorMetadata._from_entries(self._native.input_metadata())

    def infer(self, feed_dict, check_inputs=True, *args, **kwargs):
        # The feed dict goes to C++ as it is: arrays are read in place there, others converted by
        # parity._feeds; the C++ runner validates names, dtypes and shapes.
        outputs = self._native.infer(feed_dict)
        self._inferred = True
        return outputs

    def last_inference_time(self):
        return self.inference_time

    def __del__(self):
        native = getattr(self, "_native", None)
        if native is not None and native.is_active:
            native.deactivate()
