"""`parity run --openvino`: OpenVINO as a runner (loaded at activation from the venv's `openvino`
package, through the backend module built beside the binary).

- f32 agrees with the reference runner at tight tolerances on the example models and the small
  shared models; bf16 runs and its error against ref is printed (not asserted tight).
- The activation log names the precision OpenVINO infers in, chosen or its own default.
- Dynamic shapes: bounds from --ov-min/max-shapes; a shape outside them is one clear error naming the
  input, its shape and the bounds; several shapes within them run on one compiled model.
- OpenVINO missing: one clear error listing where Parity looked, exit 1; other runners still run.
- Layerwise: --ov-outputs mark all against --onnx-outputs mark all finds the first divergence (bf16)
  or agrees (f32); tensors OpenVINO's model no longer has are skipped with one info line.
- --ov-outputs mark fused on blazeface (convolutions fusing residual Adds) keeps at least 15 tensors
  marked and the graph outputs byte for byte those of the plain run, at f32 and bf16.
"""

import json
import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
import onnx

from conftest import blas_kernel_dependent

from run_util import SHARED_MODELS, RUN_TIMEOUT, load_polygraphy_json, single_error_line

PRECISION_LINE = re.compile(r"compiled .* for CPU \| inference precision: (f32|bf16|f16)( \(OpenVINO's default on this machine\))?")

# (id, where, file, flags, reference runner, atol, rtol). magika against ONNX Runtime: Parity's
# reference runner and ONNX Runtime already differ on it by 2e-3 (docs/known differences).
F32_CASES = [
    ("small_cnn", "examples", "small_cnn.onnx", [], "--ref", 1e-5, 1e-4),
    ("small_transformer", "examples", "small_transformer.onnx", [], "--ref", 1e-5, 1e-4),
    ("small_if", "examples", "small_if.onnx", ["--input-shapes", "x:[3,4]"], "--ref", 1e-5, 1e-4),
    ("blazeface", "shared", "blazeface_front_128.onnx", [], "--ref", 1e-5, 1e-4),
    ("ppocrv4_det", "shared", "ppocrv4_det.onnx", ["--input-shapes", "x:[1,3,96,96]"], "--ref", 1e-4, 1e-3),
    ("silero_vad_op18_ifless", "shared", "silero_vad_op18_ifless.onnx",
     ["--input-shapes", "input:[1,512]", "--val-range", "sr:[16000,16000]", "input:[-1,1]"], "--onnxrt", 1e-5, 1e-4),
    ("magika", "shared", "magika_standard_v3_3.onnx", ["--val-range", "[0,256]"], "--onnxrt", 1e-5, 1e-4),
]


def model_path(examples_dir, where, filename):
    return (examples_dir if where == "examples" else SHARED_MODELS) / filename


def precision_of(run):
    for line in run.lines("[I] "):
        match = PRECISION_LINE.search(line)
        if match:
            return match.group(1), match.group(2) is not None
    raise AssertionError(f"no precision line in the activation log\n{run.describe()}")


# blazeface against the reference runner depends on the BLAS kernel (see blas_kernel_dependent).
F32_PARAMS = [pytest.param(c, marks=blas_kernel_dependent(
    "2 of 6144 elements of the reference runner's output differ from OpenVINO's f32 by just over atol 1e-5 / rtol "
    "1e-4 under these kernels (1.9e-6 at most under SkylakeX/Cooperlake)")) if c[0] == "blazeface" else c
              for c in F32_CASES]


@pytest.mark.parametrize("case", F32_PARAMS, ids=[c[0] for c in F32_CASES])
def test_f32_agrees_with_reference(run_parity, examples_dir, case):
    _, where, filename, flags, reference, atol, rtol = case
    run = run_parity("run", model_path(examples_dir, where, filename), reference, "--openvino", "--ov-precision", "f32",
                     "--atol", atol, "--rtol", rtol, *flags, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert precision_of(run) == ("f32", False)
    assert "PASSED | All outputs matched" in run.output


@pytest.mark.parametrize("case", F32_CASES[:5], ids=[c[0] for c in F32_CASES[:5]])
def test_bf16_runs_and_its_error_is_printed(run_parity, examples_dir, case):
    _, where, filename, flags, reference, _, _ = case
    run = run_parity("run", model_path(examples_dir, where, filename), reference, "--openvino", "--ov-precision", "bf16",
                     *flags, timeout=RUN_TIMEOUT)
    assert run.returncode in (0, 1), run.describe()
    assert not run.crash_markers(), run.describe()
    assert precision_of(run) == ("bf16", False)
    errors = [line for line in run.output.splitlines() if "Minimum Required Tolerance" in line]
    assert errors, run.describe()
    print(f"{case[0]} bf16 vs {reference}: " + " | ".join(e.strip() for e in errors))


def test_default_precision_is_openvinos_choice_and_logged(run_parity, examples_dir):
    import openvino
    expected = openvino.Core().get_property("CPU", "INFERENCE_PRECISION_HINT").to_string()
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--openvino")
    assert run.returncode == 0, run.describe()
    assert precision_of(run) == (expected, True)


def test_options_reach_openvino(run_parity, examples_dir, tmp_path):
    cache = tmp_path / "cache"
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--openvino", "--ov-precision", "f32",
                     "--ov-threads", "1", "--ov-perf-hint", "throughput", "--ov-cache-dir", cache, "--atol", "1e-5",
                     "--rtol", "1e-4")
    assert run.returncode == 0, run.describe()
    assert any(cache.iterdir()), "OpenVINO wrote nothing into --ov-cache-dir"


