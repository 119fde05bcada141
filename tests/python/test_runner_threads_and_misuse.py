"""Runners used from several threads and misused (issue 39): deactivate() racing infer() on another
thread, two infer() calls at once on one runner, infer() before activate(), a bad save_inputs_path,
a hostile model handed to InferShapes. Each gives a result or Parity's clear exception, never a
crash, for every runner (ref, onnxrt, openvino)."""
import subprocess
import sys
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
from parity.backend.openvino import OpenVINORunner
from parity.backend.ref import RefRunner
from parity.comparator import Comparator, DataLoader
from parity.exception import FileError, InvalidInputError

RUNNERS = {
    "ref": lambda model: RefRunner(model),
    "onnxrt": lambda model: OnnxrtRunner(SessionFromOnnx(model)),
    "openvino": lambda model: OpenVINORunner(model, precision="f32"),
}
JOIN_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def scaled_model(tmp_path_factory):
    """y = x * 3 on [64, 256] float32: each thread's feed gives outputs only it can have produced."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "three"], ["y"], name="scale")], "scaled",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])],
        [helper.make_tensor("three", TensorProto.FLOAT, [], [3.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("threads") / "scaled.onnx"
    onnx.save(model, str(path))
    return str(path)


def run_threads(targets):
    threads = [threading.Thread(target=target) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=JOIN_TIMEOUT_S)
    assert not any(thread.is_alive() for thread in threads), "a thread is still running"


@pytest.mark.parametrize("kind", sorted(RUNNERS))
def test_deactivate_racing_infer_gives_a_clear_error(scaled_model, kind):
    """One thread infers in a loop while another deactivates: each infer either returns the right
    values or raises the inactive-runner error (deactivate() freed the model under a running
    infer(): SIGSEGV)."""
    for round_index in range(5):
        runner = RUNNERS[kind](scaled_model)
        runner.activate()
        started = threading.Event()
        outcomes = []

        def infer_loop():
            for i in range(200):
                value = float(i % 7)
                try:
                    y = runner.infer({"x": np.full((64, 256), value, np.float32)})["y"]
                except InvalidInputError as error:
                    outcomes.append(str(error))
                    return
                finally:
                    started.set()
                outcomes.append(bool(np.all(y == 3.0 * value)))

        def deactivate():
            started.wait(timeout=JOIN_TIMEOUT_S)
            runner.deactivate()

        run_threads([infer_loop, deactivate])
        assert all(outcome is True for outcome in outcomes[:-1]), (round_index, outcomes[:5])
        assert outcomes[-1] is True or "needs an active runner" in outcomes[-1], (round_index, outcomes[-1])
        assert not runner.is_active


@pytest.mark.parametrize("kind", sorted(RUNNERS))
def test_concurrent_infer_on_one_runner_is_serialized(scaled_model, kind):
    """Two threads infer on one runner at once: every call returns its own feed's values (OpenVINO
    raised "Infer Request is busy"; the others had no rule): calls on one runner are serialized."""
    results = {0: [], 1: []}
    errors = []
    with RUNNERS[kind](scaled_model) as runner:
        def work(key):
            try:
                for i in range(30):
                    value = float(key * 100 + i)
                    y = runner.infer({"x": np.full((64, 256), value, np.float32)})["y"]
                    results[key].append(bool(np.all(y == 3.0 * value)))
            except Exception as error:  # noqa: BLE001 (collected and reported below)
                errors.append(f"{type(error).__name__}: {error}")

        run_threads([lambda: work(0), lambda: work(1)])
    assert not errors, errors
    assert results[0] == [True] * 30 and results[1] == [True] * 30


@pytest.mark.parametrize("kind", sorted(RUNNERS))
def test_infer_before_activate_is_invalid_input(scaled_model, kind):
    runner = RUNNERS[kind](scaled_model)
    with pytest.raises(InvalidInputError, match="call activate\\(\\) first"):
        runner.infer({"x": np.zeros((64, 256), np.float32)})


def test_bad_save_inputs_path_is_a_file_error(scaled_model, tmp_path):
    target = tmp_path / "no_such_folder" / "inputs.json"
    with pytest.raises(FileError, match="no_such_folder"):
        Comparator.run([RefRunner(scaled_model)], data_loader=DataLoader(iterations=1), save_inputs_path=str(target))


def test_infer_shapes_on_int64_slice_steps_does_not_crash(tmp_path):
    """Python InferShapes on Shape -> Slice with steps INT64_MAX (ONNX's data propagation crashed on
    it): shape inference runs without data propagation. In a child, so a crash is a failure here."""
    initializers = [helper.make_tensor(name, TensorProto.INT64, [1], [value])
                    for name, value in (("starts", 0), ("ends", 2**63 - 1), ("axes", 0), ("steps", 2**63 - 1))]
    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["shape"]),
         helper.make_node("Slice", ["shape", "starts", "ends", "axes", "steps"], ["y"], name="hostile_slice")],
        "hostile_slice", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [None])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "slice.onnx"
    onnx.save(model, str(path))
    script = ("import sys; from parity.backend.onnx import InferShapes, OnnxFromPath; "
              "model = InferShapes(OnnxFromPath(sys.argv[1]))(); print('inferred')")
    result = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    assert "inferred" in result.stdout
    assert "node 'hostile_slice' (Slice)" in result.stdout + result.stderr
