"""Verdicts and texts that follow Polygraphy where its own CLI tests run them (issue: Polygraphy's CLI
tests pass on Parity; the ported cases are in tests/peers/test_polygraphy_cli_port.py):
`run` with no model, --iterations 0, a feed named in another case, --model-type, --val-range messages,
the unused-tolerance warning with --compare-func indices, sanitize's --override-input-shapes
(a non-input name cuts the graph, stale output shapes) and per-pass lines, lint of unknown and custom-domain ops.
Bad input keeps an error wherever Polygraphy errors too."""

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from conftest import REPO_ROOT

POLYGRAPHY_MODELS = REPO_ROOT.parent / "shared" / "polygraphy" / "tests" / "models"
EXAMPLES = REPO_ROOT.parent / "shared" / "polygraphy" / "examples" / "cli"
IDENTITY = POLYGRAPHY_MODELS / "identity.onnx"  # input x [1,1,2,2]


def save_feed(path: Path, feed: dict):
    from polygraphy.json import save_json

    save_json([feed], str(path))


def dims(value_info):
    return [d.dim_param if d.HasField("dim_param") else d.dim_value for d in value_info.type.tensor_type.shape.dim]


# ----- run without a model --------------------------------------------------------------------------

def test_run_with_no_model_and_no_runner_is_a_no_op(run_parity, tmp_path):
    silent = run_parity("run", "--silent", cwd=tmp_path)
    assert silent.returncode == 0 and silent.output == "", silent.describe()
    logged = run_parity("run", "--log-file", "logs/run.log", cwd=tmp_path)
    assert logged.returncode == 0, logged.describe()
    assert "PASSED" in (tmp_path / "logs" / "run.log").read_text()


def test_run_with_a_runner_and_no_model_is_an_error(run_parity, tmp_path):
    result = run_parity("run", "--onnxrt", cwd=tmp_path)
    assert result.returncode == 1, result.describe()
    assert any("One or more runners was specified, but no model file was provided" in line
               for line in result.lines("[E] ")), result.describe()


def test_model_type_onnx_is_accepted_and_others_refused(run_parity):
    assert run_parity("run", IDENTITY, "--model-type=onnx", "--ref").returncode == 0
    refused = run_parity("run", IDENTITY, "--model-type=engine", "--ref")
    assert refused.returncode == 1 and any("--model-type engine" in line for line in refused.lines("[E] ")), \
        refused.describe()


# ----- iterations and feeds -------------------------------------------------------------------------

def test_zero_iterations_run_nothing_and_pass(run_parity):
    result = run_parity("run", IDENTITY, "--ref", "--ref", "--iterations=0")
    assert result.returncode == 0, result.describe()
    assert "[W] Data loader did not yield any input data." in result.output
    negative = run_parity("run", IDENTITY, "--ref", "--iterations=-1")
    assert negative.returncode == 1 and negative.lines("[E] "), negative.describe()


def test_feed_named_in_another_case_is_matched_with_a_warning(run_parity, tmp_path):
    save_feed(tmp_path / "upper.json", {"X": np.ones((1, 1, 2, 2), np.float32)})
    result = run_parity("run", IDENTITY, "--ref", "--load-inputs", tmp_path / "upper.json")
    assert result.returncode == 0, result.describe()
    assert "[W] Input tensor: x | Buffer name (X) does not match expected input name (x)." in result.output


def test_feed_of_an_unrelated_name_is_taken_by_position_with_a_warning(run_parity, tmp_path):
    # Polygraphy's data loader cache: no exact or substring match, so the entry at the input's position.
    save_feed(tmp_path / "other.json", {"y": np.full((1, 1, 2, 2), 3, np.float32)})
    outputs = tmp_path / "outputs.json"
    result = run_parity("run", IDENTITY, "--ref", "--load-inputs", tmp_path / "other.json", "--save-outputs", outputs)
    assert result.returncode == 0, result.describe()
    assert "[W] Input tensor: x | Buffer name (y) does not match expected input name (x)." in result.output
    from polygraphy.json import load_json

    [(_, iterations)] = list(load_json(str(outputs)).items())
    assert np.array_equal(iterations[0]["y"], np.full((1, 1, 2, 2), 3, np.float32))


