"""`parity inspect capability model.onnx --openvino` and the hybrid run `parity run --openvino --fallback`.

- A model built here with two planted Det nodes (OpenVINO's ONNX frontend has no conversion rule for
  Det): the summary names both nodes and OpenVINO's reason; the partition is supported 0-0,
  unsupported 1-1, supported 2-4, unsupported 5-5, supported 6-6, saved under the names Polygraphy's
  `inspect capability` gives the same partition (derived below from its source); every saved model
  passes ONNX's checker; running the saved subgraphs in sequence, the supported ones on OpenVINO
  (its Python package) and the unsupported ones on `parity run --ref`, reproduces the whole model's
  outputs (ONNX Runtime's on the original model).
- silero_vad_v5.onnx, which OpenVINO 2026.4.1 refuses outright: its If node is unsupported as a
  whole, and the summary names the Conv and ReduceMean of its bodies with OpenVINO's reasons; the
  same sequence check; `parity run --ref --openvino --fallback ref --ov-precision f32` passes.
- A fully supported model (silero without its If; GPT-2 from both of torch's exporters): said so, nothing
  written, as Polygraphy. A float16 If whose outputs shape inference leaves without a shape: the
  subgraphs' boundary tensors are typed by a reference run; when that run fails, the subgraph that
  fails ONNX's checker is reported and the others are written.
- Bad input: a complex64 input, an output folder that cannot be written (nothing half-written),
  --fallback without --openvino.
"""

import os
import stat

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import lines_with_prefix
from run_util import RUN_TIMEOUT, SHARED_MODELS, load_polygraphy_json, single_error_line

SILERO = SHARED_MODELS / "silero_vad_v5.onnx"
SILERO_IFLESS = SHARED_MODELS / "silero_vad_op18_ifless.onnx"
# As the other tests run silero (check lint): one 512-sample chunk at 16 kHz.
SILERO_INPUTS = ["--input-shapes", "input:[1,512]", "state:[2,1,128]", "--val-range", "sr:[16000,16000]"]


def planted_model(path):
    """x[2,3,3]: Mul(x,2) | Det 'planted_det' | Sigmoid, Add(+1) -> y1, Relu(x) | Det 'planted_det_2' | Mul -> y2."""
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["doubled"], name="double"),            # 0
        helper.make_node("Det", ["doubled"], ["det"], name="planted_det"),             # 1
        helper.make_node("Sigmoid", ["det"], ["squashed"], name="squash"),             # 2
        helper.make_node("Add", ["squashed", "one"], ["y1"], name="add_one"),          # 3
        helper.make_node("Relu", ["x"], ["rectified"], name="rectify"),                # 4
        helper.make_node("Det", ["rectified"], ["det2"], name="planted_det_2"),        # 5
        helper.make_node("Mul", ["det2", "y1"], ["y2"], name="combine"),               # 6
    ]
    graph = helper.make_graph(
        nodes, "planted",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, [2])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
         helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def polygraphy_file_names(supported_subgraphs, node_count):
    """The files Polygraphy's `inspect capability --with-partitioning` writes for these supported node
    lists (its supports_model_variant: each supported list, and the gaps before, between and after as
    unsupported; end indices inclusive in the names)."""
    names = []
    for index, nodes in enumerate(supported_subgraphs):
        names.append(f"supported_subgraph-nodes-{nodes[0]}-{nodes[-1]}.onnx")
        if index == 0 and nodes[0] != 0:
            names.append(f"unsupported_subgraph-nodes-0-{nodes[0] - 1}.onnx")
        if index == len(supported_subgraphs) - 1 and nodes[-1] != node_count - 1:
            names.append(f"unsupported_subgraph-nodes-{nodes[-1] + 1}-{node_count - 1}.onnx")
        if index < len(supported_subgraphs) - 1:
            names.append(f"unsupported_subgraph-nodes-{nodes[-1] + 1}-{supported_subgraphs[index + 1][0] - 1}.onnx")
    return sorted(names)


def subgraph_files(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith(".onnx"))


def node_range(name):
    first, last = name[: -len(".onnx")].split("-nodes-")[1].split("-")
    return int(first), int(last)


