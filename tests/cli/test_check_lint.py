"""`parity check lint`: ONNX's checker, then the model (or each node alone) on ONNX Runtime, as
Polygraphy does (or on the reference runner with --lint-runner ref); the JSON report has Polygraphy's
layout, sources and messages and is compared with `polygraphy check lint`."""

import json
import subprocess
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper

from graph_tools_util import SHARED_MODELS, assert_one_error


def broken_model():
    """good: Relu(x); bad: Relu(x)[3] + four[4] (cannot broadcast); downstream: Neg(bad).
    Plus an input and an initializer nothing uses."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="good"),
         helper.make_node("Add", ["r", "four"], ["s"], name="bad"),
         helper.make_node("Neg", ["s"], ["z"], name="downstream")],
        "broken",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("unused_input", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("four", TensorProto.FLOAT, [4], [1, 2, 3, 4]),
                     helper.make_tensor("unused_weight", TensorProto.FLOAT, [1], [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_valid_model_every_node_passes(run_parity, examples_dir, tmp_path):
    report = tmp_path / "report.json"
    result = run_parity("check", "lint", examples_dir / "small_cnn.onnx", "-o", report)
    assert result.returncode == 0, result.describe()
    data = json.loads(report.read_text())
    assert list(data) == ["summary", "lint_entries"]
    nodes = [n.name for n in onnx.load(str(examples_dir / "small_cnn.onnx")).graph.node]
    assert sorted(data["summary"]["passing"]) == sorted(nodes)
    assert data["summary"]["failing"] == []


def test_failing_node_report_matches_polygraphy_layout(run_parity, tmp_path):
    model_path = tmp_path / "broken.onnx"
    onnx.save(broken_model(), model_path)
    report = tmp_path / "parity.json"
    result = run_parity("check", "lint", model_path, "-o", report)
    assert result.returncode == 1, result.describe()
    assert not result.crash_markers()
    ours = json.loads(report.read_text())
    assert ours["summary"]["failing"] == ["bad"]
    assert ours["summary"]["passing"] == ["good"]
    failing = [e for e in ours["lint_entries"] if e.get("nodes") == ["bad"]]
    assert failing == [{"level": "exception", "source": "onnxruntime", "message": " Incompatible dimensions",
                        "nodes": ["bad"]}], ours
    # Polygraphy reports unused graph inputs (source onnx_graphsurgeon), not unused initializers.
    unused = [e for e in ours["lint_entries"] if "does not affect outputs" in e["message"]]
    assert unused == [{"level": "warning", "source": "onnx_graphsurgeon",
                       "message": "Input: 'unused_input' does not affect outputs, can be removed."}], ours
    assert any("LINT | Name: bad, Op: Add |" in line for line in result.lines("[E] "))

    theirs_path = tmp_path / "polygraphy.json"
    subprocess.run([str(Path(sys.executable).parent / "polygraphy"), "check", "lint", str(model_path), "-o", str(theirs_path)],
                   capture_output=True, text=True, timeout=300)
    theirs = json.loads(theirs_path.read_text())
    assert list(ours) == list(theirs)
    assert sorted(ours["summary"]) == sorted(theirs["summary"])
    assert ours["summary"]["failing"] == sorted(theirs["summary"]["failing"])
    assert ours["summary"]["passing"] == sorted(theirs["summary"]["passing"])
    for entry in ours["lint_entries"] + theirs["lint_entries"]:
        assert set(entry) <= {"level", "source", "message", "nodes"}
        assert entry["level"] in ("exception", "warning", "info")
    assert ours["lint_entries"] == theirs["lint_entries"]


def test_reference_runner_node_checks(run_parity, tmp_path):
    """--lint-runner ref: the node checks run on Parity's reference runner (source ref_runner, its
    own message); the graph checks are the same."""
    model_path = tmp_path / "broken.onnx"
    onnx.save(broken_model(), model_path)
    report = tmp_path / "report.json"
    result = run_parity("check", "lint", model_path, "-o", report, "--lint-runner", "ref")
    assert result.returncode == 1, result.describe()
    data = json.loads(report.read_text())
    assert data["summary"] == {"passing": ["good"], "failing": ["bad"]}
    failing = [e for e in data["lint_entries"] if e.get("nodes") == ["bad"]]
    assert len(failing) == 1 and failing[0]["source"] == "ref_runner" and "broadcast" in failing[0]["message"]
    assert any(e["source"] == "onnx_graphsurgeon" for e in data["lint_entries"])


def conditional_model():
    """If(cond) gives x ([2,3]) or y ([3,2]); MatMul(z, w[3,4]) works only with x."""
    then_graph = helper.make_graph([helper.make_node("Identity", ["x"], ["then_out"])], "then", [],
                                   [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, None)])
    else_graph = helper.make_graph([helper.make_node("Identity", ["y"], ["else_out"])], "else", [],
                                   [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, None)])
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["z"], name="choose", then_branch=then_graph, else_branch=else_graph),
         helper.make_node("MatMul", ["z", "w"], ["out"], name="product")],
        "conditional", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [1])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("x", TensorProto.FLOAT, [2, 3], [1] * 6),
                     helper.make_tensor("y", TensorProto.FLOAT, [3, 2], [1] * 6),
                     helper.make_tensor("w", TensorProto.FLOAT, [3, 4], [1] * 12)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def save_cond_inputs(path, *values):
    import numpy as np
    from polygraphy.json import save_json

    save_json([{"cond": np.array([value])} for value in values], str(path))


def test_load_input_data_decides_the_data_dependent_failure(run_parity, tmp_path):
    model_path = tmp_path / "conditional.onnx"
    onnx.save(conditional_model(), model_path)
    for value, code, passing, failing in ((True, 0, ["choose", "product"], []), (False, 1, ["choose"], ["product"])):
        inputs = tmp_path / f"cond_{value}.json"
        save_cond_inputs(inputs, value)
        report = tmp_path / f"report_{value}.json"
        result = run_parity("check", "lint", model_path, "-o", report, "--load-input-data", inputs)
        assert result.returncode == code, result.describe()
        data = json.loads(report.read_text())
        assert data["summary"] == {"passing": passing, "failing": failing}, data
        if failing:
            assert {"level": "exception", "source": "onnxruntime", "nodes": ["product"],
                    "message": " Incompatible dimensions for matrix multiplication"} in data["lint_entries"]


def test_iterations_each_run_and_the_failing_one_is_linted(run_parity, tmp_path):
    """The whole model runs on every iteration; the node checks use the first it fails on (with one
    iteration this is Polygraphy's behaviour, which lints the first iteration only)."""
    model_path = tmp_path / "conditional.onnx"
    onnx.save(conditional_model(), model_path)
    inputs = tmp_path / "cond.json"
    save_cond_inputs(inputs, True, False)
    report = tmp_path / "report.json"
    result = run_parity("check", "lint", model_path, "-o", report, "--load-input-data", inputs)
    assert result.returncode == 1, result.describe()
    assert json.loads(report.read_text())["summary"] == {"passing": ["choose"], "failing": ["product"]}
    # Generated data: --iterations 0 gives nothing to lint with, a clear error.
    result = run_parity("check", "lint", model_path, "-o", report, "--iterations", "0")
    assert_one_error(result, "--iterations 0")


def test_providers(run_parity, tmp_path):
    model_path = tmp_path / "broken.onnx"
    onnx.save(broken_model(), model_path)
    report = tmp_path / "report.json"
    result = run_parity("check", "lint", model_path, "-o", report, "--providers", "cpu")
    assert result.returncode == 1, result.describe()
    assert json.loads(report.read_text())["summary"]["failing"] == ["bad"]
    report.unlink()
    result = run_parity("check", "lint", model_path, "-o", report, "--providers", "no_such_provider")
    assert_one_error(result, "no_such_provider")
    assert not report.exists()
    result = run_parity("check", "lint", model_path, "-o", report, "--providers", "cpu", "--lint-runner", "ref")
    assert_one_error(result, "--lint-runner ref")


def test_cycle_is_one_error_and_no_report(run_parity, tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["v"], name="first"),
         helper.make_node("Relu", ["v"], ["w"], name="second"),
         helper.make_node("Neg", ["v"], ["z"], name="third")],
        "cyclic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model_path = tmp_path / "cyclic.onnx"
    model_path.write_bytes(model.SerializeToString())
    report = tmp_path / "report.json"
    result = run_parity("check", "lint", model_path, "-o", report)
    line = assert_one_error(result, "cycle")
    assert "'first'" in line or "'second'" in line
    assert not report.exists()


