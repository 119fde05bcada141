"""`parity surgeon sanitize` infers shapes as Polygraphy's does: ONNX Runtime's symbolic shape inference
(`onnxruntime.tools.symbolic_shape_infer`, run in the Python that has the onnxruntime package), falling back
to ONNX's with Polygraphy's warning when that cannot run; --no-onnxruntime-shape-inference switches it off.

The model's NonZero output has a data-dependent dim, which each shape inference names its own way
(ONNX Runtime after the node, ONNX 'unk__N'): the saved value_info says which one ran."""

import sys

import onnx
import pytest
from onnx import TensorProto, helper

INFERRED_LINE = "Inferred shapes in the model with `onnxruntime.tools.symbolic_shape_infer`"
FALLBACK_WARNING = ("Falling back to `onnx.shape_inference` because `onnxruntime.tools.symbolic_shape_infer` "
                    "either could not be loaded or did not run successfully.")


def data_dependent_model():
    """x [N, 3] -> NonZero -> Transpose -> y (shape unknown in the model)."""
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
             helper.make_node("Transpose", ["nz"], ["y"], name="transpose")]
    graph = helper.make_graph(nodes, "data_dependent", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def dims(value_info):
    return [dim.dim_param or dim.dim_value for dim in value_info.type.tensor_type.shape.dim]


def shapes(model):
    """{tensor: dims} of the value_info and graph outputs."""
    return {value.name: dims(value) for value in [*model.graph.value_info, *model.graph.output]}


def onnxruntime_shapes(model):
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    return shapes(SymbolicShapeInference.infer_shapes(model, auto_merge=True))


def assert_onnx_named_dims(model):
    """The shapes ONNX's inference gives (its data-dependent dim 'unk__N'; N depends on how often it ran)."""
    found = shapes(model)
    assert set(found) == {"nz", "y"}, found
    assert found["nz"][0] == 2 and found["nz"][1].startswith("unk__"), found
    assert found["y"][0].startswith("unk__") and found["y"][1] == 2, found


def leftover_temporaries(tmp_path):
    """What Parity's symbolic shape inference left in $TMPDIR (the Python packages may leave their own)."""
    return sorted(path.name for path in (tmp_path / "tmp").iterdir() if path.name.startswith("parity-"))


def test_the_model_tells_the_two_inferences_apart():
    model = data_dependent_model()
    assert_onnx_named_dims(model := onnx.shape_inference.infer_shapes(model, data_prop=True))
    assert not any(str(dim).startswith("unk__") for dims_ in onnxruntime_shapes(data_dependent_model()).values()
                   for dim in dims_)


def python_environment(tmp_path, **extra):
    """Runs with the interpreter chosen by `extra` (PARITY_PYTHON, PATH) only: a fresh cache folder and
    HOME (no setup record, no remembered answer) and a temporary folder of the test's own."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"),
           "PARITY_PYTHON": sys.executable}
    env.update(extra)
    return env


@pytest.mark.parametrize("fold", [[], ["--fold-constants"]], ids=["load", "fold-constants"])
def test_sanitize_names_dims_as_onnxruntime_symbolic_shape_inference(run_parity, tmp_path, fold):
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(data_dependent_model(), source)
    result = run_parity("surgeon", "sanitize", source, "-o", out, *fold, "-v", env=python_environment(tmp_path))
    assert result.returncode == 0, result.describe()
    assert result.output.count(INFERRED_LINE) == 1, result.describe()  # once per process, as in Polygraphy
    assert FALLBACK_WARNING not in result.output
    assert shapes(onnx.load(str(out))) == onnxruntime_shapes(data_dependent_model())
    assert leftover_temporaries(tmp_path) == []


def test_sanitize_falls_back_to_onnx_shape_inference_without_a_python(run_parity, tmp_path):
    """No python3 on PATH, no $PARITY_PYTHON, no setup record: Polygraphy's warning, then ONNX's inference."""
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(data_dependent_model(), source)
    (tmp_path / "empty").mkdir()
    env = python_environment(tmp_path, PARITY_PYTHON="", PATH=str(tmp_path / "empty"))
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--fold-constants", "-vv", env=env)
    assert result.returncode == 0, result.describe()
    assert result.output.count(FALLBACK_WARNING) == 1, result.describe()
    assert "no Python with the onnxruntime package" in result.output, result.describe()  # the reason, at -vv
    assert INFERRED_LINE not in result.output
    assert_onnx_named_dims(onnx.load(str(out)))


def test_sanitize_falls_back_when_the_tool_fails(run_parity, tmp_path):
    """A Python that has onnxruntime but whose run of the tool fails: the tool's error at -vv, the
    warning, ONNX's inference, and no temporary file left."""
    wrapper = tmp_path / "python-failing-tool"
    wrapper.write_text("#!/bin/sh\n"
                       'case "$2" in *symbolic_shape_infer*) echo "simulated tool failure" >&2; exit 3;; esac\n'
                       f'exec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(data_dependent_model(), source)
    env = python_environment(tmp_path, PARITY_PYTHON=str(wrapper))
    result = run_parity("surgeon", "sanitize", source, "-o", out, "-vv", env=env)
    assert result.returncode == 0, result.describe()
    assert FALLBACK_WARNING in result.output, result.describe()
    assert "simulated tool failure" in result.output, result.describe()
    assert INFERRED_LINE not in result.output
    assert_onnx_named_dims(onnx.load(str(out)))
    assert leftover_temporaries(tmp_path) == []


def test_no_onnxruntime_shape_inference_uses_onnx_shape_inference(run_parity, tmp_path):
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(data_dependent_model(), source)
    result = run_parity("surgeon", "sanitize", source, "-o", out, "--fold-constants",
                        "--no-onnxruntime-shape-inference", "-vv", env=python_environment(tmp_path))
    assert result.returncode == 0, result.describe()
    assert "symbolic_shape_infer" not in result.output, result.describe()
    assert "Running ONNX shape inference" in result.output
    assert_onnx_named_dims(onnx.load(str(out)))


def test_commands_other_than_sanitize_keep_onnx_shape_inference(run_parity, tmp_path):
    """surgeon extract infers shapes with ONNX's only (documented difference): no Python is started."""
    source, out = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(data_dependent_model(), source)
    result = run_parity("surgeon", "extract", source, "-o", out, "--inputs", "x:auto:auto", "--outputs", "y:auto",
                        "-v", env=python_environment(tmp_path))
    assert result.returncode == 0, result.describe()
    assert "symbolic_shape_infer" not in result.output, result.describe()
