"""Parity's ONNX Runtime runner (`--onnxrt`, C API through dlopen) against its peers.

1. Bit for bit against the `onnxruntime` Python package, for the same model, inputs and session
   options, on every model in ../shared/models and examples/models (plain outputs, and every
   intermediate tensor marked as an output the way Polygraphy's `--onnx-outputs mark all` does);
   and layerwise runs cut into pieces under a small memory budget against the one-piece run.
2. Against Parity's reference runner within rtol 1e-3 / atol 1e-4 on the same models plus the
   ONNX "light" models (../shared/onnx-tests/light).
3. Where the library is missing: `--onnxrt` fails with one clear message, `--ref` still runs.
4. The library search's cache (${XDG_CACHE_HOME}/parity/onnxruntime-library.cache): a remembered
   interpreter is not started again, a stale or corrupt cache is resolved again, and with no Python on
   PATH the interpreter scripts/setup.sh recorded is used.

The tool under test is $PARITY_RUN_BACKEND, else build/release/tests/peers/parity_run_backend (the
CMake target `parity_run_backend`). Tests fail, never skip, when it is missing.
"""

import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = (REPO_ROOT / ".." / "shared").resolve()
TIMEOUT_S = 600

PEER_MODELS = sorted((SHARED / "models").glob("*.onnx")) + sorted((REPO_ROOT / "examples" / "models").glob("*.onnx"))
LIGHT_MODELS = sorted((SHARED / "onnx-tests" / "light").glob("*.onnx"))

# Inputs the models document (../shared/models/README.md); other dims: symbolic -> 1 (batch 2 for
# the example models, to exercise dynamic batch), values uniform in [0, 1) like Polygraphy's default.
INPUT_OVERRIDES = {
    "magika_standard_v3_3.onnx": {"bytes": ((1, 2048), (0, 257))},
    "ppocrv4_det.onnx": {"x": ((1, 3, 320, 320), None)},
    "silero_vad_v5.onnx": {"input": ((1, 512), None), "state": ((2, 1, 128), None), "sr": ((), 16000)},
    "silero_vad_op18_ifless.onnx": {"input": ((1, 512), None), "state": ((2, 1, 128), None), "sr": ((), 16000)},
}
EXAMPLE_BATCH = 2

# ORT vs ref: rtol 1e-3 / atol 1e-4 everywhere (the tolerance); no case needs other values.
RTOL, ATOL = 1e-3, 1e-4

# Session options the peer comparisons cover: (graph optimization level, intra-op threads).
SESSION_CONFIGS = [("all", 0), ("basic", 1), ("disable", 2)]
ORT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}

NP_TYPES = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64, onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32, onnx.TensorProto.INT16: np.int16,
    onnx.TensorProto.INT8: np.int8, onnx.TensorProto.UINT8: np.uint8, onnx.TensorProto.BOOL: np.bool_,
}


def model_id(path: Path) -> str:
    return path.name


@pytest.fixture(scope="session")
def run_backend_bin() -> Path:
    configured = os.environ.get("PARITY_RUN_BACKEND")
    candidates = [Path(configured)] if configured else [
        REPO_ROOT / "build" / "release" / "tests" / "peers" / "parity_run_backend"]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    pytest.fail(f"parity_run_backend not found at {' or '.join(map(str, candidates))}: build the CMake target "
                f"parity_run_backend or point PARITY_RUN_BACKEND at it", pytrace=False)


def tool_env(**extra) -> dict:
    env = dict(os.environ)
    env.setdefault("PARITY_PYTHON", str(REPO_ROOT / ".venv" / "bin" / "python"))
    env.setdefault("NO_COLOR", "1")
    env.update(extra)
    return env


