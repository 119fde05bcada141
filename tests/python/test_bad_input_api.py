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