def run_in_sequence(run_parity, folder, feed, tmp_path):
    """Runs the saved subgraphs in node order: supported ones on OpenVINO (f32), unsupported ones on
    `parity run --ref`, handing tensors across. Returns every tensor produced."""
    import openvino as ov
    from polygraphy.json import save_json

    core = ov.Core()
    values = dict(feed)
    for name in sorted(subgraph_files(folder), key=lambda name: node_range(name)[0]):
        model = onnx.load(str(folder / name))
        inputs = {value.name: values[value.name] for value in model.graph.input}
        if name.startswith("supported_"):
            compiled = core.compile_model(str(folder / name), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
            results = compiled(inputs)
            for output in compiled.outputs:
                values[output.get_any_name()] = np.array(results[output])
        else:
            inputs_path, outputs_path = tmp_path / f"{name}.inputs.json", tmp_path / f"{name}.outputs.json"
            save_json([inputs], str(inputs_path))
            run = run_parity("run", folder / name, "--ref", "--load-inputs", inputs_path, "--save-outputs",
                             outputs_path, timeout=RUN_TIMEOUT)
            assert run.returncode == 0, run.describe()
            results = load_polygraphy_json(outputs_path)
            for output_name, array in results[0][1][0].items():
                values[output_name] = np.array(array)
    return values


def onnxruntime_outputs(path, feed):
    import onnxruntime
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, feed)))


