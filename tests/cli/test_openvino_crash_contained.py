"""A crash inside OpenVINO's own code on a model Parity cannot check first is contained (issue 39, item 3):
OpenVINO compiles the model in a child process first, and that child runs the first inference with the
real inputs before the process does; OpenVINO's query_model (`inspect capability`, `run --fallback`)
runs in a child only. A signal there ends the command with one "[E]" naming the model, the signal and the
node, and a non-zero exit; the process itself never dies by it.

The crashing model is the real one: a Slice stepping through the shape of a dynamic input with step
INT64_MIN makes OpenVINO's CPU plugin divide by zero while it compiles (SIGFPE). Parity refuses that
model before OpenVINO sees it (onnx/slice_steps_check.h), so the tests hand it over with
PARITY_SKIP_MODEL_VALIDATION=1, the documented test switch that skips Parity's own checks: the crash
they contain is OpenVINO's, not one injected.

The inference crashes are real too, and need no switch: the models are legal and compile; their inputs
crash OpenVINO's CPU plugin while it infers (a Range with delta 0 divides by it: SIGFPE; a GatherND index
of 2^31 reads far outside its data: SIGSEGV). No model is known that crashes OpenVINO's query_model, so
its containment is tested with PARITY_TEST_OPENVINO_QUERY_CRASH=<op type>, a documented test switch that
makes the query's CHILD kill itself (SIGSEGV) when the model has a node of that op type; what the
command reports of the child's end is the real handling.
"""

import onnx
import pytest
from onnx import TensorProto, helper

from test_bad_input_crash import INT64_MIN, OPENVINO_UNDER_ASAN, shape_slice_model

TIMEOUT_S = 120
SKIP_VALIDATION = {"PARITY_SKIP_MODEL_VALIDATION": "1"}
NODE = "node 'hostile_slice' (Slice)"


@pytest.fixture(scope="session")
def sanitized(parity_bin):
    with open(parity_bin, "rb") as binary:
        return b"__asan_init" in binary.read()


@pytest.fixture(autouse=True)
def no_openvino_under_asan(sanitized):
    if sanitized:
        pytest.skip(OPENVINO_UNDER_ASAN)


@pytest.fixture(scope="session")
def crashing_model(tmp_path_factory):
    return shape_slice_model(tmp_path_factory.mktemp("crash") / "slice.onnx", INT64_MIN, dynamic=True)


@pytest.fixture(scope="session")
def long_crashing_model(tmp_path_factory):
    """The hostile Slice in the middle of 24 nodes (Relus before it, Casts and Adds after it reading its
    output): the node is found by bisecting the graph, not by being the last one. Built with onnx.helper:
    no exporter writes an INT64_MIN step."""
    nodes, last = [], "x"
    for i in range(10):
        nodes.append(helper.make_node("Relu", [last], [f"r{i}"], name=f"relu_{i}"))
        last = f"r{i}"
    nodes.append(helper.make_node("Shape", [last], ["shape"], name="shape"))
    nodes.append(helper.make_node("Slice", ["shape", "starts", "ends", "axes", "steps"], ["s"], name="hostile_slice"))
    prev = "s"
    for i in range(6):
        nodes.append(helper.make_node("Cast", [prev], [f"c{i}"], name=f"cast_{i}", to=TensorProto.INT64))
        nodes.append(helper.make_node("Add", [f"c{i}", "one"], [f"a{i}"], name=f"add_{i}"))
        prev = f"a{i}"
    initializers = [helper.make_tensor("starts", TensorProto.INT64, [1], [-1]),
                    helper.make_tensor("ends", TensorProto.INT64, [1], [INT64_MIN]),
                    helper.make_tensor("axes", TensorProto.INT64, [1], [0]),
                    helper.make_tensor("steps", TensorProto.INT64, [1], [INT64_MIN]),
                    helper.make_tensor("one", TensorProto.INT64, [1], [1])]
    graph = helper.make_graph(nodes, "long_hostile_slice",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 4])],
                              [helper.make_tensor_value_info(prev, TensorProto.INT64, [None]),
                               helper.make_tensor_value_info(last, TensorProto.FLOAT, ["n", 3, 4])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=False)
    path = tmp_path_factory.mktemp("long") / "long_slice.onnx"
    onnx.save(model, str(path))
    return path


