"""Runner semantics from Python: zero-copy outputs that never change, memory, logging order, bad
input as exceptions (never a crash), imports in any order."""
import ctypes
import gc
import itertools
import subprocess
import sys
import threading

import numpy as np
import pytest

from parity import _parity
from parity.backend.onnx import ModifyOutputs, OnnxFromPath
from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
from parity.backend.ref import RefRunner
from parity.comparator import Comparator, DataLoader
from parity.exception import InvalidInputError, ParityException, UnsupportedError
from parity.logger import G_LOGGER


def _parity_buffer(name):
    """A numpy view of the buffer Parity's last infer() returned for `name`."""
    [(address, size)] = [(a, s) for n, a, s in _parity.last_output_buffers() if n == name]
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))


@pytest.mark.parametrize("runner_class", ["ref", "onnxrt"])
def test_outputs_are_parity_buffers_fresh_per_infer_and_valid_after_deactivate(models, runner_class):
    runner = RefRunner(models["mixed"]) if runner_class == "ref" else OnnxrtRunner(SessionFromOnnx(models["mixed"]))
    x = np.full((1, 3, 4, 4), 0.5, np.float32)
    n = np.arange(4, dtype=np.int64)
    with runner:
        first = runner.infer({"x": x, "n": n})
        assert np.shares_memory(first["y"], _parity_buffer("y"))  # zero-copy: the array is Parity's buffer
        assert np.shares_memory(first["z"], _parity_buffer("z"))
        kept = {name: array.copy() for name, array in first.items()}
        second = runner.infer({"x": x * 4, "n": n + 1})
        assert not np.shares_memory(first["y"], second["y"])  # a fresh buffer per infer()
        assert not np.shares_memory(first["z"], second["z"])
    gc.collect()
    for name in kept:  # unchanged by the later infer() and by deactivate()
        assert np.array_equal(first[name], kept[name])
    assert not np.array_equal(first["y"], second["y"])


def test_output_aliasing_the_input_is_copied(models):
    x = np.ones((1, 1, 2, 2), np.float32)
    with RefRunner(models["identity"]) as runner:
        y = runner.infer({"x": x})["y"]
    x[...] = 7  # the caller reuses its input buffer
    assert np.array_equal(y, np.ones((1, 1, 2, 2), np.float32))


def _resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.parametrize("runner_class", ["ref", "onnxrt"])
def test_memory_of_1000_infer_calls_stays_flat(models, runner_class):
    runner = RefRunner(models["big"]) if runner_class == "ref" else OnnxrtRunner(SessionFromOnnx(models["big"]))
    x = np.ones((256, 1024), np.float32)  # 1 MiB in, 1 MiB out per call
    with runner:
        for _ in range(50):
            runner.infer({"x": x})
        gc.collect()
        before = _resident_bytes()
        for _ in range(1000):
            outputs = runner.infer({"x": x})
        del outputs
        gc.collect()
        after = _resident_bytes()
    # A leaked output or feed per call would be 1000 MiB.
    assert after - before < 64 * 2**20, f"resident memory grew by {(after - before) / 2**20:.1f} MiB"


def test_log_lines_reach_sys_stdout_in_order(models, capsys):
    G_LOGGER.info("before the run")
    Comparator.run([RefRunner(models["identity"])])
    G_LOGGER.warning("after the run")
    out = capsys.readouterr().out
    before = out.index("[I] before the run")
    activating = out.index("Activating and starting inference")
    completed = out.index("Completed 1 iteration(s)")
    after = out.index("[W] after the run")
    assert before < activating < completed < after


def test_indent_applies_to_python_and_cpp_lines(models, capsys):
    with G_LOGGER.indent():
        G_LOGGER.info("inside")
        Comparator.run([RefRunner(models["identity"])])
    G_LOGGER.info("outside")
    lines = capsys.readouterr().out.splitlines()
    assert "[I]     inside" in lines and "[I] outside" in lines
    assert any(line.startswith("[I]     ref-runner") and "Activating" in line for line in lines)


