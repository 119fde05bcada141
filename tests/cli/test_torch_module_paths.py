"""The PyTorch module each node came from, for models exported by torch.onnx.export(dynamo=True): its node
names (node_MatMul_63) say nothing of it, the node's `namespace` metadata does. `inspect model --style
parity` shows it per node, and the layerwise report shows it on the first divergence and in the
worst-tensors table.

The expected module comes from the exporter's other metadata keys (pkg.torch.onnx.name_scopes and
pkg.torch.onnx.class_hierarchy), which Parity does not read."""
import ast
import json
import re

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import lines_with_prefix
from exported_models import export

RUN_TIMEOUT = 180


@pytest.fixture(scope="session")
def bert_exports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("torch_module_paths")
    return {exporter: export("bert", folder / f"bert_{exporter}.onnx", exporter)
            for exporter in ("torchscript", "dynamo")}


def expected_module(node):
    """"path: Class" of the innermost module from name_scopes/class_hierarchy (their last entries are the
    exported operation itself); the class alone for the top module; None without the metadata or outside
    every module (a stack that does not start at the top module, whose scope is '')."""
    props = {p.key: p.value for p in node.metadata_props}
    if "pkg.torch.onnx.name_scopes" not in props:
        return None
    scopes = ast.literal_eval(props["pkg.torch.onnx.name_scopes"])
    classes = ast.literal_eval(props["pkg.torch.onnx.class_hierarchy"])
    if len(scopes) < 2 or scopes[0] != "":
        return None
    path, cls = scopes[-2], classes[-2].rsplit(".", 1)[-1]
    return f"{path}: {cls}" if path else cls


def test_inspect_model_shows_each_nodes_module(inspect_model, bert_exports):
    model = onnx.load(str(bert_exports["dynamo"]), load_external_data=False)
    expected = {node.name: expected_module(node) for node in model.graph.node}
    # The query projection's MatMul and bias Add, in each of the 2 layers.
    assert sum(m is not None and "attention.self.query: Linear" in m for m in expected.values()) == 4

    run = inspect_model(bert_exports["dynamo"], "--show", "layers", "--style", "parity")
    assert run.returncode == 0, run.describe()
    headers = dict(re.findall(r"^\s*Node \d+\s+\| (\S+) \[Op: [^\]]+\](.*)$", run.stdout, re.MULTILINE))
    assert set(headers) == set(expected), run.describe()
    for name, module in expected.items():
        assert headers[name] == (f" (module {module})" if module else ""), (name, module)

    # Polygraphy's text (the default style) stays Polygraphy's.
    run = inspect_model(bert_exports["dynamo"], "--show", "layers")
    assert run.returncode == 0, run.describe()
    assert "(module " not in run.stdout

    # The TorchScript exporter names nodes by module path and records no module: nothing added.
    for style in ("parity", "polygraphy"):
        run = inspect_model(bert_exports["torchscript"], "--show", "layers", "--style", style)
        assert run.returncode == 0, run.describe()
        assert "(module " not in run.stdout


def _planted(source, target, scope):
    """A copy of the model with the weight of the MatMul inside module `scope` scaled by 1.01 (a planted
    difference with a known first divergence); returns that node."""
    model = onnx.load(str(source))
    inits = {init.name: init for init in model.graph.initializer}
    [node] = [n for n in model.graph.node if n.op_type == "MatMul" and expected_module(n) == scope]
    [weight] = [inits[i] for i in node.input if i in inits]
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * np.float32(1.01), weight.name))
    onnx.save(model, str(target))
    return node


def test_first_divergence_and_worst_table_name_the_module(run_parity, bert_exports, tmp_path):
    scope = "m.encoder.layer.1.attention.self.query: Linear"
    node = _planted(bert_exports["dynamo"], tmp_path / "planted.onnx", scope)
    saved = tmp_path / "planted_outputs.json"
    run = run_parity("run", tmp_path / "planted.onnx", "--onnxrt", "--onnx-outputs", "mark", "all",
                     "--save-outputs", saved, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()

    report = tmp_path / "report.json"
    run = run_parity("run", bert_exports["dynamo"], "--onnxrt", "--onnx-outputs", "mark", "all", "--load-outputs",
                     saved, "--report", report, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    [first] = [line for line in lines_with_prefix(run.output, "[E]") if "First divergence" in line]
    assert f"tensor '{node.output[0]}' produced by node '{node.name}' [Op: MatMul] (module {scope}) |" in first

    model = onnx.load(str(bert_exports["dynamo"]), load_external_data=False)
    modules = {n.name: expected_module(n) for n in model.graph.node}
    table = run.stdout[run.stdout.index("Worst"):]
    header, *rows = [line for line in table.splitlines()[1:] if line.count(" | ") >= 5]
    assert header.split(" | ")[-1].strip() == "module"
    assert rows
    for row in rows:
        cells = [cell.strip() for cell in row.split(" | ")]
        node_name = cells[2].split(" [")[0]
        assert cells[-1] == (modules.get(node_name) or "-"), row

    layerwise = json.loads(report.read_text())["layerwise"][0]
    assert layerwise["first_divergence"]["module"] == scope
    assert all(entry.get("module") == modules.get(entry["node"]) for entry in layerwise["worst"])


def test_streamed_openvino_against_onnxruntime_names_the_module(run_parity, bert_exports, tmp_path):
    """Two live runners (the streamed comparison) with no tolerance: OpenVINO's and ONNX Runtime's float
    arithmetic differ somewhere; wherever it is, the report names that node's module."""
    report = tmp_path / "report.json"
    run = run_parity("run", bert_exports["dynamo"], "--onnxrt", "--openvino", "--onnx-outputs", "mark", "all",
                     "--atol", "0", "--rtol", "0", "--report", report, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    model = onnx.load(str(bert_exports["dynamo"]), load_external_data=False)
    modules = {n.name: expected_module(n) for n in model.graph.node}
    first = json.loads(report.read_text())["layerwise"][0]["first_divergence"]
    assert first["module"] == modules[first["node"]] is not None
    [line] = [line for line in lines_with_prefix(run.output, "[E]") if "First divergence" in line]
    assert f"[Op: {first['op']}] (module {first['module']}) |" in line