def test_feed_entries_no_input_takes_are_ignored_with_a_warning(run_parity, tmp_path):
    save_feed(tmp_path / "extra.json", {"x": np.ones((1, 1, 2, 2), np.float32),
                                        "unused": np.ones((2,), np.float32)})
    result = run_parity("run", IDENTITY, "--ref", "--load-inputs", tmp_path / "extra.json")
    assert result.returncode == 0, result.describe()
    assert "[W] Input tensor: unused | Not an input of the model: ignored." in result.output


# ----- --val-range messages (Polygraphy's texts) ----------------------------------------------------

def test_val_range_errors_use_polygraphys_messages(run_parity):
    cases = {
        "x:[1,2,3]": "In --val-range, for input: x, expected to receive exactly 2 values, but received 3.",
        "x:[a,b]": "In --val-range, for input: x, one or more elements of the range could not be parsed as a number.",
    }
    notes = {"x:[1,2,3]": "Note: Option was parsed as: input: x, range: (1, 2, 3)",
             "x:[a,b]": "Note: Option was parsed as: input: x, range: ('a', 'b')"}
    for value, message in cases.items():
        result = run_parity("run", IDENTITY, "--ref", "--val-range", value)
        assert result.returncode == 1, result.describe()
        assert f"[E] {message}" in result.output and notes[value] in result.output, result.describe()
    assert run_parity("run", IDENTITY, "--ref", "--val-range", "x:[1.0,2.0]", "[0.5,1.5]").returncode == 0


# ----- comparison options for another function -------------------------------------------------------

def test_rtol_with_indices_comparison_warns_that_it_is_ignored(run_parity):
    result = run_parity("run", IDENTITY, "--ref", "--ref", "--compare-func", "indices", "--rtol", "0.1")
    assert result.returncode == 0, result.describe()
    assert ("[W] Option: --rtol/--rel-tol is only valid for comparison function: 'simple'. The selected comparison "
            "function is: 'indices', so this option will be ignored.") in result.output
    plain = run_parity("run", IDENTITY, "--ref", "--ref", "--rtol", "0.1")
    assert "is only valid for comparison function" not in plain.output


# ----- surgeon sanitize -----------------------------------------------------------------------------

def test_override_input_shapes_updates_graph_output_shapes(run_parity, tmp_path):
    out = tmp_path / "dynamic.onnx"
    result = run_parity("surgeon", "sanitize", EXAMPLES / "surgeon" / "03_modifying_input_shapes" / "identity.onnx",
                        "--override-input-shapes", "x:['batch',1,2,2]", "-o", out)
    assert result.returncode == 0, result.describe()
    model = onnx.load(str(out))
    assert dims(model.graph.input[0]) == ["batch", 1, 2, 2]
    assert dims(model.graph.output[0]) == ["batch", 1, 2, 2]
    reduced = tmp_path / "reducable.onnx"
    result = run_parity("surgeon", "sanitize", POLYGRAPHY_MODELS / "reducable.onnx", "--override-input-shapes",
                        "Y0:[5]", "X0:[5]", "-o", reduced)
    assert result.returncode == 0, result.describe()
    model = onnx.load(str(reduced))
    assert [value.name for value in model.graph.input] == ["X0", "Y0"]
    assert all(dims(value) == [5] for value in model.graph.output), [dims(value) for value in model.graph.output]