def test_module_severity_dict_sets_per_path_rules(models, capsys):
    """Polygraphy's dict form: "" is the default, each other key a folder or file of Parity's tree
    (C++ calls by their source path, Python callers by theirs); the most specific rule wins."""
    before = G_LOGGER.module_severity
    rules = {"": G_LOGGER.WARNING, "runtime": G_LOGGER.VERBOSE, "tests/python": G_LOGGER.INFO}
    try:
        G_LOGGER.module_severity = dict(rules)
        assert G_LOGGER.module_severity == rules
        G_LOGGER.info("shown: this file's folder has a rule")
        Comparator.run([RefRunner(models["identity"])])
        out = capsys.readouterr().out
        assert "[I] shown: this file's folder has a rule" in out
        assert "[V] Generating data using numpy seed" in out  # runtime/data_loader.cpp, verbose
        assert "Activating and starting inference" not in out  # compare/: the default, WARNING

        G_LOGGER.module_severity = {"runtime": G_LOGGER.VERBOSE}  # no "": INFO, as Polygraphy
        assert G_LOGGER.module_severity == {"": G_LOGGER.INFO, "runtime": G_LOGGER.VERBOSE}
        with pytest.raises(InvalidInputError, match="path"):
            G_LOGGER.module_severity = {"": G_LOGGER.ERROR, "//": G_LOGGER.INFO}  # no path at all
        assert G_LOGGER.module_severity == {"": G_LOGGER.INFO, "runtime": G_LOGGER.VERBOSE}  # unchanged

        G_LOGGER.module_severity = G_LOGGER.ERROR  # a plain severity drops the rules
        assert G_LOGGER.module_severity == G_LOGGER.ERROR
        G_LOGGER.warning("hidden")
        assert "hidden" not in capsys.readouterr().out
    finally:
        G_LOGGER.module_severity = before
    assert G_LOGGER.module_severity == before


def test_critical_raises_parity_exception(capsys):
    with pytest.raises(ParityException, match="something broke"):
        G_LOGGER.critical("something broke")
    assert "[!] something broke" in capsys.readouterr().out