@pytest.mark.parametrize("flags, message", [
    (["--ov-precision", "f64"], "--ov-precision must be f32, bf16 or f16, got 'f64'"),
    (["--ov-perf-hint", "fast"], "--ov-perf-hint must be latency or throughput, got 'fast'"),
    (["--ov-streams", "0"], "--ov-streams must be at least 1, got 0"),
    (["--ov-min-shapes", "x:[1,4]"], "--ov-min-shapes gives input 'x', which --ov-max-shapes does not"),
    (["--ov-min-shapes", "x:[4,4]", "--ov-max-shapes", "x:[2,4]"], "dimension 0 has min 4 above max 2"),
    (["--ov-min-shapes", "x:[1,4]", "--ov-opt-shapes", "x:[9,4]", "--ov-max-shapes", "x:[8,4]"],
     "--ov-opt-shapes (9, 4) is not within the bounds (1, 4) .. (8, 4)"),
])
def test_bad_options_one_clear_error(run_parity, examples_dir, flags, message):
    run = run_parity("run", examples_dir / "small_if.onnx", "--openvino", *flags)
    assert run.returncode == 1, run.describe()
    assert message in single_error_line(run)


def test_ov_options_need_the_runner(run_parity, examples_dir):
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--ov-precision", "f32")
    assert run.returncode == 1, run.describe()
    assert "the --ov-* options need an OpenVINO runner (--openvino)" in single_error_line(run)


# ---- dynamic shapes ----

BOUNDS = ["--ov-min-shapes", "x:[1,4]", "--ov-opt-shapes", "x:[4,4]", "--ov-max-shapes", "x:[8,4]"]


def test_shape_outside_bounds_names_input_shape_and_bounds(run_parity, examples_dir):
    run = run_parity("run", examples_dir / "small_if.onnx", "--openvino", *BOUNDS, "--input-shapes", "x:[9,4]")
    assert run.returncode == 1, run.describe()
    error = single_error_line(run)
    assert "input 'x' has shape (9, 4), outside the bounds the model was compiled for: min [1, 4], max [8, 4]" in error


def test_bounds_for_an_unknown_input(run_parity, examples_dir):
    run = run_parity("run", examples_dir / "small_if.onnx", "--openvino", "--ov-min-shapes", "nope:[1,4]",
                     "--ov-max-shapes", "nope:[8,4]", "--input-shapes", "x:[3,4]")
    assert run.returncode == 1, run.describe()
    assert "shape bounds given for 'nope', which is not an input of the model" in single_error_line(run)


def test_several_shapes_within_bounds_run_on_one_compiled_model(run_parity, examples_dir, tmp_path):
    from polygraphy.json import save_json
    feeds = [{"x": np.random.RandomState(i).uniform(-1, 1, (rows, 4)).astype(np.float32)} for i, rows in
             enumerate((1, 5, 8, 3))]
    inputs = tmp_path / "inputs.json"
    save_json(feeds, str(inputs))
    run = run_parity("run", examples_dir / "small_if.onnx", "--ref", "--openvino", "--ov-precision", "f32", *BOUNDS,
                     "--load-inputs", inputs, "--atol", "1e-5", "--rtol", "1e-4")
    assert run.returncode == 0, run.describe()
    compiled = [line for line in run.lines("[I] ") if PRECISION_LINE.search(line)]
    assert len(compiled) == 1, run.describe()
    assert "Completed 4 iteration(s)" in run.output
    for rows in (1, 5, 8, 3):
        assert f"shape=({rows}, 4)) with 'y'" in run.output, run.describe()