def test_override_input_shapes_of_a_non_input_cuts_the_graph_there(run_parity, tmp_path):
    """As Polygraphy's sanitize does: the tensor becomes a graph input (after the model's own), the
    nodes only it needed go, and a warning says so. Bad text and a name that is no tensor stay errors."""
    out = tmp_path / "out.onnx"
    result = run_parity("surgeon", "sanitize", POLYGRAPHY_MODELS / "dynamic_identity.onnx",
                        "--override-input-shapes=Y:[1,2,3,4]", "-o", out)
    assert result.returncode == 0, result.describe()
    assert any("--override-input-shapes: 'Y' not among the inputs of" in line and "1 node(s)" in line
               for line in result.lines("[W] ")), result.describe()
    assert "[I] Overriding input shapes to:\n    {X [dtype=float32, shape=(1, 2, 'height', 'width')],\n     Y " \
        in result.stdout, result.describe()
    model = onnx.load(str(out))
    onnx.checker.check_model(model)
    assert [(value.name, dims(value)) for value in model.graph.input] == [("X", [1, 2, "height", "width"]),
                                                                          ("Y", [1, 2, 3, 4])]
    assert dims(model.graph.output[0]) == [1, 2, 3, 4] and len(model.graph.node) == 0
    # An intermediate tensor: the nodes before it go, those after it stay and take the new shape.
    cut = tmp_path / "cut.onnx"
    result = run_parity("surgeon", "sanitize", POLYGRAPHY_MODELS / "reducable.onnx",
                        "--override-input-shapes=add_out_4:[3]", "-o", cut)
    assert result.returncode == 0, result.describe()
    model = onnx.load(str(cut))
    assert [value.name for value in model.graph.input] == ["X0", "Y0", "add_out_4"]
    assert [node.op_type for node in model.graph.node] == ["Identity", "Identity"]
    assert all(dims(value) == [3] for value in model.graph.output), [dims(value) for value in model.graph.output]
    bad = run_parity("surgeon", "sanitize", POLYGRAPHY_MODELS / "dynamic_identity.onnx",
                     "--override-input-shapes=X:[1,2", "-o", out)
    assert bad.returncode == 1 and bad.lines("[E] "), bad.describe()
    ghost = run_parity("surgeon", "sanitize", POLYGRAPHY_MODELS / "dynamic_identity.onnx",
                       "--override-input-shapes=ghost:[1]", "-o", tmp_path / "ghost.onnx")
    assert ghost.returncode == 1 and any("'ghost'" in line for line in ghost.lines("[E] ")), ghost.describe()
    assert not (tmp_path / "ghost.onnx").exists()


def test_fold_constants_logs_each_pass(run_parity, tmp_path):
    out = tmp_path / "folded.onnx"
    one = run_parity("surgeon", "sanitize", POLYGRAPHY_MODELS / "const_foldable.onnx", "--fold-constants",
                     "--num-passes=1", "-o", out)
    assert one.returncode == 0, one.describe()
    assert "[I] Folding Constants | Pass 1" in one.stdout and "Pass 2" not in one.stdout
    assert "Total Nodes | Original:" in one.stdout
    assert len(onnx.load(str(out)).graph.node) == 1


# ----- check lint: unknown ops ---------------------------------------------------------------------