def test_infer_runs_without_the_gil(models):
    """Two threads infer at once on two runners; both finish with the right values (inference
    holding the GIL while a sink or loader needs it would deadlock here)."""
    results = {}

    def work(key, value):
        with OnnxrtRunner(SessionFromOnnx(models["big"])) as runner:
            for _ in range(20):
                results[key] = runner.infer({"x": np.full((256, 1024), value, np.float32)})["y"]

    threads = [threading.Thread(target=work, args=(k, float(k))) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(not t.is_alive() for t in threads)
    for k in range(2):
        assert np.all(results[k] == 2.0 * k)


@pytest.fixture(params=["ref", "onnxrt"])
def active_runner(request, models):
    runner = RefRunner(models["mixed"]) if request.param == "ref" else OnnxrtRunner(SessionFromOnnx(models["mixed"]))
    with runner:
        yield runner


GOOD_X = np.zeros((1, 3, 4, 4), np.float32)
GOOD_N = np.zeros(4, np.int64)


def test_wrong_dtype(active_runner):
    with pytest.raises(InvalidInputError, match="'x'.*float64|float64.*'x'|'x'.*dtype"):
        active_runner.infer({"x": GOOD_X.astype(np.float64), "n": GOOD_N})


def test_wrong_shape(active_runner):
    with pytest.raises(InvalidInputError, match="'x'"):
        active_runner.infer({"x": np.zeros((1, 3, 4, 5), np.float32), "n": GOOD_N})
    with pytest.raises(InvalidInputError, match="'x'"):
        active_runner.infer({"x": np.zeros((3, 4, 4), np.float32), "n": GOOD_N})


def test_missing_and_unknown_inputs(active_runner):
    with pytest.raises(InvalidInputError, match="'n'"):
        active_runner.infer({"x": GOOD_X})
    with pytest.raises(InvalidInputError, match="'nn'"):
        active_runner.infer({"x": GOOD_X, "n": GOOD_N, "nn": GOOD_N})


def test_not_an_array_or_unsupported_arrays(active_runner):
    with pytest.raises(InvalidInputError):
        active_runner.infer([("x", GOOD_X)])
    with pytest.raises(UnsupportedError, match="'x'"):
        active_runner.infer({"x": np.array(["a"] * 48).reshape(1, 3, 4, 4), "n": GOOD_N})


def test_gpu_tensor_is_a_clear_error(active_runner):
    class Device:
        type = "cuda"

        def __str__(self):
            return "cuda:0"

    class CudaTensor:
        device = Device()

    with pytest.raises(InvalidInputError, match="'x'.*cuda:0.*CPU"):
        active_runner.infer({"x": CudaTensor(), "n": GOOD_N})


def test_non_contiguous_input_is_copied(active_runner):
    wide = np.arange(96, dtype=np.float32).reshape(1, 3, 4, 8)
    strided = wide[..., ::2]
    assert not strided.flags.c_contiguous
    outputs = active_runner.infer({"x": strided, "n": GOOD_N})
    expected = active_runner.infer({"x": np.ascontiguousarray(strided), "n": GOOD_N})
    assert np.array_equal(outputs["y"], expected["y"])


def test_infer_before_activate_and_after_deactivate(models):
    for runner in (RefRunner(models["mixed"]), OnnxrtRunner(SessionFromOnnx(models["mixed"]))):
        with pytest.raises(InvalidInputError, match="call activate\\(\\) first"):
            runner.infer({"x": GOOD_X, "n": GOOD_N})
        runner.activate()
        runner.deactivate()
        with pytest.raises(InvalidInputError, match="needs an active runner"):
            runner.infer({"x": GOOD_X, "n": GOOD_N})


def test_unknown_output_name_is_an_error(models):
    runner = OnnxrtRunner(SessionFromOnnx(ModifyOutputs(OnnxFromPath(models["mixed"]), outputs=["no_such_tensor"])))
    with pytest.raises(ParityException, match="no_such_tensor"):
        runner.activate()
    with RefRunner(ModifyOutputs(OnnxFromPath(models["mixed"]), outputs=["no_such_tensor"])) as runner:
        with pytest.raises(InvalidInputError, match="graph output 'no_such_tensor' was not produced"):
            runner.infer({"x": GOOD_X, "n": GOOD_N})


def test_bad_model_and_paths(tmp_path):
    with pytest.raises(ParityException, match="missing.onnx"):
        RefRunner(str(tmp_path / "missing.onnx")).activate()
    (tmp_path / "garbage.onnx").write_bytes(b"not a model")
    with pytest.raises(ParityException, match="garbage.onnx"):
        OnnxrtRunner(SessionFromOnnx(str(tmp_path / "garbage.onnx"))).activate()
    with pytest.raises(TypeError):
        RefRunner(42)


def test_python_runner_errors_become_exceptions(models):
    from parity.backend.base import BaseRunner
    from parity.common import TensorMetadata

    class Broken(BaseRunner):
        def get_input_metadata_impl(self):
            return TensorMetadata().add("x", np.float32, (1, 1, 2, 2))

        def infer_impl(self, feed_dict):
            raise ValueError("custom runner failed on purpose")

    # The runner's own exception reaches the caller unchanged.
    with pytest.raises(ValueError, match="custom runner failed on purpose"):
        Comparator.run([Broken(), RefRunner(models["identity"])])
    with pytest.raises(ParityException, match="negative"):
        Comparator.run([RefRunner(models["identity"])], data_loader=DataLoader(iterations=-1))


@pytest.mark.parametrize("order", list(itertools.permutations(["onnx", "onnxruntime", "parity"])))
def test_imports_in_any_order(models, order):
    script = "\n".join(
        [f"import {name}" for name in order]
        + [
            "import numpy as np",
            "from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx",
            f"model = onnx.load({models['identity']!r})",
            "session = onnxruntime.InferenceSession(model.SerializeToString(), providers=['CPUExecutionProvider'])",
            "x = np.ones((1, 1, 2, 2), np.float32)",
            "with OnnxrtRunner(SessionFromOnnx(model)) as runner:",
            "    assert np.array_equal(runner.infer({'x': x})['y'], session.run(None, {'x': x})[0])",
            "print('ok')",
        ]
    )
    process = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert process.returncode == 0 and process.stdout.strip().endswith("ok"), process.stdout + process.stderr


def test_every_form_of_feed_gives_the_same_outputs(active_runner):
    """Plain contiguous arrays (read-only ones too) are read by the C++ side itself; byte-swapped,
    Fortran-ordered and subclassed arrays through parity._feeds: the same outputs for all."""
    x = np.linspace(-3, 3, 48, dtype=np.float32).reshape(1, 3, 4, 4)
    n = np.array([1, -2, 3, 4], np.int64)
    expected = active_runner.infer({"x": x, "n": n})
    read_only = x.copy()
    read_only.flags.writeable = False
    forms = [x.astype(">f4"), read_only, np.asfortranarray(x), x.view(_Sub), np.float32(x.tolist())]
    for form in forms:
        outputs = active_runner.infer({"x": form, "n": n.astype(">i8")})
        assert np.array_equal(outputs["y"], expected["y"]) and np.array_equal(outputs["z"], expected["z"]), type(form)
    with pytest.raises(InvalidInputError, match="must be strings"):
        active_runner.infer({1: x, "n": n})


class _Sub(np.ndarray):
    pass