def assert_one_error_naming_the_node(result, model):
    assert result.returncode == 1, result.describe()
    assert not result.crash_markers(), result.describe()
    errors = result.lines("[E]")
    assert len(errors) == 1, result.describe()
    assert str(model) in errors[0] and "signal 8 (SIGFPE)" in errors[0] and "compiling" in errors[0], result.describe()
    assert NODE in errors[0], result.describe()


COMMANDS = {
    "run --openvino": lambda model, out: ["run", model, "--openvino", "--input-shapes", "x:[5,3,4]"],
    "run --fallback": lambda model, out: ["run", model, "--openvino", "--fallback", "ref", "--input-shapes",
                                          "x:[5,3,4]"],
    "inspect model --openvino": lambda model, out: ["inspect", "model", model, "--openvino"],
    "convert --openvino": lambda model, out: ["convert", model, "--openvino", "-o", out / "model.ovc"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_openvino_compile_crash_is_one_error_naming_the_node(run_parity, tmp_path, crashing_model, command):
    out = tmp_path / "out"
    out.mkdir()
    result = run_parity(*COMMANDS[command](crashing_model, out), cwd=tmp_path, env=SKIP_VALIDATION,
                        timeout=TIMEOUT_S)
    assert_one_error_naming_the_node(result, crashing_model)
    # Nothing half-written (convert's output, a temporary file) and no core file of the crashed child.
    assert sorted(p.name for p in out.iterdir()) == [], result.describe()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], result.describe()


def test_the_node_is_found_by_bisection_in_a_longer_graph(run_parity, long_crashing_model):
    result = run_parity("inspect", "model", long_crashing_model, "--openvino", env=SKIP_VALIDATION, timeout=TIMEOUT_S)
    assert_one_error_naming_the_node(result, long_crashing_model)


def test_onnxrt_results_are_still_reported_beside_the_openvino_crash(run_parity, tmp_path, crashing_model):
    result = run_parity("run", crashing_model, "--onnxrt", "--openvino", "--input-shapes", "x:[5,3,4]",
                        env=SKIP_VALIDATION, timeout=TIMEOUT_S)
    assert_one_error_naming_the_node(result, crashing_model)
    assert any("onnxrt-runner" in line and "Completed 1 iteration(s)" in line for line in result.lines("[I]")), \
        result.describe()


def test_a_model_converted_with_a_cache_folder_still_runs(run_parity, tmp_path):
    """The child's compile leaves --ov-cache-dir to the command's own compile: a compiled model OpenVINO
    loads from its cache exports bytes it cannot import, so a child filling the cache first made the
    first `convert --ov-cache-dir` write an unreadable file."""
    model = shape_slice_model(tmp_path / "fine.onnx", -1, dynamic=True)
    converted = run_parity("convert", model, "--openvino", "--ov-cache-dir", tmp_path / "cache", "-o",
                           tmp_path / "fine.ovc", timeout=TIMEOUT_S)
    assert converted.returncode == 0, converted.describe()
    result = run_parity("run", tmp_path / "fine.ovc", "--openvino", "--input-shapes", "x:[5,3,4]", timeout=TIMEOUT_S)
    assert result.returncode == 0, result.describe()


def test_the_crash_is_not_contained_in_process(run_parity, tmp_path, crashing_model):
    """PARITY_OPENVINO_IN_PROCESS=1 (the documented opt-out) compiles in the process itself: the same model
    then kills it, which is what the containment above prevents."""
    result = run_parity("run", crashing_model, "--openvino", "--input-shapes", "x:[5,3,4]", cwd=tmp_path,
                        env={**SKIP_VALIDATION, "PARITY_OPENVINO_IN_PROCESS": "1"}, timeout=TIMEOUT_S)
    assert result.returncode < 0 or result.returncode == 128 + 8, result.describe()


def test_parity_refuses_the_model_itself_without_the_switch(run_parity, crashing_model):
    result = run_parity("run", crashing_model, "--openvino", "--input-shapes", "x:[5,3,4]", timeout=TIMEOUT_S)
    assert result.returncode == 1, result.describe()
    assert NODE in result.lines("[E]")[0] and "not handed to OpenVINO" in result.lines("[E]")[0], result.describe()


# --- inference -----------------------------------------------------------------------------------
def range_model(path):
    """Five Relus, then a Range whose delta is a graph input, then Adds reading it: with delta 0,
    OpenVINO's CPU plugin divides by it while it infers (SIGFPE); the Range is found by bisection. Built
    with onnx.helper: no exporter makes a Range's delta an input fed zero."""
    nodes, last = [], "x"
    for i in range(5):
        nodes.append(helper.make_node("Relu", [last], [f"r{i}"], name=f"relu_{i}"))
        last = f"r{i}"
    nodes.append(helper.make_node("Range", ["start", "limit", "delta"], ["steps"], name="hostile_range"))
    prev = "steps"
    for i in range(3):
        nodes.append(helper.make_node("Add", [prev, "one"], [f"a{i}"], name=f"add_{i}"))
        prev = f"a{i}"
    graph = helper.make_graph(nodes, "range", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                              helper.make_tensor_value_info("delta", TensorProto.INT64, [])],
                              [helper.make_tensor_value_info(prev, TensorProto.INT64, [None]),
                               helper.make_tensor_value_info(last, TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor("start", TensorProto.INT64, [], [0]),
                               helper.make_tensor("limit", TensorProto.INT64, [], [10]),
                               helper.make_tensor("one", TensorProto.INT64, [1], [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


def gathernd_model(path):
    """A GatherND whose indices are a graph input: an index of 2^31 makes OpenVINO's CPU plugin read far
    outside the data (SIGSEGV)."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("GatherND", ["r", "i"], ["y"], name="hostile_gathernd")]
    graph = helper.make_graph(nodes, "gathernd", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
                                                 helper.make_tensor_value_info("i", TensorProto.INT64, [2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


# model builder, the inputs that crash OpenVINO, inputs that do not, the signal, the node
INFERENCE_CRASHES = {
    "range": (range_model, ["delta:[0,0]"], ["delta:[2,2]"], "signal 8 (SIGFPE)",
              "node 'hostile_range' (Range)"),
    "gathernd": (gathernd_model, ["i:[2147483648,2147483648]"], ["i:[1,1]"], "signal 11 (SIGSEGV)",
                 "node 'hostile_gathernd' (GatherND)"),
}


@pytest.fixture(scope="session")
def inference_crash_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inference")
    return {name: build(folder / f"{name}.onnx") for name, (build, *_) in INFERENCE_CRASHES.items()}


INFERENCE_COMMANDS = {
    "run --openvino": ["--openvino"],
    "run --fallback": ["--openvino", "--fallback", "ref"],  # the OpenVINO part of the hybrid runner
}


@pytest.mark.parametrize("command", sorted(INFERENCE_COMMANDS))
@pytest.mark.parametrize("case", sorted(INFERENCE_CRASHES))
def test_openvino_inference_crash_is_one_error_naming_the_node(run_parity, tmp_path, inference_crash_models, case,
                                                               command):
    _, crashing, _, signal, node = INFERENCE_CRASHES[case]
    model = inference_crash_models[case]
    result = run_parity("run", model, *INFERENCE_COMMANDS[command], "--val-range", *crashing, cwd=tmp_path,
                        timeout=TIMEOUT_S)
    assert result.returncode == 1, result.describe()
    assert not result.crash_markers(), result.describe()
    errors = result.lines("[E]")
    assert len(errors) == 1, result.describe()
    assert str(model) in errors[0] and signal in errors[0] and "inferring it" in errors[0], result.describe()
    assert node in errors[0], result.describe()
    assert sorted(p.name for p in tmp_path.iterdir()) == [], result.describe()  # no core file


@pytest.mark.parametrize("case", sorted(INFERENCE_CRASHES))
def test_the_same_models_infer_other_inputs(run_parity, inference_crash_models, case):
    _, _, fine, _, _ = INFERENCE_CRASHES[case]
    result = run_parity("run", inference_crash_models[case], "--openvino", "--val-range", *fine, timeout=TIMEOUT_S)
    assert result.returncode == 0, result.describe()


@pytest.mark.parametrize("case", sorted(INFERENCE_CRASHES))
def test_the_inference_crash_is_not_contained_in_process(run_parity, tmp_path, inference_crash_models, case):
    """PARITY_OPENVINO_IN_PROCESS=1 infers in the process only: the same inputs then kill it."""
    _, crashing, _, signal, _ = INFERENCE_CRASHES[case]
    number = 8 if "SIGFPE" in signal else 11
    result = run_parity("run", inference_crash_models[case], "--openvino", "--val-range", *crashing, cwd=tmp_path,
                        env={"PARITY_OPENVINO_IN_PROCESS": "1"}, timeout=TIMEOUT_S)
    assert result.returncode in (-number, 128 + number), result.describe()


# --- query_model ---------------------------------------------------------------------------------
QUERY_CRASH = {"PARITY_TEST_OPENVINO_QUERY_CRASH": "Neg"}


@pytest.fixture(scope="session")
def neg_model(tmp_path_factory):
    """Relu, Relu, Neg, Relu: the Neg is the node the query switch crashes on, third of four."""
    nodes = [helper.make_node("Relu", ["x"], ["r0"], name="relu_0"),
             helper.make_node("Relu", ["r0"], ["r1"], name="relu_1"),
             helper.make_node("Neg", ["r1"], ["n"], name="the_neg"),
             helper.make_node("Relu", ["n"], ["y"], name="relu_2")]
    graph = helper.make_graph(nodes, "neg", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("neg") / "neg.onnx"
    onnx.save(model, str(path))
    return path


QUERY_COMMANDS = {
    "inspect capability": lambda model, out: ["inspect", "capability", model, "--openvino", "-o", out / "cap"],
    "run --fallback": lambda model, out: ["run", model, "--openvino", "--fallback", "ref"],
}


@pytest.mark.parametrize("command", sorted(QUERY_COMMANDS))
def test_a_query_model_crash_is_one_error_naming_the_node(run_parity, tmp_path, neg_model, command):
    result = run_parity(*QUERY_COMMANDS[command](neg_model, tmp_path), cwd=tmp_path, env=QUERY_CRASH,
                        timeout=TIMEOUT_S)
    assert result.returncode == 1, result.describe()
    assert not result.crash_markers(), result.describe()
    errors = result.lines("[E]")
    assert len(errors) == 1, result.describe()
    assert str(neg_model) in errors[0] and "signal 11 (SIGSEGV)" in errors[0] and "query_model" in errors[0], \
        result.describe()
    assert "node 'the_neg' (Neg)" in errors[0], result.describe()
    assert sorted(p.name for p in tmp_path.iterdir()) == [], result.describe()


@pytest.mark.parametrize("command", sorted(QUERY_COMMANDS))
def test_the_query_answer_comes_back_from_the_child(run_parity, tmp_path, neg_model, command):
    """Without the switch the same commands succeed on the child's answer."""
    result = run_parity(*QUERY_COMMANDS[command](neg_model, tmp_path), cwd=tmp_path, timeout=TIMEOUT_S)
    assert result.returncode == 0, result.describe()
