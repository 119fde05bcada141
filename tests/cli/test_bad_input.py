"""`parity inspect model` on bad input: every case must end with exit code 1 and exactly one
clear "[E] ..." line naming the file: no traceback, abort, sanitizer report or signal.

`inspect model` shows a model as declared, as Polygraphy does: a negative dimension or a weight whose
data do not match its dims is displayed (the values, with --show weights, as Polygraphy's
"<error: failed to load weights>" after an "[E] Failed to load weights." line), not refused. Those two
cases therefore go through `surgeon sanitize`, which loads models strictly, and
test_inspect_shows_what_it_cannot_run checks how inspect shows them.

The bad files are generated here, in tmp_path, with the onnx package; none is committed.
External-data cases point at files that exist and hold exactly the bytes the tensor needs,
so the only correct reason to fail is refusing a path that leaves the model's folder.
"""

import os
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_MODEL = REPO_ROOT / "examples" / "models" / "small_cnn.onnx"
MAX_ERROR_LINE = 1000  # "one clear line", not a dump


def save_unchecked(model, path):
    """Writes the model bytes as they are: these models are invalid on purpose."""
    Path(path).write_bytes(model.SerializeToString())
    return Path(path)


def add_model_with_initializer(initializer, input_type, input_shape):
    """y = x + w, with w the given initializer."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", initializer.name], ["y"], name="add")],
        "bad_input",
        [helper.make_tensor_value_info("x", input_type, input_shape)],
        [helper.make_tensor_value_info("y", input_type, None)],
        initializer=[initializer])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def external_tensor(name, data_type, dims, location, length=None):
    tensor = TensorProto()
    tensor.name = name
    tensor.data_type = data_type
    tensor.dims.extend(dims)
    entries = [("location", location), ("offset", "0")]
    if length is not None:
        entries.append(("length", str(length)))
    for key, value in entries:
        entry = tensor.external_data.add()
        entry.key = key
        entry.value = value
    tensor.data_location = TensorProto.EXTERNAL
    return tensor


WEIGHTS = np.arange(1, 5, dtype=np.float32) * 0.25  # the bytes the external files hold


# --- case builders: each takes tmp_path and returns the path to hand to the binary ----------
def missing_file(tmp_path):
    return tmp_path / "does_not_exist.onnx"


def empty_file(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    return path


def random_bytes(tmp_path):
    data = np.random.default_rng(1234).bytes(4096)
    with pytest.raises(Exception):  # make sure it really is not a model
        onnx.load_model_from_string(data)
    path = tmp_path / "random.onnx"
    path.write_bytes(data)
    return path


def truncated_model(tmp_path):
    data = EXAMPLE_MODEL.read_bytes()
    half = data[: len(data) // 2]
    with pytest.raises(Exception):
        onnx.load_model_from_string(half)
    path = tmp_path / "truncated.onnx"
    path.write_bytes(half)
    return path


def external_data_parent_dir(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (tmp_path / "outside.bin").write_bytes(WEIGHTS.tobytes())
    weight = external_tensor("w", TensorProto.FLOAT, [4], "../outside.bin", WEIGHTS.nbytes)
    model = add_model_with_initializer(weight, TensorProto.FLOAT, [4])
    return save_unchecked(model, model_dir / "escape_parent.onnx")


def external_data_absolute(tmp_path):
    size = os.path.getsize("/etc/passwd")
    assert size > 0
    weight = external_tensor("w", TensorProto.UINT8, [size], "/etc/passwd")
    model = add_model_with_initializer(weight, TensorProto.UINT8, [size])
    return save_unchecked(model, tmp_path / "escape_absolute.onnx")


def external_data_symlink(tmp_path):
    model_dir = tmp_path / "model"
    secret_dir = tmp_path / "secret"
    model_dir.mkdir()
    secret_dir.mkdir()
    (secret_dir / "weights.bin").write_bytes(WEIGHTS.tobytes())
    (model_dir / "weights.bin").symlink_to(secret_dir / "weights.bin")
    weight = external_tensor("w", TensorProto.FLOAT, [4], "weights.bin", WEIGHTS.nbytes)
    model = add_model_with_initializer(weight, TensorProto.FLOAT, [4])
    return save_unchecked(model, model_dir / "escape_symlink.onnx")


def negative_dimension(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "negative_dim",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    graph.input[0].type.tensor_type.shape.dim[0].dim_value = -5
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_value == -5
    return save_unchecked(model, tmp_path / "negative_dim.onnx")


def huge_declared_initializer(tmp_path):
    weight = TensorProto()
    weight.name = "w"
    weight.data_type = TensorProto.FLOAT
    weight.dims.extend([1_000_000, 1_000_000, 1_000_000])
    weight.raw_data = np.float32(1.5).tobytes()  # 4 bytes for 10^18 elements
    model = add_model_with_initializer(weight, TensorProto.FLOAT, [1])
    return save_unchecked(model, tmp_path / "huge_initializer.onnx")


def directory(tmp_path):
    path = tmp_path / "a_directory.onnx"
    path.mkdir()
    return path


CASES = {
    "missing_file": missing_file,
    "empty_file": empty_file,
    "random_bytes": random_bytes,
    "truncated_model": truncated_model,
    "external_data_parent_dir": external_data_parent_dir,
    "external_data_absolute_path": external_data_absolute,
    "external_data_symlink_outside": external_data_symlink,
    "negative_dimension": negative_dimension,
    "huge_declared_initializer": huge_declared_initializer,
    "directory": directory,
}


# Cases refused by the strict loader (every command that runs or rewrites a model), not by inspect.
STRICT_LOAD_CASES = {"negative_dimension", "huge_declared_initializer"}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(inspect_model, run_parity, tmp_path, case):
    path = CASES[case](tmp_path)
    if case in STRICT_LOAD_CASES:
        run = run_parity("surgeon", "sanitize", path, "-o", tmp_path / "sanitized.onnx", timeout=60)
    else:
        run = inspect_model(path, timeout=60)

    assert run.returncode >= 0, f"killed by signal {-run.returncode}\n{run.describe()}"
    assert not run.crash_markers(), \
        f"crash markers {run.crash_markers()} in the output\n{run.describe()}"
    assert run.returncode == 1, f"expected exit code 1\n{run.describe()}"

    errors = run.lines("[E]")
    assert len(errors) == 1, f"expected exactly one [E] line, got {len(errors)}\n{run.describe()}"
    error = errors[0]
    assert error.startswith("[E] ") and len(error.strip()) > len("[E] ") + 10, \
        f"error line says nothing useful: {error!r}\n{run.describe()}"
    assert len(error) < MAX_ERROR_LINE, f"error line is {len(error)} characters long\n{run.describe()}"
    assert path.name in error, f"error line does not name the file {path.name}\n{run.describe()}"
    if case == "external_data_absolute_path":
        assert "root:" not in run.output, f"/etc/passwd leaked into the output\n{run.describe()}"


def test_inspect_shows_what_it_cannot_run(inspect_model, tmp_path):
    """A negative dim is printed as declared; an initializer claiming 10^18 elements is listed with
    its dims, and only reading its values fails, as Polygraphy's error line and placeholder."""
    run = inspect_model(negative_dimension(tmp_path))
    assert run.returncode == 0 and not run.crash_markers(), run.describe()
    assert "{x [dtype=float32, shape=(-5, 3)]}" in run.stdout, run.describe()

    path = huge_declared_initializer(tmp_path)
    run = inspect_model(path, "--show", "layers")
    assert run.returncode == 0 and not run.lines("[E]"), run.describe()
    assert "{w [dtype=float32, shape=(1000000, 1000000, 1000000)]}" in run.stdout, run.describe()
    run = inspect_model(path, "--show", "weights")
    assert run.returncode == 0 and not run.crash_markers(), run.describe()
    assert run.lines("[E]") == ["[E] Failed to load weights."], run.describe()
    assert "Initializer | w [dtype=float32, shape=[1000000, 1000000, 1000000]] | Values:\n" \
           "        <error: failed to load weights>" in run.stdout, run.describe()


