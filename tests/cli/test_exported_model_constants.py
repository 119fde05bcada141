"""Constant nodes of exported transformers (tests/cli/exported_models.py: BERT and GPT-2 exported by
torch's TorchScript and dynamo exporters): `debug precision` searches only nodes `convert --keep-fp32`
can keep, `convert` keeps a Constant it is asked to keep, and `run --onnx-outputs mark all` compares
what Polygraphy's does (no Constant's value), with a layerwise summary that ranks no tensor failing only
through equal infinities or int32 clamping of shape arithmetic; the tensor-list flags take the keep-list
syntax."""

import json
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from exported_models import export
from graph_tools_util import assert_one_error
from run_util import load_polygraphy_json, polygraphy

KINDS = ("bert", "gpt2")
EXPORTERS = ("torchscript", "dynamo")


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """(kind, exporter) -> path of the model, each exported once."""
    folder = tmp_path_factory.mktemp("exported_models")
    paths = {}

    def get(kind, exporter):
        if (kind, exporter) not in paths:
            paths[kind, exporter] = export(kind, folder / f"{kind}_{exporter}.onnx", exporter)
        return paths[kind, exporter]

    return get


def is_constant(node):
    return node.op_type == "Constant" and node.domain in ("", "ai.onnx")


def float_constants(model):
    """Names of the main graph's Constant nodes whose value is a float32 tensor."""
    return [n.name for n in model.graph.node
            if is_constant(n) and n.attribute[0].name == "value" and n.attribute[0].t.data_type == TensorProto.FLOAT]


def keep_list_names(path):
    """Node names of a keep list file written by --save-keep-list ('node:NAME  # OP' lines)."""
    names = []
    for line in path.read_text().splitlines():
        line = line.split("  #")[0].strip()
        if line and not line.startswith("#"):
            assert line.startswith("node:"), line
            names.append(line[len("node:"):])
    return names


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("kind", KINDS)
def test_debug_precision_searches_only_nodes_convert_can_keep(run_parity, exported, tmp_path, kind, exporter):
    """Iteration 2 keeps every searched node: with Constants in the search list it could not be made
    (`--keep-fp32: no node matches node '.../Constant_7'`). Each searched node must be a computation
    that convert keeps from the saved list."""
    model_path = exported(kind, exporter)
    model = onnx.load(str(model_path))
    if exporter == "torchscript":
        assert float_constants(model), "the TorchScript export should have float Constant nodes"
    keep = tmp_path / "keep.txt"
    run = run_parity("debug", "precision", model_path, "--onnxrt", "--max-iterations", "2", "--latency-runs", "0",
                     "--save-keep-list", keep)
    assert run.returncode == 0, run.describe()
    assert not run.lines("[E] "), run.describe()
    all_kept = re.search(r"Iteration 2 .*\| keep all \| keeping (\d+)/(\d+) node\(s\) in float32 \| PASSED", run.output)
    assert all_kept, run.describe()
    names = keep_list_names(keep)
    assert len(names) == int(all_kept.group(2)), run.describe()
    op_types = {n.name: n.op_type for n in model.graph.node}
    assert not [name for name in names if op_types[name] == "Constant"], keep.read_text()
    converted = run_parity("convert", model_path, "--fp-to-fp16", "--keep-fp32", f"@{keep}",
                           "-o", tmp_path / "kept.onnx")
    assert converted.returncode == 0, converted.describe()
    assert not converted.lines("[W] "), converted.describe()


def test_convert_keeps_a_constant_node_in_float32(run_parity, exported, tmp_path):
    """`--keep-fp32 node:<Constant>` keeps the Constant's value in float32 (the converted nodes reading
    it read a Cast of it), and the converted model still runs."""
    model_path = exported("bert", "torchscript")
    model = onnx.load(str(model_path))
    constants = float_constants(model)
    assert constants
    name = constants[0]
    value = next(n.output[0] for n in model.graph.node if n.name == name)
    out = tmp_path / "kept_constant.onnx"
    run = run_parity("convert", model_path, "--fp-to-fp16", "--keep-fp32", f"node:{name}", "-o", out)
    assert run.returncode == 0, run.describe()
    converted = onnx.load(str(out))
    stored = [t for t in converted.graph.initializer if t.name == value]
    assert len(stored) == 1 and stored[0].data_type == TensorProto.FLOAT, [t.name for t in converted.graph.initializer]
    readers = [n for n in converted.graph.node if value in n.input]
    assert readers and all(n.op_type == "Cast" for n in readers), readers
    # Without the keep entry the same value is converted to float16.
    plain = tmp_path / "plain.onnx"
    assert run_parity("convert", model_path, "--fp-to-fp16", "-o", plain).returncode == 0
    assert [t.data_type for t in onnx.load(str(plain)).graph.initializer if t.name == value] == [TensorProto.FLOAT16]
    ran = run_parity("run", out, "--onnxrt")
    assert ran.returncode == 0, ran.describe()