def make_inputs(model_path: Path, seed: int = 1) -> dict:
    model = onnx.load(str(model_path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    overrides = INPUT_OVERRIDES.get(model_path.name, {})
    example = model_path.parent == REPO_ROOT / "examples" / "models"
    rng = np.random.RandomState(seed)
    feed = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        dtype = NP_TYPES[tensor_type.elem_type]
        shape, values = overrides.get(value.name, (None, None))
        if shape is None:
            shape = tuple(d.dim_value if d.HasField("dim_value") else (EXAMPLE_BATCH if example else 1)
                          for d in tensor_type.shape.dim)
        if isinstance(values, int):
            feed[value.name] = np.full(shape, values, dtype=dtype)
        elif isinstance(values, tuple):
            feed[value.name] = rng.randint(values[0], values[1], size=shape).astype(dtype)
        elif np.issubdtype(dtype, np.floating):
            feed[value.name] = rng.random_sample(shape).astype(dtype)
        elif dtype == np.bool_:
            feed[value.name] = rng.randint(0, 2, size=shape).astype(np.bool_)
        else:
            feed[value.name] = rng.randint(0, 2, size=shape).astype(dtype)
    return feed


def run_parity(binary: Path, model: Path, runner: str, feed: dict, tmp_path: Path, *flags, env=None):
    """Runs parity_run_backend; returns (CompletedProcess, {name: array} or None)."""
    inputs, outputs = tmp_path / f"in-{runner}.npz", tmp_path / f"out-{runner}.npz"
    np.savez(inputs, **feed)
    if outputs.exists():
        outputs.unlink()
    command = [str(binary), str(model), f"--{runner}", "--inputs", str(inputs), "--outputs", str(outputs),
               *map(str, flags)]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=TIMEOUT_S, env=env or tool_env())
    result = None
    if done.returncode == 0:
        with np.load(outputs, allow_pickle=False) as data:
            result = {name: data[name] for name in data.files}
    return done, result


def describe(done) -> str:
    return f"$ {' '.join(done.args)}\nexit code {done.returncode}\n--- stdout ---\n{done.stdout[-3000:]}\n" \
           f"--- stderr ---\n{done.stderr[-3000:]}"


def python_session(model_bytes_or_path, level: str, threads: int):
    options = ort.SessionOptions()
    options.graph_optimization_level = ORT_LEVELS[level]
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(model_bytes_or_path, options, providers=["CPUExecutionProvider"])


def assert_bitwise_equal(parity: dict, python: dict, context: str):
    assert list(parity) == list(python), f"{context}: output names differ: {list(parity)} vs {list(python)}"
    for name, expected in python.items():
        got = parity[name]
        assert got.dtype == expected.dtype, f"{context}: '{name}' dtype {got.dtype} vs {expected.dtype}"
        assert got.shape == expected.shape, f"{context}: '{name}' shape {got.shape} vs {expected.shape}"
        same = got.tobytes() == expected.tobytes()
        if not same:
            difference = np.abs(got.astype(np.float64) - expected.astype(np.float64))
            pytest.fail(f"{context}: '{name}' differs from onnxruntime (Python) in {np.count_nonzero(difference)} of "
                        f"{difference.size} elements (max abs difference {np.nanmax(difference)})", pytrace=False)


def mark_all_outputs(model_path: Path) -> tuple:
    """The model with every node output of the main graph appended to the graph outputs (no types,
    as Polygraphy's ModifyOutputs(MARK_ALL) leaves unknown ones), and the names in order."""
    model = onnx.load(str(model_path))
    existing = [o.name for o in model.graph.output]
    names = list(existing)
    for node in model.graph.node:
        for output in node.output:
            if output and output not in names:
                names.append(output)
                model.graph.output.append(onnx.ValueInfoProto(name=output))
    return model, names


# --- 1. Parity's ORT == the onnxruntime Python package, bit for bit ---------------------------

@pytest.mark.parametrize("level,threads", SESSION_CONFIGS, ids=[f"{l}-t{t}" for l, t in SESSION_CONFIGS])
@pytest.mark.parametrize("model", PEER_MODELS, ids=model_id)
def test_outputs_identical_to_python_onnxruntime(run_backend_bin, model, level, threads, tmp_path):
    feed = make_inputs(model)
    done, parity = run_parity(run_backend_bin, model, "onnxrt", feed, tmp_path, "--ort-opt-level", level,
                              "--threads", threads)
    assert done.returncode == 0, describe(done)
    session = python_session(str(model), level, threads)
    names = [o.name for o in session.get_outputs()]
    python = dict(zip(names, session.run(None, feed)))
    assert_bitwise_equal(parity, python, f"{model.name} ({level}, {threads} threads)")


@pytest.mark.parametrize("model", PEER_MODELS, ids=model_id)
def test_mark_all_identical_to_python_onnxruntime(run_backend_bin, model, tmp_path):
    """Every intermediate tensor, all marked at once (a budget no tensor set reaches), equals the
    Python package running the model with every tensor marked as a graph output."""
    feed = make_inputs(model)
    done, parity = run_parity(run_backend_bin, model, "onnxrt", feed, tmp_path, "--mark-all", "--threads", 1,
                              "--budget", 1 << 40)
    assert done.returncode == 0, describe(done)
    marked, names = mark_all_outputs(model)
    session = python_session(marked.SerializeToString(), "all", 1)
    python = {name: value for name, value in zip([o.name for o in session.get_outputs()], session.run(None, feed))
              if isinstance(value, np.ndarray)}
    # Parity hands out tensors (sequences are left out, as the reference runner does).
    python = {name: python[name] for name in names if name in python}
    assert_bitwise_equal(parity, python, f"{model.name} (mark all)")


# Budgets that cut each model into many pieces (one node per piece for the small ones).
LAYERWISE_BUDGETS = {"ppocrv4_det.onnx": 8 << 20}


# Two light models: their weights come from ConstantOfShape nodes, constants ONNX Runtime folds
# (a piece must see them as constants too, or its kernels differ).
LAYERWISE_LIGHT = [m for m in LIGHT_MODELS if m.name in ("light_resnet50.onnx", "light_squeezenet.onnx")]


@pytest.mark.parametrize("model", PEER_MODELS + LAYERWISE_LIGHT, ids=model_id)
def test_batched_layerwise_gives_the_same_tensors_as_all_at_once(run_backend_bin, model, tmp_path):
    """Every intermediate tensor streamed from pieces that fit a small budget equals the one-piece
    mark-all run bit for bit (ONNX Runtime level 'extended'; at 'all' its NCHWc layout rewrites
    depend on piece boundaries, see onnxrt_runner.h)."""
    feed = make_inputs(model)
    done, at_once = run_parity(run_backend_bin, model, "onnxrt", feed, tmp_path, "--mark-all", "--budget", 1 << 40,
                               "--ort-opt-level", "extended")
    assert done.returncode == 0, describe(done)
    done, batched = run_parity(run_backend_bin, model, "onnxrt", feed, tmp_path, "--stream", "--budget",
                               LAYERWISE_BUDGETS.get(model.name, 1), "--ort-opt-level", "extended")
    assert done.returncode == 0, describe(done)
    streamed = {name[len("stream:"):]: value for name, value in batched.items() if name.startswith("stream:")}
    assert sorted(streamed) == sorted(at_once), f"{model.name}: streamed tensors differ from the marked ones"
    for name, value in at_once.items():
        assert value.dtype == streamed[name].dtype and value.shape == streamed[name].shape, name
        assert value.tobytes() == streamed[name].tobytes(), f"{model.name}: '{name}' differs between pieces and one run"


# --- 2. Parity's ORT ~= Parity's reference runner ----------------------------------------------

def assert_close(ort_outputs: dict, ref_outputs: dict, context: str):
    assert list(ort_outputs) == list(ref_outputs), \
        f"{context}: output names differ: onnxrt {list(ort_outputs)} vs ref {list(ref_outputs)}"
    for name, expected in ref_outputs.items():
        got = ort_outputs[name]
        assert got.dtype == expected.dtype, f"{context}: '{name}' dtype onnxrt {got.dtype} vs ref {expected.dtype}"
        assert got.shape == expected.shape, f"{context}: '{name}' shape onnxrt {got.shape} vs ref {expected.shape}"
        if np.issubdtype(expected.dtype, np.floating):
            ok = np.isclose(got, expected, rtol=RTOL, atol=ATOL, equal_nan=True)
            if not ok.all():
                difference = np.abs(got.astype(np.float64) - expected.astype(np.float64))
                pytest.fail(f"{context}: '{name}' onnxrt vs ref: {np.count_nonzero(~ok)} of {ok.size} elements "
                            f"beyond rtol {RTOL} / atol {ATOL} (max abs difference {np.nanmax(difference)})",
                            pytrace=False)
        else:
            assert np.array_equal(got, expected), f"{context}: '{name}' onnxrt and ref differ"


@pytest.mark.parametrize("model", PEER_MODELS + LIGHT_MODELS, ids=model_id)
def test_onnxrt_matches_ref(run_backend_bin, model, tmp_path):
    feed = make_inputs(model)
    done, ort_outputs = run_parity(run_backend_bin, model, "onnxrt", feed, tmp_path)
    assert done.returncode == 0, describe(done)
    done, ref_outputs = run_parity(run_backend_bin, model, "ref", feed, tmp_path)
    assert done.returncode == 0, f"the reference runner failed on {model.name}:\n{describe(done)}"
    assert_close(ort_outputs, ref_outputs, model.name)


# --- 3. No library ------------------------------------------------------------------------------

def test_missing_library_flag_gives_one_clear_message(run_backend_bin, examples_model, tmp_path):
    missing = tmp_path / "nowhere" / "libonnxruntime.so.1.30.0"
    feed = make_inputs(examples_model)
    done, _ = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, "--ort-library", missing)
    assert done.returncode == 1, describe(done)
    errors = [line for line in done.stderr.splitlines() if line.startswith("[E] ")]
    assert len(errors) == 1, describe(done)
    message = errors[0]
    assert "ONNX Runtime library not found" in message, message
    assert str(missing) in message and "no such file" in message, message
    assert "--ort-library" in message and "PARITY_ORT_LIBRARY" in message, message
    assert "Traceback" not in done.stderr and "terminate called" not in done.stderr