def test_model_openvino_cannot_convert_names_the_node(run_parity):
    """OpenVINO's ONNX frontend cannot convert silero_vad_v5 (a Conv inside an If whose input rank it cannot
    infer); the Python package fails the same way."""
    run = run_parity("run", SHARED_MODELS / "silero_vad_v5.onnx", "--openvino", "--input-shapes", "input:[1,512]",
                     "--val-range", "sr:[16000,16000]", timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    error = single_error_line(run)
    assert "silero_vad_v5.onnx: OpenVINO:" in error
    assert "If_0_then_branch__Inline_0__/decoder/decoder/2/Conv" in run.output, run.describe()


# ---- OpenVINO missing ----

def test_missing_openvino_one_message_exit_1(run_parity, examples_dir, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--openvino",
                     env={"PARITY_OPENVINO_LIBRARY_DIR": str(empty)})
    assert run.returncode == 1, run.describe()
    error = single_error_line(run)
    assert "OpenVINO not found; looked in: PARITY_OPENVINO_LIBRARY_DIR" in error
    assert str(empty) in error and "pip install openvino" in error


def test_missing_module_one_message_exit_1(run_parity, examples_dir, tmp_path):
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--openvino",
                     env={"PARITY_OPENVINO_MODULE": str(tmp_path / "libparity_openvino.so")})
    assert run.returncode == 1, run.describe()
    error = single_error_line(run)
    assert "the OpenVINO backend module of Parity was not found" in error and str(tmp_path) in error


def test_other_runners_run_without_openvino(run_parity, examples_dir, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--onnxrt",
                     env={"PARITY_OPENVINO_LIBRARY_DIR": str(empty)})
    assert run.returncode == 0, run.describe()


# ---- layerwise ----

def test_layerwise_f32_agrees_on_every_tensor(run_parity, examples_dir):
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--openvino", "--ov-precision", "f32",
                     "--ov-outputs", "mark", "all", "--onnx-outputs", "mark", "all", "--atol", "1e-5", "--rtol", "1e-4")
    assert run.returncode == 0, run.describe()
    assert "11 tensor(s) marked as outputs" in run.output
    assert "| 11 tensor(s) compared" in run.output
    assert "PASSED | Every tensor is within tolerance" in run.output


def test_layerwise_bf16_names_the_first_divergence(run_parity, examples_dir):
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--openvino", "--ov-precision", "bf16",
                     "--ov-outputs", "mark", "all", "--onnx-outputs", "mark", "all")
    assert run.returncode == 1, run.describe()
    first = [line for line in run.lines("[E] ") if "First divergence" in line]
    assert first and "tensor 'conv1_out' produced by node 'conv1' [Op: Conv]" in first[0], run.describe()


def test_layerwise_list_and_exclude(run_parity, examples_dir):
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--openvino", "--ov-precision", "f32",
                     "--ov-outputs", "mark", "all", "--ov-exclude-outputs", "bn1_out", "relu1_out",
                     "--onnx-outputs", "conv1_out", "pool2_out", "--atol", "1e-5", "--rtol", "1e-4")
    assert run.returncode == 0, run.describe()
    assert "9 tensor(s) marked as outputs" in run.output
    assert "| 3 tensor(s) compared" in run.output, run.describe()