def test_planted_ops_are_named_with_openvinos_reason_and_saved_as_polygraphy_names_them(run_parity, tmp_path):
    model = planted_model(tmp_path / "planted.onnx")
    out = tmp_path / "dumps"
    run = run_parity("inspect", "capability", model, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    summary_rows = [line.strip() for line in run.output.splitlines() if line.strip().startswith("Det ")]
    assert len(summary_rows) == 1, run.describe()
    row = summary_rows[0]
    assert "|       2 |" in row and "planted_det, planted_det_2" in row, row
    assert "No conversion rule found for operations: Det-17" in row, row
    # TensorRT's parser would report nodes 0, 2-4 and 6 as supported; Polygraphy names the files so.
    expected = polygraphy_file_names([[0], [2, 3, 4], [6]], 7)
    assert subgraph_files(out) == expected
    assert "Det" in (out / "results.txt").read_text()
    for name in expected:
        onnx.checker.check_model(onnx.load(str(out / name)), full_check=True)
    feed = {"x": np.random.RandomState(1).uniform(-1, 1, (2, 3, 3)).astype(np.float32)}
    values = run_in_sequence(run_parity, out, feed, tmp_path)
    for name, expected_value in onnxruntime_outputs(model, feed).items():
        np.testing.assert_allclose(values[name], expected_value, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fallback", ["ref", "onnxrt"])
def test_hybrid_run_of_planted_model_passes_and_says_where_nodes_ran(run_parity, tmp_path, fallback):
    model = planted_model(tmp_path / "planted.onnx")
    run = run_parity("run", model, "--ref", "--openvino", "--fallback", fallback, "--ov-precision", "f32",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert f"node 1 (planted_det) run on {fallback}" in run.output, run.describe()
    assert f"node 5 (planted_det_2) run on {fallback}" in run.output, run.describe()
    assert "nodes 2-4 (squash, add_one, rectify) run on openvino" in run.output, run.describe()
    assert "PASSED" in run.output


def test_hybrid_run_layerwise_compares_every_tensor(run_parity, tmp_path):
    model = planted_model(tmp_path / "planted.onnx")
    run = run_parity("run", model, "--ref", "--openvino", "--fallback", "ref", "--ov-precision", "f32",
                     "--onnx-outputs", "mark", "all", timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    for tensor in ("doubled", "det", "squashed", "rectified", "det2"):
        assert tensor in run.output, run.describe()


def test_silero_if_is_unsupported_as_a_whole_with_its_body_nodes_named(run_parity, tmp_path):
    out = tmp_path / "silero"
    run = run_parity("inspect", "capability", SILERO, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    text = run.output
    assert "If_0 (If) is unsupported as a whole" in text, run.describe()
    assert "The input data tensor's rank has to be known (static)" in text
    assert "Unsupported input type dynamic" in text
    assert "(Conv)" in text and "(ReduceMean)" in text
    files = subgraph_files(out)
    assert "unsupported_subgraph-nodes-2-2.onnx" in files, files
    graph = onnx.load(str(SILERO)).graph
    assert graph.node[2].op_type == "If"
    supported = [list(range(node_range(n)[0], node_range(n)[1] + 1)) for n in files if n.startswith("supported_")]
    supported.sort()
    assert files == polygraphy_file_names(supported, len(graph.node))
    for name in files:
        onnx.checker.check_model(onnx.load(str(out / name)))
    rng = np.random.RandomState(0)
    feed = {"input": rng.uniform(-1, 1, (1, 512)).astype(np.float32),
            "state": rng.uniform(-1, 1, (2, 1, 128)).astype(np.float32),
            "sr": np.array(16000, dtype=np.int64)}
    values = run_in_sequence(run_parity, out, feed, tmp_path)
    for name, expected_value in onnxruntime_outputs(SILERO, feed).items():
        np.testing.assert_allclose(values[name], expected_value, rtol=1e-4, atol=1e-4)


def test_silero_hybrid_run_passes_at_f32(run_parity):
    run = run_parity("run", SILERO, "--ref", "--openvino", "--fallback", "ref", "--ov-precision", "f32",
                     *SILERO_INPUTS, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "node 2 (If_0) run on ref" in run.output, run.describe()
    assert "PASSED" in run.output


@pytest.fixture(scope="module")
def exported_gpt2(tmp_path_factory):
    """GPT-2 as users bring it, from both of torch's exporters (tiny)."""
    from exported_models import export
    folder = tmp_path_factory.mktemp("exported")
    return {exporter: export("gpt2", folder / f"gpt2_{exporter}.onnx", exporter) for exporter in ("torchscript", "dynamo")}


@pytest.mark.parametrize("model", ["silero_ifless", "gpt2_torchscript", "gpt2_dynamo"])
def test_fully_supported_model_writes_nothing(run_parity, tmp_path, exported_gpt2, model):
    """Issue 38: as Polygraphy, a fully supported model is said to be so and nothing is written (a copy of the
    whole model, 214 MB for GPT-2, was)."""
    path = SILERO_IFLESS if model == "silero_ifless" else exported_gpt2[model.split("_")[1]]
    out = tmp_path / "dumps"
    run = run_parity("inspect", "capability", path, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "Graph is fully supported by OpenVINO; Will not generate subgraphs." in run.output, run.describe()
    assert not out.exists()


def test_complex_input_is_refused_naming_the_input(run_parity, tmp_path):
    graph = helper.make_graph([helper.make_node("Identity", ["z"], ["w"], name="copy")], "complex",
                              [helper.make_tensor_value_info("z", TensorProto.COMPLEX64, [2])],
                              [helper.make_tensor_value_info("w", TensorProto.COMPLEX64, [2])])
    path = tmp_path / "complex.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    out = tmp_path / "never"
    run = run_parity("inspect", "capability", path, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode != 0
    error = single_error_line(run)
    assert "input 'z'" in error and "complex64" in error and "OpenVINO" in error, error
    assert not out.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_unwritable_output_folder_leaves_nothing(run_parity, tmp_path):
    model = planted_model(tmp_path / "planted.onnx")
    out = tmp_path / "locked"
    out.mkdir()
    out.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        run = run_parity("inspect", "capability", model, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    finally:
        out.chmod(stat.S_IRWXU)
    assert run.returncode != 0
    error = single_error_line(run)
    assert str(out) in error, error
    assert os.listdir(out) == []


def test_failed_write_removes_the_subgraphs_already_written(run_parity, tmp_path):
    model = planted_model(tmp_path / "planted.onnx")
    out = tmp_path / "dumps"
    (out / "supported_subgraph-nodes-6-6.onnx").mkdir(parents=True)  # the last file cannot replace a folder
    run = run_parity("inspect", "capability", model, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode != 0
    error = single_error_line(run)
    assert "nothing left there" in error, error
    assert os.listdir(out) == ["supported_subgraph-nodes-6-6.onnx"]


def test_output_path_that_is_a_file_is_refused(run_parity, tmp_path):
    model = planted_model(tmp_path / "planted.onnx")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    run = run_parity("inspect", "capability", model, "--openvino", "-o", blocker, timeout=RUN_TIMEOUT)
    assert run.returncode != 0
    assert "cannot create the output folder" in single_error_line(run)
    assert blocker.read_text() == "x"


def test_fallback_needs_openvino_and_capability_needs_a_backend(run_parity, tmp_path):
    model = planted_model(tmp_path / "planted.onnx")
    run = run_parity("run", model, "--ref", "--fallback", "ref")
    assert "give --openvino" in single_error_line(run)
    run = run_parity("inspect", "capability", model, "-o", tmp_path / "x")
    assert "give --openvino" in single_error_line(run)


def if_with_planted_body_model(path):
    """x[3,3], c: Relu 'rectify' | If 'choose' (then: Det 'body_det'; else: ReduceSum 'body_sum') | Add 'add_one' -> y."""
    then_branch = helper.make_graph(
        [helper.make_node("Det", ["rectified"], ["then_out"], name="body_det")], "then_branch", [],
        [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [])])
    else_branch = helper.make_graph(
        [helper.make_node("ReduceSum", ["rectified"], ["else_out"], name="body_sum", keepdims=0)], "else_branch", [],
        [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [])])
    nodes = [
        helper.make_node("Relu", ["x"], ["rectified"], name="rectify"),
        helper.make_node("If", ["c"], ["chosen"], name="choose", then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Add", ["chosen", "one"], ["y"], name="add_one"),
    ]
    graph = helper.make_graph(
        nodes, "if_body",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
        [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_if_whose_body_holds_the_planted_op_is_unsupported_as_a_whole(run_parity, tmp_path):
    model = if_with_planted_body_model(tmp_path / "if_body.onnx")
    out = tmp_path / "dumps"
    run = run_parity("inspect", "capability", model, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "choose (If) is unsupported as a whole" in run.output, run.describe()
    assert "then_branch: body_det (Det): No conversion rule found for operations: Det-17" in run.output
    assert "body_sum" not in run.output
    assert subgraph_files(out) == polygraphy_file_names([[0], [2]], 3)
    for value in (True, False):
        run = run_parity("run", model, "--ref", "--openvino", "--fallback", "ref", "--ov-precision", "f32",
                         "--val-range", f"c:[{int(value)},{int(value)}]", timeout=RUN_TIMEOUT)
        assert run.returncode == 0, run.describe()
        assert "node 1 (choose) run on ref" in run.output, run.describe()


POLYGRAPHY_WITH_PARITYS_PARTITION = r'''
"""Runs Polygraphy's own `inspect capability --with-partitioning` with TensorRT's parser replaced by
an answer built from the partition Parity found (TensorRT cannot be installed here): nodes in
Parity's supported files are supported. What Polygraphy then writes is its file layout for the same
partition."""
import json, sys
import onnx
import polygraphy.tools.inspect.subtool.capability as capability

supported_nodes = set(json.loads(sys.argv[1]))
names = json.loads(sys.argv[2])  # node names of the whole model, in order


class Parser:
    num_errors = 1

    def get_error(self, index):
        return "unsupported (as Parity found)"


def supports_model(path):
    nodes = [names.index(node.name) for node in onnx.load(path).graph.node]
    groups = []
    for local, index in enumerate(nodes):
        supported = index in supported_nodes
        if groups and groups[-1][1] == supported:
            groups[-1][0].append(local)
        else:
            groups.append(([local], supported))
    if not any(supported for _, supported in groups):
        return False, [], Parser()  # as TensorRT: nothing in it to run
    return all(supported for _, supported in groups), groups, Parser()


capability.supports_model = supports_model
from polygraphy.tools._main import main
sys.argv = ["polygraphy", "inspect", "capability", "--with-partitioning", "--shape-inference", *sys.argv[3:]]
sys.exit(main())
'''


# Only the planted model: on the If model, Polygraphy's own extraction of the If node (ONNX-GraphSurgeon
# lists no implicit inputs of an If) makes an invalid intermediate model and the run stops; the If
# models' names are checked against polygraphy_file_names instead.
@pytest.mark.parametrize("build", [planted_model], ids=["planted"])
def test_file_layout_matches_polygraphys_for_the_same_partition(run_parity, tmp_path, build):
    import json
    import subprocess
    import sys

    model = build(tmp_path / "model.onnx")
    parity_out, polygraphy_out = tmp_path / "parity", tmp_path / "polygraphy"
    run = run_parity("inspect", "capability", model, "--openvino", "-o", parity_out, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    supported = [i for name in subgraph_files(parity_out) if name.startswith("supported_")
                 for i in range(node_range(name)[0], node_range(name)[1] + 1)]
    script = tmp_path / "polygraphy_capability.py"
    script.write_text(POLYGRAPHY_WITH_PARITYS_PARTITION)
    names = [node.name for node in onnx.load(str(model)).graph.node]
    completed = subprocess.run([sys.executable, str(script), json.dumps(supported), json.dumps(names), str(model),
                                "-o", str(polygraphy_out)], capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert subgraph_files(parity_out) == subgraph_files(polygraphy_out)
    # The same nodes in each file.
    for name in subgraph_files(parity_out):
        ours = [node.name for node in onnx.load(str(parity_out / name)).graph.node if node.op_type != "Constant"]
        theirs = [node.name for node in onnx.load(str(polygraphy_out / name)).graph.node if node.op_type != "Constant"]
        assert ours == theirs, name


@pytest.mark.parametrize("filename", sorted(p.name for p in SHARED_MODELS.glob("*.onnx")))
def test_every_shared_model_is_partitioned_into_checked_subgraphs_covering_every_node(run_parity, tmp_path,
                                                                                       filename):
    path = SHARED_MODELS / filename
    out = tmp_path / "dumps"
    run = run_parity("inspect", "capability", path, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    if "Graph is fully supported by OpenVINO" in run.output:
        assert not out.exists()  # as Polygraphy: nothing written
        return
    files = sorted(subgraph_files(out), key=lambda name: node_range(name)[0])
    count = len(onnx.load(str(path), load_external_data=False).graph.node)
    assert "===== Summary =====" in run.output
    covered = [i for name in files for i in range(node_range(name)[0], node_range(name)[1] + 1)]
    assert covered == list(range(count)), files
    for name in files:
        onnx.checker.check_model(onnx.load(str(out / name)))


def test_no_shape_inference_is_honoured_and_untyped_cuts_are_explained(run_parity, tmp_path):
    model = planted_model(tmp_path / "planted.onnx")
    run = run_parity("inspect", "capability", model, "--openvino", "--no-shape-inference", "-o", tmp_path / "out",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "cannot be cut out of the model: tensor 'doubled'" in run.output, run.describe()


def test_onnxrt_names_the_node_its_cpu_provider_has_no_kernel_for(run_parity, tmp_path):
    """ONNX Runtime's CPU provider has Det for float32 but not for float64: session creation names the node."""
    nodes = [helper.make_node("Mul", ["x", "two"], ["doubled"], name="double"),
             helper.make_node("Det", ["doubled"], ["det"], name="planted_det"),
             helper.make_node("Sigmoid", ["det"], ["y"], name="squash")]
    graph = helper.make_graph(nodes, "det64", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2])],
                              [helper.make_tensor("two", TensorProto.DOUBLE, [], [2.0])])
    path = tmp_path / "det64.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    out = tmp_path / "out"
    run = run_parity("inspect", "capability", path, "--onnxrt", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    row = [line.strip() for line in run.output.splitlines() if line.strip().startswith("Det ")]
    assert len(row) == 1 and "Could not find an implementation for Det(11)" in row[0] and "planted_det" in row[0], \
        run.describe()
    assert subgraph_files(out) == polygraphy_file_names([[0], [2]], 3)
    for name in subgraph_files(out):
        onnx.checker.check_model(onnx.load(str(out / name)))


def loop_with_planted_body_model(path, declare_loop_output=True):
    """x[3,3]: Relu 'rectify' | Loop 'accumulate' (2 trips; body: Det 'body_det' of the outer value, Add) | Neg."""
    body = helper.make_graph(
        [helper.make_node("Det", ["rectified"], ["det"], name="body_det"),
         helper.make_node("Add", ["acc_in", "det"], ["acc_out"], name="body_add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body",
        [helper.make_tensor_value_info("iteration", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [])])
    nodes = [helper.make_node("Relu", ["x"], ["rectified"], name="rectify"),
             helper.make_node("Loop", ["trips", "keep_going", "zero"], ["total"], name="accumulate", body=body),
             helper.make_node("Neg", ["total"], ["y"], name="negate")]
    graph = helper.make_graph(nodes, "loop_body", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
                              [helper.make_tensor("trips", TensorProto.INT64, [], [2]),
                               helper.make_tensor("keep_going", TensorProto.BOOL, [], [True]),
                               helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])])
    # ONNX's shape inference leaves the Loop's output without a rank; declared unless asked not to.
    if declare_loop_output:
        graph.value_info.append(helper.make_tensor_value_info("total", TensorProto.FLOAT, []))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_loop_whose_body_holds_the_planted_op_is_unsupported_as_a_whole(run_parity, tmp_path):
    path = loop_with_planted_body_model(tmp_path / "loop_body.onnx")
    out = tmp_path / "dumps"
    run = run_parity("inspect", "capability", path, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "accumulate (Loop) is unsupported as a whole" in run.output, run.describe()
    assert "body: body_det (Det): No conversion rule found for operations: Det-17" in run.output, run.describe()
    assert subgraph_files(out) == polygraphy_file_names([[0], [2]], 3)
    run = run_parity("run", path, "--ref", "--openvino", "--fallback", "ref", "--ov-precision", "f32",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "node 1 (accumulate) run on ref" in run.output, run.describe()


def test_a_node_the_device_cannot_compile_is_unsupported_with_the_plugins_reason(run_parity, tmp_path):
    """Without the Loop output's declared type, the Neg after the (unsupported) Loop reads a tensor of unknown
    rank. Alone, that Neg converts, but OpenVINO's CPU plugin refuses it (query_model leaves it out and
    compiling fails): it is unsupported too, with the plugin's words, and the hybrid run still passes."""
    path = loop_with_planted_body_model(tmp_path / "unranked.onnx", declare_loop_output=False)
    out = tmp_path / "dumps"
    run = run_parity("inspect", "capability", path, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    row = [line.strip() for line in run.output.splitlines() if line.strip().startswith("Neg ")]
    assert len(row) == 1 and "dynamic rank" in row[0] and "negate" in row[0], run.describe()
    assert subgraph_files(out) == polygraphy_file_names([[0]], 3)
    run = run_parity("run", path, "--ref", "--openvino", "--fallback", "ref", "--ov-precision", "f32",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "nodes 1-2 (accumulate, negate) run on ref" in run.output, run.describe()


def float16_if_model(path, runnable=True):
    """x[2,3,3] float16, c: Relu 'rectify' | If 'choose' -> (chosen[2], extra) | Add 'add_one' | Neg 'negate' -> y.

    The If's then branch holds Det, which OpenVINO has no conversion rule for, so the If is an unsupported
    subgraph between two supported ones. Its output 'extra' is a copy of the input (rank 3) in one branch and a
    max (rank 0) in the other: ONNX's shape inference leaves it without a shape (no value_info either), as
    exports with data-dependent branches do, and nobody reads it, so it is an output of the If's subgraph.
    Not `runnable`: a node of an unknown domain in each branch, so the reference runner cannot run the model
    whichever branch the data takes."""
    F = TensorProto.FLOAT16
    unknown = lambda name, output: helper.make_node("Mystery", ["rectified"], [output], name=name, domain="custom.test")
    then_branch = helper.make_graph(
        ([] if runnable else [unknown("body_unknown", "then_unknown")])
        + [helper.make_node("Det", ["rectified"], ["then_det"], name="body_det"),
           helper.make_node("Identity", ["rectified"] if runnable else ["then_unknown"], ["then_extra"],
                            name="body_copy")],
        "then_branch", [], [helper.make_tensor_value_info("then_det", F, [2]),
                            helper.make_tensor_value_info("then_extra", F, [2, 3, 3])])
    else_branch = helper.make_graph(
        ([] if runnable else [unknown("else_body_unknown", "else_unknown")])
        + [helper.make_node("ReduceSum", ["rectified", "axes"], ["else_sum"], name="body_sum", keepdims=0),
           helper.make_node("ReduceMax", ["rectified"] if runnable else ["else_unknown"], ["else_extra"],
                            name="body_max", keepdims=0)],
        "else_branch", [], [helper.make_tensor_value_info("else_sum", F, [2]),
                            helper.make_tensor_value_info("else_extra", F, [])])
    nodes = [helper.make_node("Relu", ["x"], ["rectified"], name="rectify"),
             helper.make_node("If", ["c"], ["chosen", "extra"], name="choose", then_branch=then_branch,
                              else_branch=else_branch),
             helper.make_node("Add", ["chosen", "one"], ["added"], name="add_one"),
             helper.make_node("Neg", ["added"], ["y"], name="negate")]
    graph = helper.make_graph(
        nodes, "float16_if",
        [helper.make_tensor_value_info("x", F, [2, 3, 3]), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", F, [2])],
        [helper.make_tensor("one", F, [], [1.0]), helper.make_tensor("axes", TensorProto.INT64, [2], [1, 2])])
    opsets = [helper.make_opsetid("", 17)] + ([] if runnable else [helper.make_opsetid("custom.test", 1)])
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    onnx.checker.check_model(model)
    inferred = onnx.shape_inference.infer_shapes(model).graph.value_info
    assert [v.name for v in inferred if not v.type.tensor_type.HasField("shape")] == ["extra"]
    onnx.save(model, str(path))
    return path


def test_float16_if_subgraph_outputs_without_a_shape_are_typed_by_a_reference_run(run_parity, tmp_path):
    """Issue 38: the If's subgraph failed ONNX's checker on its own output ('shape' missing) and nothing was
    written. Its boundary tensors now take their element type and rank from a run of the model on the
    reference runner (dims left unknown), and every subgraph passes the checker."""
    model = float16_if_model(tmp_path / "float16_if.onnx")
    out = tmp_path / "dumps"
    run = run_parity("inspect", "capability", model, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "choose (If) is unsupported as a whole" in run.output, run.describe()
    assert subgraph_files(out) == polygraphy_file_names([[0], [2, 3]], 4)
    for name in subgraph_files(out):
        onnx.checker.check_model(onnx.load(str(out / name)), full_check=True)
    outputs = {v.name: v.type.tensor_type for v in onnx.load(str(out / "unsupported_subgraph-nodes-1-1.onnx")).graph.output}
    assert outputs["extra"].elem_type == TensorProto.FLOAT16
    dims = outputs["extra"].shape.dim
    assert len(dims) in (0, 3) and not any(d.HasField("dim_value") for d in dims), outputs["extra"]


def test_a_subgraph_failing_the_checker_is_reported_and_the_others_written(run_parity, tmp_path):
    """The same If where the reference runner cannot run the model either: its subgraph still has an output
    without a shape and fails ONNX's checker. It is reported (one error naming it and the checker's words, exit
    1), and the other subgraphs and results.txt are written."""
    model = float16_if_model(tmp_path / "float16_if.onnx", runnable=False)
    out = tmp_path / "dumps"
    run = run_parity("inspect", "capability", model, "--openvino", "-o", out, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    error = single_error_line(run)
    assert "unsupported_subgraph-nodes-1-1.onnx is not written (the other subgraphs are)" in error, error
    assert "Field 'shape' of 'type' is required but missing" in error, error
    assert "could not run on the reference runner" in run.output, run.describe()
    assert subgraph_files(out) == ["supported_subgraph-nodes-0-0.onnx", "supported_subgraph-nodes-2-3.onnx"]
    for name in subgraph_files(out):
        onnx.checker.check_model(onnx.load(str(out / name)), full_check=True)
    assert "Not written (they fail ONNX's checker): unsupported_subgraph-nodes-1-1.onnx" in (out / "results.txt").read_text()