def test_convert_op_constant_matches_the_constant_nodes(run_parity, exported, tmp_path):
    """`op:Constant` keeps every Constant (no "no node has op type 'Constant'" warning): every float
    Constant's value stays float32."""
    model_path = exported("gpt2", "torchscript")
    model = onnx.load(str(model_path))
    values = {n.output[0] for n in model.graph.node if n.name in set(float_constants(model))}
    assert values
    out = tmp_path / "kept_constants.onnx"
    run = run_parity("convert", model_path, "--fp-to-fp16", "--keep-fp32", "op:Constant", "-o", out)
    assert run.returncode == 0, run.describe()
    assert not run.lines("[W] "), run.describe()
    types = {t.name: t.data_type for t in onnx.load(str(out)).graph.initializer}
    assert {types[v] for v in values} == {TensorProto.FLOAT}


def polygraphy_mark_all_count(model):
    """Tensors Polygraphy's `--onnx-outputs mark all` compares (polygraphy.backend.onnx.util.all_tensor_names):
    every output of every main-graph node other than Constant, each once."""
    names = []
    for node in model.graph.node:
        if node.op_type != "Constant":
            names += [o for o in node.output if o and o not in names]
    return len(names)


def report_of(run_parity, model_path, tmp_path, *flags):
    report = tmp_path / "report.json"
    run = run_parity("run", model_path, *flags, "--onnx-outputs", "mark", "all", "--report", report)
    assert run.returncode == 0, run.describe()
    return run, json.loads(report.read_text())


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("held", [False, True], ids=["streamed", "held"])
def test_mark_all_leaves_out_constants_as_polygraphy(run_parity, exported, tmp_path, kind, exporter, held):
    """`mark all` compares the tensors Polygraphy's does: no Constant's value (the TorchScript exports have
    dozens), streamed (two live runners) or held (--save-outputs keeps every result)."""
    model_path = exported(kind, exporter)
    model = onnx.load(str(model_path))
    flags = ["--onnxrt", "--ref"]
    if held:
        flags += ["--save-outputs", tmp_path / "outputs.json"]
    run, report = report_of(run_parity, model_path, tmp_path, *flags)
    (layerwise,) = report["layerwise"]
    assert layerwise["compared"] == polygraphy_mark_all_count(model), run.describe()
    constants = {o for n in model.graph.node if is_constant(n) for o in n.output}
    compared = set(re.findall(r"Comparing Output: '([^']+)'", run.output))
    assert compared and not compared & constants, run.describe()
    if held:
        for runner_name, iterations in load_polygraphy_json(tmp_path / "outputs.json").items():
            saved = set(iterations[0].keys())
            assert len(saved) == layerwise["compared"] and not saved & constants, runner_name


def test_mark_all_compares_as_many_tensors_as_polygraphy(run_parity, exported):
    """The same count from Polygraphy itself, on the TorchScript BERT (float Constants, shape arithmetic)."""
    model_path = exported("bert", "torchscript")
    code, log = polygraphy("run", model_path, "--onnxrt", "--onnxrt", "--onnx-outputs", "mark", "all")
    theirs = len(re.findall(r"Comparing Output: '", log))
    run = run_parity("run", model_path, "--onnxrt", "--onnxrt", "--onnx-outputs", "mark", "all")
    assert code == run.returncode == 0, run.describe()
    ours = len(re.findall(r"Comparing Output: '", run.output))
    assert theirs > 0 and ours == theirs, (ours, theirs)