def test_missing_library_environment_variable(run_backend_bin, examples_model, tmp_path):
    missing = tmp_path / "no-ort-here"
    feed = make_inputs(examples_model)
    env = tool_env(PARITY_ORT_LIBRARY=str(missing))
    done, _ = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, env=env)
    assert done.returncode == 1, describe(done)
    assert "ONNX Runtime library not found" in done.stderr and str(missing) in done.stderr, describe(done)
    # Other backends are unaffected: ONNX Runtime is only loaded when an onnxrt runner activates.
    done, outputs = run_parity(run_backend_bin, examples_model, "ref", feed, tmp_path, env=env)
    assert done.returncode == 0, describe(done)
    assert outputs, "the reference runner produced no outputs"


def test_no_python_package_and_no_system_library(run_backend_bin, examples_model, tmp_path):
    """With no flag, no variable, a Python without onnxruntime and nothing on the library path,
    the message lists each place looked."""
    feed = make_inputs(examples_model)
    env = tool_env(PARITY_PYTHON=str(tmp_path / "no-python"), LD_LIBRARY_PATH=str(tmp_path))
    env.pop("PARITY_ORT_LIBRARY", None)
    done, _ = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, env=env)
    if done.returncode == 0:
        pytest.fail("ONNX Runtime was found on the system library path; this check needs a machine without one",
                    pytrace=False)
    assert done.returncode == 1, describe(done)
    assert "onnxruntime Python package" in done.stderr and "system library path" in done.stderr, describe(done)


