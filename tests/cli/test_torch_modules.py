"""`parity run m.onnx --torch ... --onnxrt --onnx-outputs mark all`: the PyTorch runner returns its modules'
outputs under the ONNX tensors paired with them (onnx/torch_module_pairing.h), the streamed layerwise
comparison compares them, and the report names the first module whose output diverges.

The network (tests/cli/conv_attention_model.py: conv + BatchNorm + attention) is exported by both
exporters; the runner script then changes ONE module's weights after the export
(PARITY_TEST_CHANGED_MODULE), and that module must be named first."""
import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch runner needs torch")

import conv_attention_model  # noqa: E402

TIMEOUT = 300
EXPORTERS = ("torchscript", "dynamo")
SCRIPT = Path(conv_attention_model.__file__).resolve()
TOLERANCES = ("--atol", "1e-4", "--rtol", "1e-4")


@pytest.fixture(scope="session")
def exports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("torch_modules")
    model, inputs = conv_attention_model.build()
    return {exporter: conv_attention_model.export_model(model, inputs, folder / f"net_{exporter}.onnx", exporter)
            for exporter in EXPORTERS}


def run_layerwise(run_parity, model, tmp_path, changed=None, *flags):
    report = tmp_path / "report.json"
    script = f"{SCRIPT}:load_changed" if changed else f"{SCRIPT}:load"
    run = run_parity("run", model, "--torch", "--torch-model-script", script, "--onnxrt", "--onnx-outputs", "mark",
                     "all", *TOLERANCES, "--report", report, *flags, timeout=TIMEOUT,
                     env={"PARITY_TEST_CHANGED_MODULE": changed or ""})
    return run, (json.loads(report.read_text()) if report.exists() else None)


def layerwise_report(report):
    [layerwise] = report["layerwise"]
    return layerwise


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_unchanged_module_outputs_equal_onnx_tensors(run_parity, exports, tmp_path, exporter):
    """Every paired module output equals its ONNX tensor under ONNX Runtime: the run passes, and it compared
    the module outputs, not only the final output."""
    run, report = run_layerwise(run_parity, exports[exporter], tmp_path, None, "-v")
    assert run.returncode == 0, run.describe()
    layerwise = layerwise_report(report)
    modules = layerwise["torch_modules"]
    paired = {m["module"]: m["tensor"] for m in modules["paired"]}
    for name in ("attention.query", "attention.proj", "conv2", "norm", "head"):
        assert name in paired, (name, modules)
    assert layerwise["compared"] >= len(set(paired.values())), layerwise
    assert layerwise["first_diverging_module"] is None
    # The modules not paired, each with its reason, in the verbose log and in the report.
    unpaired = {m["module"]: m["reason"] for m in modules["unpaired"]}
    assert "no node" in unpaired["skip"]
    assert "act" in unpaired and "2" in unpaired["act"]
    assert f"not paired: act: ReLU | {unpaired['act']}" in run.output, run.describe()
    assert "PyTorch modules of " in run.output


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("changed, label", [("conv2", "conv2: Conv2d"), ("attention.query", "attention.query: Linear"),
                                            ("norm", "norm: LayerNorm")])
def test_changed_module_is_the_first_divergence(run_parity, exports, tmp_path, exporter, changed, label):
    run, report = run_layerwise(run_parity, exports[exporter], tmp_path, changed)
    assert run.returncode == 1, run.describe()
    layerwise = layerwise_report(report)
    first = layerwise["first_diverging_module"]
    assert first is not None, layerwise
    assert first["module_outputs"][0] == label, first
    paired = {m["module"]: m["tensor"] for m in layerwise["torch_modules"]["paired"]}
    assert first["tensor"] == paired[changed]
    assert first["node"], first  # the ONNX node that produces the tensor
    assert re.search(rf"^\[E\]\s+First diverging module: {re.escape(label)} \| its output is tensor "
                     rf"'{re.escape(paired[changed])}' \| max abs error=", run.output, re.MULTILINE), run.describe()
    # Named before the first divergence's node line.
    assert run.output.index("First diverging module") < run.output.index("First divergence (topological order)")


def test_two_pytorch_runs_compare_modules_by_qualified_name(run_parity, tmp_path):
    """No ONNX model: the module as exported against the one with attention.query changed, module outputs
    named by their qualified names."""
    report = tmp_path / "report.json"
    run = run_parity("run", "--torch", "--torch", "--torch-model-script", f"{SCRIPT}:load", f"{SCRIPT}:load_changed",
                     "--onnx-outputs", "mark", "all", "--report", report, timeout=TIMEOUT,
                     env={"PARITY_TEST_CHANGED_MODULE": "attention.query"})
    assert run.returncode == 1, run.describe()
    [layerwise] = json.loads(report.read_text())["layerwise"]
    assert layerwise["torch_modules"]["exporter"] == "no ONNX model: by qualified name"
    first = layerwise["first_diverging_module"]
    assert first["tensor"] == "attention.query" and first["module_outputs"] == ["attention.query: Linear"], first
    assert "compared by qualified name (no ONNX model)" in run.output


