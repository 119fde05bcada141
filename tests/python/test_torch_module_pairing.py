"""Pairing PyTorch modules with the ONNX tensors holding their outputs (parity._parity.pair_torch_modules,
onnx/torch_module_pairing.h), proved numerically: each module's output is captured in torch with forward
hooks (parity.backend.pyt._module_capture), ONNX Runtime runs the export with every paired tensor as an
extra output, and each paired tensor must equal its module's output at fp32 tolerance. Both exporters,
on a conv + BatchNorm + attention network and on the tiny BERT and ResNet of tests/cli/exported_models.py.
"""
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

torch = pytest.importorskip("torch", reason="the pairing is checked against PyTorch's own module outputs")
ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime runs the exports with the paired tensors marked")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "cli"))
import conv_attention_model  # noqa: E402
import exported_models  # noqa: E402

from parity import _parity  # noqa: E402
from parity.backend.pyt._module_capture import ModuleCapture, named_module_list  # noqa: E402

EXPORTERS = ("torchscript", "dynamo")
MODELS = ("conv_attention", "bert", "resnet")


def _build(kind):
    if kind == "conv_attention":
        return conv_attention_model.build()
    model, inputs, _ = exported_models.build(kind)
    return model, inputs


@pytest.fixture(scope="session")
def exports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("torch_module_pairing")
    made = {}

    def get(kind, exporter):
        if (kind, exporter) not in made:
            path = folder / f"{kind}_{exporter}.onnx"
            if kind == "conv_attention":
                model, inputs = conv_attention_model.build()
                conv_attention_model.export_model(model, inputs, path, exporter)
            else:
                exported_models.export(kind, path, exporter)
            made[kind, exporter] = path
        return made[kind, exporter]
    return get


def _pairing(path, model):
    exporter, entries = _parity.pair_torch_modules(Path(path).read_bytes(), named_module_list(model))
    return exporter, {e["module"]: e for e in entries}


def _ort_values(path, names, inputs):
    model = onnx.load(str(path))
    present = {o.name for o in model.graph.output}
    for name in names:
        if name not in present:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)}
    return dict(zip(names, session.run(list(names), feeds)))


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("kind", MODELS)
def test_every_paired_tensor_equals_its_modules_output(exports, kind, exporter):
    path = exports(kind, exporter)
    model, inputs = _build(kind)
    label, pairing = _pairing(path, model)
    assert label.startswith("TorchScript" if exporter == "torchscript" else "dynamo")
    assert list(pairing) == [name for name, _ in model.named_modules()]

    with ModuleCapture(model) as capture, torch.no_grad():
        model(*inputs)
    paired = {name: e for name, e in pairing.items() if e["tensor"]}
    for name, e in pairing.items():
        assert bool(e["tensor"]) != bool(e["reason"]), e  # exactly one of a tensor and a reason
    values = _ort_values(path, sorted({e["tensor"] for e in paired.values()}), inputs)
    for name, e in paired.items():
        expected, why = capture.single_output(name)
        assert why is None, f"{name} paired with {e['tensor']} but {why}"
        actual = values[e["tensor"]]
        assert actual.shape == tuple(expected.shape), (name, e["tensor"], actual.shape, expected.shape)
        np.testing.assert_allclose(actual, expected.float().numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=f"{name} ({e['class_name']}) against {e['tensor']} ({exporter})")


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_conv_attention_pairing_and_reasons(exports, exporter):
    model, _ = conv_attention_model.build()
    _, pairing = _pairing(exports("conv_attention", exporter), model)
    for name in ("attention", "attention.query", "attention.proj", "norm", "conv2", "head", ""):
        assert pairing[name]["tensor"], pairing[name]
    assert pairing[""]["tensor"] == "logits"
    assert pairing["head"]["tensor"] == "logits"
    # The ReLU runs twice.
    assert "called 2 times" in pairing["act"]["reason"] or "2 unconnected groups" in pairing["act"]["reason"]
    # Returns a tuple of two tensors (computed apart: dynamo's one path for every call cannot tell this
    # from two calls, and says both).
    expected = "2 tensors read outside it" if exporter == "torchscript" else "called 2 times, or returns several"
    assert expected in pairing["stats"]["reason"], pairing["stats"]
    assert "no node" in pairing["skip"]["reason"], pairing["skip"]
    # Both exporters fold the BatchNorm into the convolution before it.
    if exporter == "dynamo":
        assert pairing["bn"]["tensor"], pairing["bn"]
        assert "fused away" in pairing["conv"]["reason"] and "bn: BatchNorm2d" in pairing["conv"]["reason"]
    else:
        assert "fused away" in pairing["bn"]["reason"], pairing["bn"]
        assert "BatchNorm folded into it" in pairing["conv"]["reason"], pairing["conv"]


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_resnet_and_bert_modules_paired(exports, exporter):
    model, _ = _build("resnet")
    _, resnet = _pairing(exports("resnet", exporter), model)
    # A Sequential(Conv2d, BatchNorm2d) outputs the Conv that both exporters fold them into.
    for name in ("m.layer1.0", "m.layer2.1", "m.fc", "m.maxpool", "m.layer2.0.downsample"):
        assert resnet[name]["tensor"], resnet[name]
    # BasicBlock calls its ReLU twice.
    assert not resnet["m.layer1.0.relu"]["tensor"]
    model, _ = _build("bert")
    _, bert = _pairing(exports("bert", exporter), model)
    for layer in (0, 1):
        for name in ("attention.self.query", "attention.self", "attention.output", "intermediate.dense", "output"):
            assert bert[f"m.encoder.layer.{layer}.{name}"]["tensor"], bert[f"m.encoder.layer.{layer}.{name}"]
    # The top module returns two tensors.
    assert "2 tensors" in bert[""]["reason"], bert[""]