@pytest.mark.parametrize("location", ["weights.bin", "data/weights.bin"])
def test_external_data_inside_folder_is_accepted(inspect_model, tmp_path, location):
    """Control for the refusals above: external data that stays in the model's folder loads,
    and its values are the file's."""
    model_dir = tmp_path / "model"
    (model_dir / location).parent.mkdir(parents=True)
    (model_dir / location).write_bytes(WEIGHTS.tobytes())
    weight = external_tensor("w", TensorProto.FLOAT, [4], location, WEIGHTS.nbytes)
    path = save_unchecked(add_model_with_initializer(weight, TensorProto.FLOAT, [4]),
                          model_dir / "inside.onnx")
    loaded = onnx.load(str(path))  # the onnx package accepts it too
    assert np.array_equal(onnx.numpy_helper.to_array(loaded.graph.initializer[0]), WEIGHTS)

    run = inspect_model(path, "--show", "weights")
    assert run.returncode == 0, f"expected exit code 0\n{run.describe()}"
    assert not run.lines("[E]") and not run.crash_markers(), run.describe()
    lines = run.stdout.splitlines()
    index = next((i for i, l in enumerate(lines)
                  if re.search(r"Initializer\s*\|\s*w\s*\[", l)), None)
    assert index is not None, f"initializer w not listed\n{run.describe()}"
    text = lines[index].split("Values", 1)[-1] if "Values" in lines[index] else ""
    for following in lines[index + 1:]:  # values may continue on the next lines
        if not following.strip() or "----" in following or "Initializer" in following:
            break
        text += " " + following
    shown = [float(x) for x in re.findall(r"[-+]?\d+\.?\d*(?:[eE][-+]?\d+)?", text)]
    assert np.allclose(shown, WEIGHTS) if len(shown) == len(WEIGHTS) else False, \
        f"values of w shown as {text.strip()!r}, the file holds {WEIGHTS}\n{run.describe()}"