# --- 4. The remembered library: no Python started once an interpreter has been asked --------------

CACHE_HEADER = "parity onnxruntime-library cache 1"


def counting_python(folder: Path, marker: Path, real: str) -> Path:
    """A python3 outside any venv that records each run in `marker`, then runs `real`."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "python3"
    script.write_text(f"#!/bin/sh\necho run >> '{marker}'\nexec '{real}' \"$@\"\n")
    script.chmod(0o755)
    return script


def runs_of(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def cache_env(tmp_path: Path, path: str) -> dict:
    env = tool_env(PATH=path, XDG_CACHE_HOME=str(tmp_path / "cache"))
    for name in ("PARITY_PYTHON", "PARITY_ORT_LIBRARY", "PYTHONPATH", "PYTHONHOME"):
        env.pop(name, None)
    return env


def cache_file(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "parity" / "onnxruntime-library.cache"


def venv_library() -> str:
    return str(next((Path(ort.__file__).parent / "capi").glob("libonnxruntime.so.*")))


def test_cache_used_without_running_python(run_backend_bin, examples_model, tmp_path):
    marker = tmp_path / "python-runs"
    python = counting_python(tmp_path / "bin", marker, str(REPO_ROOT / ".venv" / "bin" / "python"))
    env = cache_env(tmp_path, str(tmp_path / "bin"))
    feed = make_inputs(examples_model)
    done, first = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, "-v", env=env)
    assert done.returncode == 0, describe(done)
    assert runs_of(marker) == 1, "the first run asks the interpreter"
    records = cache_file(tmp_path).read_text().splitlines()
    assert records[0] == CACHE_HEADER and len(records) == 2, records
    assert records[1].split("\t")[0] == str(python) and venv_library() in records[1].split("\t"), records
    done, second = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, "-v", env=env)
    assert done.returncode == 0, describe(done)
    assert runs_of(marker) == 1, f"the remembered library must not start Python again\n{describe(done)}"
    assert f"as remembered in {cache_file(tmp_path)}" in done.stdout + done.stderr, describe(done)
    assert_bitwise_equal(second, first, "second run")


def test_cache_pointing_to_a_deleted_library_is_resolved_again(run_backend_bin, examples_model, tmp_path):
    marker = tmp_path / "python-runs"
    counting_python(tmp_path / "bin", marker, str(REPO_ROOT / ".venv" / "bin" / "python"))
    env = cache_env(tmp_path, str(tmp_path / "bin"))
    feed = make_inputs(examples_model)
    done, _ = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, env=env)
    assert done.returncode == 0 and runs_of(marker) == 1, describe(done)
    deleted = tmp_path / "deleted" / Path(venv_library()).name
    text = cache_file(tmp_path).read_text()
    assert venv_library() in text
    cache_file(tmp_path).write_text(text.replace(venv_library(), str(deleted)))
    done, _ = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, env=env)
    assert done.returncode == 0, describe(done)
    assert runs_of(marker) == 2, "a record naming a deleted library is stale: the interpreter is asked again"
    text = cache_file(tmp_path).read_text()
    assert venv_library() in text and str(deleted) not in text, text


def test_cache_corrupt_file_is_ignored_and_rewritten(run_backend_bin, examples_model, tmp_path):
    marker = tmp_path / "python-runs"
    counting_python(tmp_path / "bin", marker, str(REPO_ROOT / ".venv" / "bin" / "python"))
    env = cache_env(tmp_path, str(tmp_path / "bin"))
    cache_file(tmp_path).parent.mkdir(parents=True)
    cache_file(tmp_path).write_bytes(b"\x00\xffnot a cache\n\tat all")
    feed = make_inputs(examples_model)
    done, _ = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, env=env)
    assert done.returncode == 0 and runs_of(marker) == 1, describe(done)
    assert cache_file(tmp_path).read_text().splitlines()[0] == CACHE_HEADER
    done, _ = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, env=env)
    assert done.returncode == 0 and runs_of(marker) == 1, describe(done)


def test_cache_with_no_python_on_path_uses_the_setup_record(run_backend_bin, examples_model, tmp_path):
    """No python3 on PATH (a plain shell without the venv): the interpreter scripts/setup.sh
    recorded is used, and once remembered it is not started again."""
    marker = tmp_path / "python-runs"
    python = counting_python(tmp_path / "elsewhere", marker, str(REPO_ROOT / ".venv" / "bin" / "python"))
    record = tmp_path / "cache" / "parity" / "setup-python"
    record.parent.mkdir(parents=True)
    record.write_text(f"{python}\n")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = cache_env(tmp_path, str(empty))
    feed = make_inputs(examples_model)
    for expected_runs in (1, 1):
        done, outputs = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, "-v", env=env)
        assert done.returncode == 0, describe(done)
        assert outputs, "no outputs"
        assert runs_of(marker) == expected_runs, describe(done)
        assert f"recorded by scripts/setup.sh in {record}" in done.stdout + done.stderr, describe(done)
    # The venv's own interpreter, as setup.sh records it, is answered without starting it at all.
    record.write_text(f"{REPO_ROOT / '.venv' / 'bin' / 'python'}\n")
    done, outputs = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, env=env)
    assert done.returncode == 0, describe(done)


def test_cache_named_in_the_missing_library_message(run_backend_bin, examples_model, tmp_path):
    """A Python without onnxruntime, no setup record, nothing on the library path: the one message
    lists each place, and the second time says the answer came from the cache."""
    marker = tmp_path / "python-runs"
    # A Python that answers as one without onnxruntime does (an empty package line, then sys.path).
    (tmp_path / "site").mkdir()
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.write_text(f"#!/bin/sh\necho run >> '{marker}'\nprintf '\\n%s\\n' '{tmp_path / 'site'}'\n")
    python.chmod(0o755)
    env = cache_env(tmp_path, str(tmp_path / "bin"))
    env["LD_LIBRARY_PATH"] = str(tmp_path)
    feed = make_inputs(examples_model)
    for expected_runs in (1, 1):
        done, _ = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, env=env)
        assert done.returncode == 1, describe(done)
        assert runs_of(marker) == expected_runs, describe(done)
        errors = [line for line in done.stderr.splitlines() if line.startswith("[E] ")]
        assert len(errors) == 1, describe(done)
        message = errors[0]
        assert "ONNX Runtime library not found" in message, message
        assert "the onnxruntime Python package of python3 at" in message, message
        assert "that Python has no onnxruntime package" in message, message
        assert f"recorded by scripts/setup.sh in {tmp_path / 'cache' / 'parity' / 'setup-python'}" in message, message
        assert "system library path" in message, message
    assert f"as remembered in {cache_file(tmp_path)}" in message, message


@pytest.fixture(scope="session")
def examples_model() -> Path:
    return REPO_ROOT / "examples" / "models" / "small_cnn.onnx"


def test_unknown_provider_is_a_clear_error(run_backend_bin, examples_model, tmp_path):
    feed = make_inputs(examples_model)
    done, _ = run_parity(run_backend_bin, examples_model, "onnxrt", feed, tmp_path, "--providers", "nosuchprovider")
    assert done.returncode == 1, describe(done)
    assert "could not find the ONNX Runtime execution provider 'nosuchprovider'" in done.stderr, describe(done)
    assert "CPUExecutionProvider" in done.stderr, describe(done)


def test_invalid_model_error_carries_onnxruntime_text_and_context(run_backend_bin, tmp_path):
    # A Conv with a wrong-rank weight: the ONNX checker in ONNX Runtime rejects it at session creation.
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 4, 4])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    graph = onnx.helper.make_graph([onnx.helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery")], "g", [x], [y])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "bad.onnx"
    onnx.save(model, str(path))
    feed = {"x": np.zeros((1, 1, 4, 4), np.float32)}
    done, _ = run_parity(run_backend_bin, path, "onnxrt", feed, tmp_path)
    assert done.returncode == 1, describe(done)
    errors = [line for line in done.stderr.splitlines() if line.startswith("[E] ")]
    assert len(errors) == 1, describe(done)
    assert "onnxrt-runner-N0" in errors[0] and str(path) in errors[0], errors[0]
    assert "NoSuchOp" in errors[0] and "ONNX Runtime error while creating the session" in errors[0], errors[0]
