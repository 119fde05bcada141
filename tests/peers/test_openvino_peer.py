"""Parity's OpenVINO runner (`--openvino`, OpenVINO's C++ API through the backend module) against
OpenVINO's Python package: the same model, inputs and properties give the same bytes, at f32 and
bf16, on every model in ../shared/models and examples/models that OpenVINO can convert.

The tool under test is $PARITY_RUN_BACKEND (see test_onnxrt_peer.py); its --openvino loads the
module built beside the `parity` binary (build/<preset>/tools/parity/libparity_openvino.so).
"""

import os
from pathlib import Path

import numpy as np
import openvino
import pytest

from test_onnxrt_peer import PEER_MODELS, describe, make_inputs, model_id, run_backend_bin, run_parity, tool_env  # noqa: F401

# Models OpenVINO's own ONNX frontend cannot convert (the Python package fails the same way), with the reason.
OPENVINO_CANNOT_CONVERT = {
    "silero_vad_v5.onnx": "a Conv inside an If branch whose input rank OpenVINO cannot infer "
                          "(OpConversionFailure: Conv-16, ReduceMean-16)",
}
CONVERTIBLE = [m for m in PEER_MODELS if m.name not in OPENVINO_CANNOT_CONVERT]
PRECISIONS = ["f32", "bf16"]
THREADS = 2


def openvino_env(backend: Path) -> dict:
    module = backend.parent.parent.parent / "tools" / "parity" / "libparity_openvino.so"
    return tool_env(PARITY_OPENVINO_MODULE=str(module))


def python_openvino(model: Path, feed: dict, precision: str) -> dict:
    compiled = openvino.Core().compile_model(str(model), "CPU", {"INFERENCE_PRECISION_HINT": precision,
                                                                 "INFERENCE_NUM_THREADS": THREADS})
    results = compiled(feed)
    return {output.get_any_name(): np.asarray(results[output]) for output in compiled.outputs}


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("model", CONVERTIBLE, ids=model_id)
def test_outputs_identical_to_python_openvino(run_backend_bin, model, precision, tmp_path):
    feed = make_inputs(model)
    done, parity = run_parity(run_backend_bin, model, "openvino", feed, tmp_path, "--ov-precision", precision,
                              "--threads", THREADS, env=openvino_env(run_backend_bin))
    assert done.returncode == 0, describe(done)
    python = python_openvino(model, feed, precision)
    assert sorted(parity) == sorted(python), f"output names differ: {list(parity)} vs {list(python)}"
    for name, expected in python.items():
        got = parity[name]
        assert got.dtype == expected.dtype, f"'{name}' dtype {got.dtype} vs {expected.dtype}"
        assert got.shape == expected.shape, f"'{name}' shape {got.shape} vs {expected.shape}"
        if got.tobytes() != expected.tobytes():
            difference = np.abs(got.astype(np.float64) - expected.astype(np.float64))
            pytest.fail(f"{model.name} at {precision}: '{name}' differs from OpenVINO (Python) in "
                        f"{np.count_nonzero(difference)} of {difference.size} elements (max abs difference "
                        f"{np.nanmax(difference)})", pytrace=False)


@pytest.mark.parametrize("name", sorted(OPENVINO_CANNOT_CONVERT))
def test_known_unconvertible_models_still_fail_in_python_too(run_backend_bin, name, tmp_path):
    """The exclusion above stays true: OpenVINO's Python package cannot compile the model either, and Parity
    fails with OpenVINO's message (exit 1, no crash)."""
    model = next(m for m in PEER_MODELS if m.name == name)
    with pytest.raises(Exception, match="OpConversionFailure"):
        openvino.Core().compile_model(str(model), "CPU")
    done, _ = run_parity(run_backend_bin, model, "openvino", make_inputs(model), tmp_path,
                         env=openvino_env(run_backend_bin))
    assert done.returncode == 1 and "OpConversionFailure" in done.stderr, describe(done)
