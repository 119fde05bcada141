"""A crash inside OpenVINO's compile does not take the Python interpreter down (issue 39, item 3): the
OpenVINO runner's activation raises InvalidInputError naming the node, and the interpreter goes on.
The model is the real one OpenVINO's CPU plugin divides by zero on (a Slice with step INT64_MIN over a
dynamic shape), handed to OpenVINO with PARITY_SKIP_MODEL_VALIDATION=1 (Parity refuses it otherwise)."""
import sys
from pathlib import Path

import numpy as np
import pytest

from parity.exception import InvalidInputError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "cli"))
from test_bad_input_crash import INT64_MIN, shape_slice_model  # noqa: E402


def test_openvino_compile_crash_is_an_exception_naming_the_node(tmp_path, monkeypatch):
    from parity.backend.openvino import OpenVINORunner
    model = shape_slice_model(tmp_path / "slice.onnx", INT64_MIN, dynamic=True)
    monkeypatch.setenv("PARITY_SKIP_MODEL_VALIDATION", "1")
    runner = OpenVINORunner(str(model))
    with pytest.raises(InvalidInputError, match=r"signal 8 \(SIGFPE\).*node 'hostile_slice' \(Slice\)"):
        runner.activate()
    # The interpreter and OpenVINO in it still work: a model OpenVINO compiles runs.
    good = shape_slice_model(tmp_path / "good.onnx", -1, dynamic=True)
    with OpenVINORunner(str(good)) as working:
        outputs = working.infer({"x": np.ones((5, 3, 4), np.float32)})
    assert outputs["z"].shape == (5, 3, 4)
