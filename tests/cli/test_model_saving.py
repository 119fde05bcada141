"""Polygraphy's "ONNX Model Saving" options on every command that writes an ONNX model:
`--save-external-data [file]`, `--external-data-size-threshold`, `--no-save-all-tensors-to-one-file`.

Each command saves the same model with and without external data; the external copy must load
(with onnx) to the same initializers, keep small tensors inline, and place its tensors as Polygraphy
places them for the same flags (which tensors go external, one file or a file per tensor named
after it).
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from run_util import polygraphy, single_error_line

RNG = np.random.default_rng(3)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """x (2,64) @ big (64,64: 16 KiB) + bias (64: 256 B) -> Relu; tensors far from the 1 KiB default."""
    path = tmp_path_factory.mktemp("saving") / "model.onnx"
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "big"], ["mm"], name="matmul"),
         helper.make_node("Add", ["mm", "bias"], ["add"], name="add"),
         helper.make_node("Relu", ["add"], ["y"], name="relu")],
        "g", [helper.make_tensor_value_info("x", f32, [2, 64])], [helper.make_tensor_value_info("y", f32, [2, 64])],
        initializer=[numpy_helper.from_array(RNG.standard_normal((64, 64)).astype(np.float32), "big"),
                     numpy_helper.from_array(RNG.standard_normal(64).astype(np.float32), "bias")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


# Each command that writes an ONNX model, with the flags it needs ("{model}", "{out}" filled in).
COMMANDS = {
    "surgeon sanitize": ["surgeon", "sanitize", "{model}", "-o", "{out}"],
    "surgeon extract": ["surgeon", "extract", "{model}", "--outputs", "y:auto", "-o", "{out}"],
    "surgeon insert": ["surgeon", "insert", "{model}", "--inputs", "mm", "--outputs", "mm", "--op", "Identity", "-o",
                       "{out}"],
    "surgeon prune": ["surgeon", "prune", "{model}", "-o", "{out}"],
    "surgeon weight-strip": ["surgeon", "weight-strip", "{model}", "--exclude-list", "{exclude}", "-o", "{out}"],
    "convert --fp-to-fp16": ["convert", "{model}", "--fp-to-fp16", "-o", "{out}"],
}


# Commands Polygraphy cannot run here, with the reason; Parity's placement is checked against the
# tensor sizes instead.
POLYGRAPHY_CANNOT_RUN = {
    "convert --fp-to-fp16": "Polygraphy's --fp-to-fp16 needs onnxmltools, which the venv does not install",
}


def command(name, model, out, tmp_path):
    exclude = tmp_path / "exclude.txt"
    exclude.write_text("big\nbias\n")  # keep the data, so that there is something to save externally
    return [str(a).format(model=model, out=out, exclude=exclude) for a in COMMANDS[name]]


def external_locations(path):
    """{initializer: external file name} of the tensors stored outside the model."""
    return {t.name: {e.key: e.value for e in t.external_data}["location"]
            for t in onnx.load(str(path), load_external_data=False).graph.initializer
            if t.data_location == TensorProto.EXTERNAL}


def values(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}


@pytest.mark.parametrize("name", COMMANDS)
def test_save_external_data_as_polygraphy(run_parity, model, tmp_path, name):
    (tmp_path / "ours").mkdir()
    (tmp_path / "theirs").mkdir()
    (tmp_path / "inline").mkdir()
    inline = tmp_path / "inline" / "out.onnx"
    ours, theirs = tmp_path / "ours" / "out.onnx", tmp_path / "theirs" / "out.onnx"
    plain = run_parity(*command(name, model, inline, tmp_path))
    assert plain.returncode == 0, plain.describe()
    assert external_locations(inline) == {}
    flags = ["--save-external-data", "weights.bin"]
    run = run_parity(*command(name, model, ours, tmp_path), *flags)
    assert run.returncode == 0, run.describe()
    if name in POLYGRAPHY_CANNOT_RUN:
        assert external_locations(ours) == {"big": "weights.bin"}  # 8 KiB in float16; bias 128 B stays inline
    else:
        polygraphy(*command(name, model, theirs, tmp_path), *flags)
        assert external_locations(ours) == external_locations(theirs)
    assert set(external_locations(ours).values()) <= {"weights.bin"}
    assert (tmp_path / "ours" / "weights.bin").is_file() == bool(external_locations(ours))
    for tensor, array in values(inline).items():
        np.testing.assert_array_equal(values(ours)[tensor], array)


def test_default_external_file_and_threshold(run_parity, model, tmp_path):
    out = tmp_path / "out.onnx"
    run = run_parity("surgeon", "sanitize", model, "-o", out, "--save-external-data")
    assert run.returncode == 0, run.describe()
    assert external_locations(out) == {"big": "out.onnx.data"}  # bias (256 B) stays under the 1 KiB default
    run = run_parity("surgeon", "sanitize", model, "-o", out, "--save-external-data", "--external-data-size-threshold",
                     "200")
    assert external_locations(out) == {"big": "out.onnx.data", "bias": "out.onnx.data"}
    run = run_parity("surgeon", "sanitize", model, "-o", out, "--save-external-data", "--external-data-size-threshold",
                     "1M")
    assert external_locations(out) == {}


def test_one_file_per_tensor_as_polygraphy(run_parity, model, tmp_path):
    (tmp_path / "ours").mkdir()
    (tmp_path / "theirs").mkdir()
    flags = ["--save-external-data", "--no-save-all-tensors-to-one-file", "--external-data-size-threshold", "100"]
    ours, theirs = tmp_path / "ours" / "out.onnx", tmp_path / "theirs" / "out.onnx"
    run = run_parity("surgeon", "sanitize", model, "-o", ours, *flags)
    assert run.returncode == 0, run.describe()
    polygraphy("surgeon", "sanitize", model, "-o", theirs, *flags)
    assert external_locations(ours) == external_locations(theirs) == {"big": "big", "bias": "bias"}
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == ["bias", "big", "out.onnx"]
    np.testing.assert_array_equal(values(ours)["big"], values(model)["big"])


def test_threshold_without_external_data_warns_and_saves_inline(run_parity, model, tmp_path):
    out = tmp_path / "out.onnx"
    run = run_parity("surgeon", "prune", model, "-o", out, "--external-data-size-threshold", "1K")
    assert run.returncode == 0, run.describe()
    assert any("size_threshold is set, but external data path has not been set" in line
               for line in run.lines("[W] ")), run.describe()
    assert external_locations(out) == {}


def test_external_path_outside_the_model_folder_is_one_clear_error(run_parity, model, tmp_path):
    out = tmp_path / "out.onnx"
    run = run_parity("surgeon", "sanitize", model, "-o", out, "--save-external-data", "sub/weights.bin")
    assert run.returncode != 0, run.describe()
    assert "sub/weights.bin" in single_error_line(run)
    assert list(tmp_path.iterdir()) == []


def test_bad_threshold_is_one_clear_error(run_parity, model, tmp_path):
    out = tmp_path / "out.onnx"
    run = run_parity("surgeon", "sanitize", model, "-o", out, "--save-external-data", "--external-data-size-threshold",
                     "lots")
    assert run.returncode != 0, run.describe()
    assert "--external-data-size-threshold" in single_error_line(run)
    assert not out.exists()