def one_node_model(op_type: str, domain: str):
    graph = helper.make_graph([helper.make_node(op_type, ["x"], ["y"], name="the_node", domain=domain)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def lint(run_parity, tmp_path, model):
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    result = run_parity("check", "lint", path, "-o", tmp_path / "report.json")
    return result, json.loads((tmp_path / "report.json").read_text())


def test_lint_custom_domain_op_warns_and_passes(run_parity, tmp_path):
    result, report = lint(run_parity, tmp_path, one_node_model("NegPos", "ai.onnx.contrib"))
    assert result.returncode == 0, result.describe()
    assert report["summary"]["passing"] == ["the_node"] and report["summary"]["failing"] == []
    assert [entry["level"] for entry in report["lint_entries"] if entry.get("nodes") == ["the_node"]] == ["warning"]
    custom = POLYGRAPHY_MODELS / "custom_op_node.onnx"  # no opset import for its domain, as in Polygraphy's test
    polygraphy_case = run_parity("check", "lint", custom, "-o", tmp_path / "custom.json")
    assert polygraphy_case.returncode == 0, polygraphy_case.describe()


def test_lint_unknown_op_in_the_default_domain_fails_the_node(run_parity, tmp_path):
    result, report = lint(run_parity, tmp_path, one_node_model("FakeOp", ""))
    assert result.returncode == 1, result.describe()
    assert report["summary"]["failing"] == ["the_node"]
    assert any(entry["level"] == "exception" and entry.get("nodes") == ["the_node"] for entry in report["lint_entries"])


# ----- surgeon insert -------------------------------------------------------------------------------

def test_insert_places_the_node_after_its_inputs_producer(run_parity, tmp_path):
    """Polygraphy's single-path case: the new node sits right after the Add it reads, before the other
    branch's Identity (which keeps reading add_out_4)."""
    out = tmp_path / "inserted.onnx"
    result = run_parity("surgeon", "insert", POLYGRAPHY_MODELS / "reducable.onnx", "-o", out, "--inputs=add_out_4",
                        "--outputs=identity_out_8", "--op=FakeOp")
    assert result.returncode == 0, result.describe()
    nodes = onnx.load(str(out)).graph.node
    assert [node.op_type for node in nodes] == ["Identity", "Identity", "Add", "FakeOp", "Identity"]
    assert nodes[-1].name == "onnx_graphsurgeon_node_7" and list(nodes[-1].input) == ["add_out_4"]


def test_insert_keeps_declared_output_shapes_that_inference_cannot_derive(run_parity, tmp_path):
    """Downstream of an op shape inference does not know, graph outputs keep the shapes the model
    declares ((1,) in reducable.onnx), as in Polygraphy; a graph output the new node makes anew (its
    input and output named alike) has a dtype and no shape, as Polygraphy's new tensor has."""
    single = tmp_path / "single.onnx"
    result = run_parity("surgeon", "insert", POLYGRAPHY_MODELS / "reducable.onnx", "-o", single,
                        "--inputs=add_out_4", "--outputs=identity_out_8", "--op=FakeOp")
    assert result.returncode == 0, result.describe()
    outputs = onnx.load(str(single)).graph.output
    assert [(value.name, dims(value)) for value in outputs] == [("identity_out_6", [1]), ("identity_out_8", [1])]
    renewed = tmp_path / "renewed.onnx"
    result = run_parity("surgeon", "insert", POLYGRAPHY_MODELS / "reducable.onnx", "-o", renewed,
                        "--inputs=identity_out_8", "--outputs=identity_out_8", "--op=FakeOp")
    assert result.returncode == 0, result.describe()
    outputs = {value.name: value for value in onnx.load(str(renewed)).graph.output}
    assert dims(outputs["identity_out_6"]) == [1]
    assert outputs["identity_out_8"].type.tensor_type.elem_type == TensorProto.FLOAT
    assert not outputs["identity_out_8"].type.tensor_type.HasField("shape")


def test_insert_replaces_a_declared_output_shape_that_inference_derives_anew(run_parity, tmp_path):
    source, out = tmp_path / "identity.onnx", tmp_path / "transposed.onnx"
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(source))
    result = run_parity("surgeon", "insert", source, "-o", out, "--inputs=x", "--outputs=y", "--op=Transpose",
                        "--attrs", "perm=[1,0]")
    assert result.returncode == 0, result.describe()
    assert dims(onnx.load(str(out)).graph.output[0]) == [3, 2]
    kept = tmp_path / "kept.onnx"
    result = run_parity("surgeon", "insert", source, "-o", kept, "--no-shape-inference", "--inputs=x",
                        "--outputs=y", "--op=Transpose", "--attrs", "perm=[1,0]")
    assert result.returncode == 0, result.describe()
    assert dims(onnx.load(str(kept)).graph.output[0]) == [2, 3]  # no inference: the declared shape, as Polygraphy