def outputs_of(model, op_type):
    return [o for n in model.graph.node if n.op_type == op_type for o in n.output if o]


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_exclude_outputs_takes_op_types_patterns_and_files(run_parity, exported, tmp_path, exporter):
    """--onnx-exclude-outputs takes the keep-list syntax: op:TYPE, re:PATTERN and @file (whose lines may be
    any entry); each leaves exactly its tensors out of `mark all`."""
    model_path = exported("gpt2", exporter)
    model = onnx.load(str(model_path))
    everything = polygraphy_mark_all_count(model)
    gathers, shapes = outputs_of(model, "Gather"), outputs_of(model, "Shape")
    matmuls = outputs_of(model, "MatMul")
    assert gathers and matmuls
    listed = tmp_path / "exclude.txt"
    listed.write_text("# leave out the MatMuls by name\n" + "\n".join(matmuls) + "\nop:Shape\n")
    pattern = re.escape(matmuls[0])
    cases = {
        ("op:Gather",): set(gathers),
        (f"@{listed}",): set(matmuls) | set(shapes),
        (f"re:^{pattern}$", "op:Gather"): {matmuls[0]} | set(gathers),
    }
    for entries, left_out in cases.items():
        run, report = report_of(run_parity, model_path, tmp_path, "--onnxrt", "--onnxrt",
                                "--onnx-exclude-outputs", *entries)
        compared = set(re.findall(r"Comparing Output: '([^']+)'", run.output))
        assert not compared & left_out, (entries, run.describe())
        assert report["layerwise"][0]["compared"] == everything - len(left_out), (entries, run.describe())


def test_onnx_outputs_takes_op_types(run_parity, exported, tmp_path):
    """--onnx-outputs op:MatMul compares the MatMuls' outputs besides the graph outputs."""
    model_path = exported("bert", "torchscript")
    model = onnx.load(str(model_path))
    matmuls = outputs_of(model, "MatMul")
    report = tmp_path / "report.json"
    run = run_parity("run", model_path, "--onnxrt", "--onnxrt", "--onnx-outputs", "op:MatMul", "--report", report)
    assert run.returncode == 0, run.describe()
    compared = set(re.findall(r"Comparing Output: '([^']+)'", run.output))
    assert compared == set(matmuls) | {o.name for o in model.graph.output}, run.describe()


def test_convert_outputs_take_op_types_and_files(run_parity, exported, tmp_path):
    """convert's --onnx-outputs / --onnx-exclude-outputs share the syntax."""
    model_path = exported("bert", "dynamo")
    model = onnx.load(str(model_path))
    matmuls = outputs_of(model, "MatMul")
    listed = tmp_path / "exclude.txt"
    listed.write_text(matmuls[0] + "\n")
    out = tmp_path / "marked.onnx"
    run = run_parity("convert", model_path, "--onnx-outputs", "op:MatMul", "--onnx-exclude-outputs", f"@{listed}",
                     "-o", out)
    assert run.returncode == 0, run.describe()
    assert [o.name for o in onnx.load(str(out)).graph.output] == matmuls[1:]


@pytest.mark.parametrize("flags, needle", [
    (("--onnx-exclude-outputs", "re:^no_such_tensor$"), "re:^no_such_tensor$"),
    (("--onnx-outputs", "node:no_such_node"), "no_such_node"),
    (("--onnx-exclude-outputs", "re:("), "invalid regular expression"),
    (("--onnx-exclude-outputs", "@/nonexistent/exclude.txt"), "/nonexistent/exclude.txt"),
])
def test_bad_tensor_entries_are_one_clear_error(run_parity, exported, flags, needle):
    model_path = exported("bert", "dynamo")
    run = run_parity("run", model_path, "--onnxrt", *flags)
    assert_one_error(run, needle)


