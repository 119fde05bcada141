"""Hostile or careless arguments to the Python API (issue 39): refused with Parity's exceptions,
before anything runs."""
import math

import numpy as np
import pytest

from parity.comparator import CompareFunc
from parity.exception import InvalidInputError


@pytest.mark.parametrize("tolerances", [{"atol": math.nan}, {"rtol": float("nan")}, {"atol": np.float32("nan")},
                                        {"atol": {"y": math.nan}}, {"rtol": {"": 1e-3, "y": math.nan}}],
                         ids=["atol", "rtol", "numpy_nan", "atol_per_output", "rtol_per_output"])
def test_nan_tolerance_is_refused(tolerances):
    """A NaN tolerance passes every comparison (`difference > NaN` is false): refused when the
    comparison function is made."""
    with pytest.raises(InvalidInputError, match="NaN"):
        CompareFunc.simple(**tolerances)


def test_nan_tolerance_refusal_names_the_output():
    with pytest.raises(InvalidInputError, match="atol for output 'y' is NaN"):
        CompareFunc.simple(atol={"x": 1e-3, "y": math.nan})


@pytest.mark.parametrize("threads", [{"intra_op_threads": 10**6}, {"inter_op_threads": 10**6},
                                     {"inter_op_threads": -1}])
def test_onnxrt_thread_count_out_of_range_is_refused(models, threads):
    """A million ONNX Runtime threads failed inside ONNX Runtime (std::system_error ends the process)."""
    from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
    with pytest.raises(InvalidInputError, match=r"threads must be between 0 .* and \d+"):
        with OnnxrtRunner(SessionFromOnnx(models["identity"], **threads)):
            pass


def test_openvino_thread_count_out_of_range_is_refused(models):
    from parity.backend.openvino import OpenVINORunner
    with pytest.raises(InvalidInputError, match=r"threads .* must be between 0 .* and \d+"):
        OpenVINORunner(models["identity"], threads=10**6)