def test_shared_models_pass(run_parity, tmp_path):
    cases = (("ppocrv4_det", ["--input-shapes", "x:[1,3,64,64]"]), ("magika_standard_v3_3", []),
             ("silero_vad_v5", ["--input-shapes", "input:[1,512]", "state:[2,1,128]", "--val-range",
                                "sr:[16000,16000]"]))
    for name, flags in cases:
        report = tmp_path / f"{name}.json"
        result = run_parity("check", "lint", SHARED_MODELS / f"{name}.onnx", "-o", report, *flags, timeout=300)
        assert result.returncode == 0, result.describe()
        data = json.loads(report.read_text())
        assert data["summary"]["failing"] == []
        assert len(data["summary"]["passing"]) == len(onnx.load(str(SHARED_MODELS / f"{name}.onnx")).graph.node)


def test_duplicate_names_and_unnamed_nodes(run_parity, tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["a"], name="same"),
         helper.make_node("Neg", ["a"], ["b"], name="same"),
         helper.make_node("Abs", ["b"], ["z"])],
        "dup", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model_path = tmp_path / "dup.onnx"
    onnx.save(model, model_path)
    report = tmp_path / "report.json"
    result = run_parity("check", "lint", model_path, "-o", report)
    assert result.returncode == 1, result.describe()
    data = json.loads(report.read_text())
    assert data["summary"]["failing"] == ["same"]
    assert "polygraphy_unnamed_node_2" in data["summary"]["passing"]
    duplicate = [e for e in data["lint_entries"] if "Duplicate node name" in e["message"]]
    assert duplicate and duplicate[0]["nodes"] == ["same"] and duplicate[0]["level"] == "exception"