def test_compiled_against_eager_compares_module_outputs(run_parity, tmp_path):
    """torch.compile (inductor) against eager: the hooks are in place at the first (compiling) call, so
    dynamo keeps them and the submodules' outputs are compared by name too (the modules that ran twice or
    returned a tuple are listed with their reason)."""
    report = tmp_path / "report.json"
    run = run_parity("run", "--torch", "--torch", "--torch-model-script", f"{SCRIPT}:load", "--torch-compile", "none",
                     "default", "--onnx-outputs", "mark", "all", *TOLERANCES, "--report", report, "-v",
                     timeout=600)
    assert run.returncode == 0, run.describe()
    [layerwise] = json.loads(report.read_text())["layerwise"]
    paired = {m["module"] for m in layerwise["torch_modules"]["paired"]}
    assert {"conv2", "attention.query", "norm", "head"} <= paired, layerwise["torch_modules"]
    assert layerwise["compared"] >= len(paired)
    unpaired = {m["module"]: m["reason"] for m in layerwise["torch_modules"]["unpaired"]}
    assert "called 2 times" in unpaired["act"] and "tuple of 2" in unpaired["stats"]


def test_hooks_a_compiled_module_skips_say_so():
    """Hooks registered after torch.compile compiled the module do not run in its compiled graph: the
    capture says why instead of 'never called'."""
    from importlib import util
    spec = util.spec_from_file_location("module_capture", Path(__file__).resolve().parents[2] / "python" /
                                        "parity" / "backend" / "pyt" / "_module_capture.py")
    capture_module = util.module_from_spec(spec)
    spec.loader.exec_module(capture_module)
    model, inputs = conv_attention_model.build()
    compiled = torch.compile(model)
    with torch.inference_mode():
        compiled(*inputs)  # compiled without hooks
        with capture_module.ModuleCapture(compiled) as capture:
            compiled(*inputs)
    value, why = capture.single_output("conv2")
    assert value is None and "did not run under torch.compile" in why, why


MODELS_SCRIPT = '''
import os
import sys

import torch

sys.path.insert(0, {folder!r})
import exported_models


def load(kind):
    model = exported_models.build(kind)[0]
    changed = os.environ.get("PARITY_TEST_CHANGED_MODULE")
    if changed:
        with torch.no_grad():
            dict(model.named_modules())[changed].weight.mul_(1.5)
    return model


def bert():
    return load("bert")


def resnet():
    return load("resnet")
'''


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    from exported_models import export
    folder = tmp_path_factory.mktemp("torch_modules_exported")
    script = folder / "models.py"
    script.write_text(MODELS_SCRIPT.format(folder=str(Path(__file__).resolve().parent)))
    files = {"script": script}
    for kind in ("bert", "resnet"):
        for exporter in EXPORTERS:
            files[kind, exporter] = export(kind, folder / f"{kind}_{exporter}.onnx", exporter)
    return files


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("kind, changed, label", [
    ("bert", "m.encoder.layer.1.attention.self.query", "m.encoder.layer.1.attention.self.query: Linear"),
    ("resnet", "m.fc", "m.fc: Linear"),
])
def test_exported_models_module_outputs(run_parity, exported, tmp_path, exporter, kind, changed, label):
    """The tiny BERT and ResNet of exported_models.py: as exported, every paired module output equals its ONNX
    tensor under ONNX Runtime; with one module changed, that module is named first."""
    def run(changed_module):
        report = tmp_path / f"report_{bool(changed_module)}.json"
        result = run_parity("run", exported[kind, exporter], "--torch", "--torch-model-script",
                            f"{exported['script']}:{kind}", "--onnxrt", "--onnx-outputs", "mark", "all", *TOLERANCES,
                            "--report", report, timeout=TIMEOUT, env={"PARITY_TEST_CHANGED_MODULE": changed_module})
        return result, json.loads(report.read_text())["layerwise"][0]

    same, layerwise = run("")
    assert same.returncode == 0, same.describe()
    paired = {m["module"]: m["tensor"] for m in layerwise["torch_modules"]["paired"]}
    assert len(paired) >= 10 and changed in paired, layerwise["torch_modules"]
    assert layerwise["compared"] >= len(set(paired.values()) - {"logits", "last_hidden_state", "pooler_output"})

    different, layerwise = run(changed)
    assert different.returncode == 1, different.describe()
    first = layerwise["first_diverging_module"]
    assert first["module_outputs"][0] == label and first["tensor"] == paired[changed], first