def masked_softmax_model(path):
    """x [2,4] + a -inf attention mask (a computed Add, as in BERT/GPT-2 attention) -> Softmax. Built here:
    the tiny exported models' default feeds never reach their masks' -inf."""
    mask = np.array([[0, -np.inf, 0, -np.inf]], dtype=np.float32)
    nodes = [helper.make_node("Constant", [], ["mask"], name="mask_const", value=numpy_helper.from_array(mask)),
             helper.make_node("Add", ["x", "mask"], ["scores"], name="add_mask"),
             helper.make_node("Softmax", ["scores"], ["y"], name="softmax", axis=-1)]
    graph = helper.make_graph(nodes, "masked", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def clamped_slice_end_model(path):
    """x [2,8] sliced from 1 to end = INT64_MAX * 1 (computed, so mark all compares it): OpenVINO computes
    shape arithmetic in int32 and returns INT32_MAX there. Built here: the exported models' INT64_MAX ends
    are Constants, which mark all leaves out."""
    const = lambda name, values: helper.make_node("Constant", [], [name], name=f"{name}_const",
                                                  value=numpy_helper.from_array(np.array(values, np.int64)))
    nodes = [const("big", [np.iinfo(np.int64).max]), const("one", [1]),
             helper.make_node("Mul", ["big", "one"], ["end"], name="end_mul"),
             helper.make_node("Slice", ["x", "one", "end", "one"], ["sliced"], name="slice"),
             helper.make_node("Relu", ["sliced"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "clamped", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def layerwise_summary(run):
    return run.output[run.output.index("Layerwise Summary"):]


@pytest.mark.parametrize("held", [False, True], ids=["streamed", "held"])
def test_equal_infinities_are_no_divergence(run_parity, tmp_path, held):
    """Two identical ONNX Runtime runs: the -inf mask's tensor fails Polygraphy's rule (inf - inf is NaN), and
    the layerwise summary says so instead of naming it the first divergence with a NaN error."""
    model = masked_softmax_model(tmp_path / "masked.onnx")
    report = tmp_path / "report.json"
    flags = ["--save-outputs", tmp_path / "outputs.json"] if held else []
    run = run_parity("run", model, "--onnxrt", "--onnxrt", "--onnx-outputs", "mark", "all", "--report", report, *flags)
    assert run.returncode == 1, run.describe()  # Polygraphy's verdict
    summary = layerwise_summary(run)
    assert "First divergence" not in summary and "nan" not in summary, summary
    assert "tensor 'scores' produced by node 'add_mask' [Op: Add]: fails only where both runs produced the same " \
           "infinity" in summary, summary
    (layerwise,) = json.loads(report.read_text())["layerwise"]
    assert layerwise["first_divergence"] is None
    assert [e["tensor"] for e in layerwise["not_divergences"]] == ["scores"]
    assert "scores" not in [e["tensor"] for e in layerwise["worst"]]
    passing = run_parity("run", model, "--onnxrt", "--onnxrt", "--onnx-outputs", "mark", "all",
                         "--infinities-compare-equal", *flags)
    assert passing.returncode == 0, passing.describe()


def test_int32_clamping_of_shape_arithmetic_is_no_divergence(run_parity, tmp_path):
    model = clamped_slice_end_model(tmp_path / "clamped.onnx")
    report = tmp_path / "report.json"
    run = run_parity("run", model, "--onnxrt", "--openvino", "--ov-precision", "f32", "--onnx-outputs", "mark", "all",
                     "--report", report)
    (layerwise,) = json.loads(report.read_text())["layerwise"]
    assert [e["tensor"] for e in layerwise["not_divergences"]] == ["end"], run.describe()
    assert "clamping to int32" in layerwise["not_divergences"][0]["reason"]
    assert layerwise["first_divergence"] is None and not any(e["tensor"] == "end" for e in layerwise["worst"])
    assert "First divergence" not in layerwise_summary(run), run.describe()


def constant_graph_output_model(path):
    """y = Relu(x) and a graph output a Constant produces (built here: exporters fold such outputs away)."""
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu"),
             helper.make_node("Constant", [], ["c"], name="c_const",
                              value=numpy_helper.from_array(np.array([1.5], np.float32)))]
    graph = helper.make_graph(nodes, "constant_output", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("c", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("source", ["gpt2_torchscript", "constant_output"])
def test_save_onnx_marks_what_mark_all_compares(run_parity, exported, tmp_path, source):
    """`run --save-onnx` with mark all saves the model with the outputs the run compares: no Constant's value,
    not even a graph output a Constant produces (Polygraphy's mark all drops it too)."""
    model_path = (exported("gpt2", "torchscript") if source == "gpt2_torchscript"
                  else constant_graph_output_model(tmp_path / "constant_output.onnx"))
    saved = tmp_path / "saved.onnx"
    run = run_parity("run", model_path, "--onnxrt", "--onnxrt", "--onnx-outputs", "mark", "all", "--save-onnx", saved)
    assert run.returncode == 0, run.describe()
    compared = re.findall(r"Comparing Output: '([^']+)'", run.output)
    assert [o.name for o in onnx.load(str(saved)).graph.output] == compared, run.describe()