def test_mark_fused_compares_the_tensors_of_the_plain_models_layers(run_parity, examples_dir, tmp_path):
    """--ov-outputs mark fused: the bf16 run marks the six tensors small_cnn's compiled layers write out (conv1,
    bn1 and relu1 are one Convolution layer, so bn1_out and conv1_out are not compared), names each layer, and
    the first divergence says which layer wrote it; the JSON report maps each compared tensor to its layer."""
    report = tmp_path / "report.json"
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--openvino", "--ov-precision", "bf16",
                     "--ov-outputs", "mark", "fused", "--report", report)
    assert run.returncode == 1, run.describe()
    assert "mark fused: 7 of the 7 tensor(s) the compiled model's layers write out are compared" in run.output
    assert re.search(r"'relu1_out' <- layer '\S+' \[Convolution \| \S+ \| bf16\] covering ONNX nodes conv1, bn1, "
                     r"relu1", run.output), run.describe()
    assert "6 tensor(s) marked as outputs" in run.output
    assert "| 7 tensor(s) compared" in run.output, run.describe()
    first = [line for line in run.lines("[E] ") if "First divergence" in line]
    assert first and "tensor 'relu1_out'" in first[0], run.describe()
    assert re.search(r"written by OpenVINO layer '\S+' \[Convolution", run.output), run.describe()
    layers = json.loads(report.read_text())["layerwise"][0]["engine_layers"]
    assert sorted(layers) == ["flatten_out", "logits", "pool1_out", "pool2_out", "probabilities", "relu1_out",
                              "relu2_out"]
    assert "covering ONNX nodes conv2, bn2, relu2" in layers["relu2_out"]


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_mark_fused_keeps_the_marks_a_fused_residual_add_does_not_read(run_parity, tmp_path, precision):
    """blazeface's 1x1 convolutions fuse a residual Add (and its Relu); a marked residual makes OpenVINO run the
    Add on its own. mark fused leaves out only the marks of the tensors that Add reads and writes, not every
    tensor around each such convolution: the depthwise convolutions' outputs, the poolings and the heads stay
    marked (at least 15 tensors; 7 when every changed layer lost all its marks), no layer of the plain model
    changes, and the graph outputs are byte for byte those of the plain run."""
    model = SHARED_MODELS / "blazeface_front_128.onnx"
    flags = ("--openvino", "--ov-precision", precision)
    plain = run_parity("run", model, *flags, "--save-outputs", tmp_path / "plain.json", timeout=RUN_TIMEOUT)
    assert plain.returncode == 0, plain.describe()
    fused = run_parity("run", model, *flags, "--ov-outputs", "mark", "fused", "--save-outputs",
                       tmp_path / "fused.json", timeout=RUN_TIMEOUT)
    assert fused.returncode == 0, fused.describe()
    marked = re.search(r"\| (\d+) tensor\(s\) marked as outputs \| --ov-outputs mark fused", fused.output)
    assert marked and int(marked.group(1)) >= 15, fused.describe()
    assert "marking still changes" not in fused.output, fused.describe()
    for name in ("depthwise_conv2d_3/depthwise:0", "max_pooling2d_1/MaxPool:0"):
        assert re.search(rf"'StatefulPartitionedCall/functional_1/{re.escape(name)}' <- layer '[^']+' \[[^\]]+\] "
                         r"covering ONNX nodes? [^\n(]+\n", fused.output), f"{name} not marked\n{fused.describe()}"
    expected = load_polygraphy_json(tmp_path / "plain.json")[0][1][0]
    got = load_polygraphy_json(tmp_path / "fused.json")[0][1][0]
    assert list(expected.keys())
    for name in expected.keys():
        assert got[name].dtype == expected[name].dtype and got[name].tobytes() == expected[name].tobytes(), name


@pytest.mark.parametrize("command", ["convert", "mix"])
def test_mark_fused_refused_where_it_cannot_apply(run_parity, examples_dir, tmp_path, command):
    if command == "convert":
        run = run_parity("convert", examples_dir / "small_cnn.onnx", "--openvino", "--ov-outputs", "mark", "fused",
                         "-o", tmp_path / "m.ovc")
        assert run.returncode == 1 and "a compiled model file marks no tensors" in run.output, run.describe()
    else:
        run = run_parity("run", examples_dir / "small_cnn.onnx", "--openvino", "--ov-outputs", "mark", "fused",
                         "relu1_out")
        assert run.returncode == 1, run.describe()


@pytest.mark.parametrize("flag", ["--ov-outputs", "--ov-exclude-outputs"])
def test_ov_output_names_must_exist(run_parity, examples_dir, flag):
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--openvino", flag, "no_such_tensor")
    assert run.returncode == 1, run.describe()
    assert f"{flag}: no node of" in single_error_line(run) and "'no_such_tensor'" in single_error_line(run)


def test_ov_outputs_from_a_file(run_parity, examples_dir, tmp_path):
    names = tmp_path / "names.txt"
    names.write_text("# tensors to mark\nconv1_out\n\nrelu2_out\n")
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--openvino", "--ov-precision", "f32",
                     "--ov-outputs", f"@{names}", "--atol", "1e-5", "--rtol", "1e-4")
    assert run.returncode == 0, run.describe()
    assert "2 tensor(s) marked as outputs" in run.output
    assert "| 3 tensor(s) compared" in run.output, run.describe()


def test_tensors_openvino_does_not_have_are_skipped_with_one_line(run_parity, tmp_path):
    """A node nothing reads is not in OpenVINO's model: it cannot be marked."""
    nodes = [helper.make_node("Neg", ["x"], ["unused"], name="dead"),
             helper.make_node("Mul", ["c1", "c2"], ["product"], name="const_mul"),
             helper.make_node("Add", ["x", "product"], ["y"], name="add")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.full((2, 3), 2, np.float32), "c1"),
         numpy_helper.from_array(np.full((2, 3), 3, np.float32), "c2")])
    path = tmp_path / "dead.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    run = run_parity("run", path, "--ref", "--openvino", "--ov-precision", "f32", "--ov-outputs", "mark", "all",
                     "--onnx-outputs", "mark", "all")
    assert run.returncode == 0, run.describe()
    skipped = [line for line in run.lines("[I] ") if "cannot be marked" in line]
    assert len(skipped) == 1 and "1 of 3 requested tensor(s)" in skipped[0], run.describe()
    assert "| 2 tensor(s) compared" in run.output, run.describe()