def test_not_an_export_from_pytorch():
    # A graph built by hand records no module scopes: nothing is paired, each module says why.
    node = onnx.helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = onnx.helper.make_graph([node], "g", [onnx.helper.make_tensor_value_info("x", 1, [2])],
                                   [onnx.helper.make_tensor_value_info("y", 1, [2])])
    label, entries = _parity.pair_torch_modules(onnx.helper.make_model(graph).SerializeToString(),
                                                [("", "Net"), ("act", "ReLU")])
    assert label == "no PyTorch exporter recognised"
    assert all(not e["tensor"] and "records no module scopes" in e["reason"] for e in entries)


def test_capture_removes_its_hooks_and_copies_outputs():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(inplace=True))
    with ModuleCapture(model, ["0"]) as capture, torch.no_grad():
        x = torch.full((1, 4), -1.0)
        model[0].weight.fill_(1.0)
        model[0].bias.fill_(0.0)
        model(x)
    assert capture.calls == {"0": 1}
    # The in-place ReLU after the Linear did not change the kept output (-4 before the ReLU).
    assert capture.outputs["0"][0].tolist() == [[-4.0] * 4]
    assert not model[0]._forward_hooks
    with pytest.raises(ValueError, match="no module named 'missing'"):
        ModuleCapture(model, ["missing"])


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_api_run_layerwise_names_the_changed_module(exports, exporter, monkeypatch):
    """Comparator.run_layerwise with the C++ PyTorch runner (PytWorkerRunner) against ONNX Runtime names the
    module whose weights changed after the export as the first divergence."""
    from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
    from parity.backend.pyt import ModuleFromScript, PytWorkerRunner
    from parity.comparator import Comparator, CompareFunc

    path = str(exports("conv_attention", exporter))
    monkeypatch.setenv("PARITY_TEST_CHANGED_MODULE", "attention.query")
    runners = [PytWorkerRunner(ModuleFromScript(conv_attention_model.__file__, "load_changed"), onnx_model=path),
               OnnxrtRunner(SessionFromOnnx(path))]
    result = Comparator.run_layerwise(runners, compare_func=CompareFunc.simple(atol=1e-4, rtol=1e-4))
    assert not result
    [layerwise] = result.report["layerwise"]
    assert layerwise["first_diverging_module"]["module_outputs"][0] == "attention.query: Linear", layerwise
    assert {m["module"] for m in layerwise["torch_modules"]["unpaired"]} >= {"act", "skip"}


def test_capture_of_a_torchscript_module_says_why_its_submodules_are_missing():
    model = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval())
    with ModuleCapture(model) as capture, torch.no_grad():
        model(torch.ones(1, 4))
    value, why = capture.single_output("")
    assert value is None and "register_forward_hook is not supported on ScriptModules" in why, why
    # A submodule either refuses the hook, or takes it and never runs it (scripted code calls it).
    value, why = capture.single_output("0")
    assert value is None and ("not supported on ScriptModules" in why
                              or "TorchScript module calls its submodules without Python's hooks" in why), why
