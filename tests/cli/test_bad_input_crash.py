"""Hostile but legal models and inputs that crashed, hung or were silently accepted (issue 39): each
command must end with exit code 0, or 1 and one clear "[E] ..." line, never a signal or a hang.

The models are built here with onnx.helper: each needs one exact extreme value (an int64 limit as a
Slice step, an out-of-range count) that no exporter produces.
"""

import onnx
import pytest
from onnx import TensorProto, helper

INT64_MAX = 2**63 - 1
INT64_MIN = -2**63
TIMEOUT_S = 60  # a hang in ONNX's data propagation never ends; a clean run takes seconds


def assert_clean(result, allow_error=True):
    """Exit 0, or (when allowed) 1 with exactly one [E] line; never a signal or a crash report."""
    assert result.returncode >= 0, result.describe()
    assert not result.crash_markers(), result.describe()
    assert result.returncode in ((0, 1) if allow_error else (0,)), result.describe()
    if result.returncode == 1:
        assert len(result.lines("[E]")) == 1, result.describe()


# --- item 3: Slice steps at the int64 limits ---------------------------------------------------
def shape_slice_model(path, step, dynamic=False):
    """z = Relu(x); y = Slice(Shape(x), 0 or -1, the far end, axis 0, `step`): ONNX's data propagation
    walks Shape's output with the step (the Relu gives float-precision commands a float node)."""
    start, end = (0, INT64_MAX) if step > 0 else (-1, INT64_MIN)
    initializers = [helper.make_tensor("starts", TensorProto.INT64, [1], [start]),
                    helper.make_tensor("ends", TensorProto.INT64, [1], [end]),
                    helper.make_tensor("axes", TensorProto.INT64, [1], [0]),
                    helper.make_tensor("steps", TensorProto.INT64, [1], [step])]
    nodes = [helper.make_node("Relu", ["x"], ["z"], name="relu"),
             helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Slice", ["shape", "starts", "ends", "axes", "steps"], ["y"], name="hostile_slice")]
    graph = helper.make_graph(nodes, "hostile_slice",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n" if dynamic else 2, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, [None]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n" if dynamic else 2, 3, 4])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=False)
    onnx.save(model, str(path))
    return path


SHAPE_INFERENCE_COMMANDS = {
    "run --shape-inference": lambda model, out: ["run", model, "--ref", "--shape-inference"],
    "convert --fp-to-fp16": lambda model, out: ["convert", model, "--fp-to-fp16", "-o", out / "fp16.onnx"],
    "convert --openvino": lambda model, out: ["convert", model, "--openvino", "-o", out / "model.ovc"],
    "check lint": lambda model, out: ["check", "lint", model, "-o", out / "lint.json"],
    "debug precision": lambda model, out: ["debug", "precision", model, "--ref", "-o", out / "fixed.onnx"],
    "inspect capability": lambda model, out: ["inspect", "capability", model, "--openvino", "-o", out / "cap"],
}


@pytest.mark.parametrize("step", [INT64_MAX, INT64_MIN], ids=["int64_max", "int64_min"])
@pytest.mark.parametrize("command", sorted(SHAPE_INFERENCE_COMMANDS))
def test_slice_steps_at_int64_limits_skip_data_propagation(run_parity, tmp_path, command, step):
    """INT64_MAX wrapped ONNX's 32-bit Slice index (SIGSEGV), INT64_MIN never advanced it (a hang
    growing memory): shape inference now runs without data propagation and says which node."""
    model = shape_slice_model(tmp_path / "slice.onnx", step)
    result = run_parity(*SHAPE_INFERENCE_COMMANDS[command](model, tmp_path), timeout=TIMEOUT_S)
    assert_clean(result)
    warnings = [line for line in result.lines("[W]") if "without data propagation" in line]
    assert warnings and "node 'hostile_slice' (Slice)" in warnings[0] and str(step) in warnings[0], result.describe()


OPENVINO_COMMANDS = {
    "run --openvino": lambda model, out: ["run", model, "--openvino"],
    "run --fallback": lambda model, out: ["run", model, "--openvino", "--fallback", "ref"],
    "inspect model --openvino": lambda model, out: ["inspect", "model", model, "--openvino"],
    "convert --openvino": lambda model, out: ["convert", model, "--openvino", "-o", out / "model.ovc"],
}


@pytest.mark.parametrize("step", [INT64_MIN, -2**32], ids=["int64_min", "minus_2_32"])
@pytest.mark.parametrize("command", sorted(OPENVINO_COMMANDS))
def test_slice_steps_openvino_divides_by_are_refused(run_parity, tmp_path, command, step):
    """OpenVINO's CPU plugin, slicing the shape of a dynamic input with a step below -2^31, raised
    SIGFPE at inference: the model is refused before OpenVINO sees it, naming the node."""
    model = shape_slice_model(tmp_path / "slice.onnx", step, dynamic=True)
    result = run_parity(*OPENVINO_COMMANDS[command](model, tmp_path), "--input-shapes", "x:[5,3,4]",
                        timeout=TIMEOUT_S)
    assert_clean(result)
    assert result.returncode == 1, result.describe()
    assert "node 'hostile_slice' (Slice)" in result.lines("[E]")[0] and str(step) in result.lines("[E]")[0], \
        result.describe()
