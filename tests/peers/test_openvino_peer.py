"""Parity's OpenVINO runner (`--openvino`, OpenVINO's C++ API through the backend module) against
OpenVINO's Python package: the same model, inputs and properties give the same bytes, at f32 and
bf16, on every model in ../shared/models and examples/models that OpenVINO can convert.

The tool under test is $PARITY_RUN_BACKEND (see test_onnxrt_peer.py); its --openvino loads the
module built beside the `parity` binary (build/<preset>/tools/parity/libparity_openvino.so).
"""

import os
import subprocess
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


def parity_bin(backend: Path) -> Path:
    return backend.parent.parent.parent / "tools" / "parity" / "parity"


def assert_same_bytes(got: dict, expected: dict, what: str):
    assert sorted(got) == sorted(expected), f"{what}: output names differ: {list(got)} vs {list(expected)}"
    for name, value in expected.items():
        assert got[name].dtype == value.dtype and got[name].shape == value.shape, f"{what}: '{name}' type/shape"
        if got[name].tobytes() != value.tobytes():
            difference = np.abs(got[name].astype(np.float64) - value.astype(np.float64))
            pytest.fail(f"{what}: '{name}' differs in {np.count_nonzero(difference)} of {difference.size} elements "
                        f"(max abs difference {np.nanmax(difference)})", pytrace=False)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("model", CONVERTIBLE, ids=model_id)
def test_compiled_file_identical_to_direct_run_and_python(run_backend_bin, model, precision, tmp_path):
    """`parity convert M --openvino -o m.ovc`, then running m.ovc, gives the bytes of a direct run of M and of
    OpenVINO's Python package on the same inputs and properties."""
    env = openvino_env(run_backend_bin)
    compiled = tmp_path / "m.ovc"
    done = subprocess.run([str(parity_bin(run_backend_bin)), "convert", str(model), "--openvino", "--ov-precision",
                           precision, "--ov-threads", str(THREADS), "-o", str(compiled)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, describe(done)
    feed = make_inputs(model)
    done, from_file = run_parity(run_backend_bin, compiled, "openvino", feed, tmp_path, "--threads", THREADS, env=env)
    assert done.returncode == 0, describe(done)
    done, direct = run_parity(run_backend_bin, model, "openvino", feed, tmp_path, "--ov-precision", precision,
                              "--threads", THREADS, env=env)
    assert done.returncode == 0, describe(done)
    assert_same_bytes(from_file, direct, f"{model.name} at {precision}: m.ovc against the direct run")
    assert_same_bytes(from_file, python_openvino(model, feed, precision),
                      f"{model.name} at {precision}: m.ovc against OpenVINO (Python)")


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("model", CONVERTIBLE, ids=model_id)
def test_mark_fused_keeps_final_outputs_bit_identical(run_backend_bin, model, precision, tmp_path):
    """--ov-outputs mark fused marks only tensors the plain compiled model's layers write out, in the type they
    write them: the graph outputs stay byte for byte those of the plain run (`mark all` moves them:
    docs/openvino-layerwise.md)."""
    env = openvino_env(run_backend_bin)
    feed = make_inputs(model)
    flags = ("--ov-precision", precision, "--threads", THREADS)
    done, plain = run_parity(run_backend_bin, model, "openvino", feed, tmp_path, *flags, env=env)
    assert done.returncode == 0, describe(done)
    done, fused = run_parity(run_backend_bin, model, "openvino", feed, tmp_path, *flags, "--mark-fused", env=env)
    assert done.returncode == 0, describe(done)
    assert set(plain) <= set(fused), describe(done)
    assert_same_bytes({name: fused[name] for name in plain}, plain, f"{model.name} at {precision}: mark fused")
