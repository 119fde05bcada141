"""`parity check lint`: ONNX's checker, then the model (or each node alone) on the reference
runner; the JSON report has Polygraphy's layout and is compared with `polygraphy check lint`."""

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
    assert failing and failing[0]["level"] == "exception" and failing[0]["message"]
    messages = " ".join(e["message"] for e in ours["lint_entries"])
    assert "'unused_input'" in messages and "'unused_weight'" in messages
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
