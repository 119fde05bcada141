"""`parity run ... --onnx-outputs mark all --attribute` with PyTorch runners (docs/attribution.md, "PyTorch
modules"): when the runner under test is a `--torch` runner, each module paired with a compared tensor runs
alone in its configuration, fed the reference's values of its arguments (captured with forward pre-hooks
from a PyTorch reference; from an ONNX reference only where the argument is a model input or a paired
module's output), its attributed submodules returning the reference's outputs. With a PyTorch reference
and an ONNX runner under test, the node attribution runs and names the modules.

The network (conv + attention, its Attention block from conv_attention_model.py) is written by the test as a
runner script; build_perturbed() is the same network with a benign weight change in `conv` (the first tensor
over the tolerance) and the forward of the module $PARITY_TEST_PLANTED changed (its output scaled by 1.1)."""
import json
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch runner needs torch")

TIMEOUT = 300

NET = textwrap.dedent('''
    import os
    import sys

    import torch
    from torch import nn

    sys.path.insert(0, {model_dir!r})
    from conv_attention_model import Attention  # noqa: E402


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.act = nn.ReLU()
            self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
            self.act2 = nn.ReLU()
            self.norm = nn.LayerNorm(8)
            self.attention = Attention(8, 2)
            self.head = nn.Linear(8, 5)

        def forward(self, image):
            x = self.act2(self.conv2(self.act(self.conv(image))))
            tokens = x.flatten(2).transpose(1, 2)
            tokens = tokens + self.attention(self.norm(tokens))
            return self.head(tokens.mean(dim=1))


    def build():
        torch.manual_seed(0)
        return Net().eval()


    def example_inputs():
        torch.manual_seed(1)
        return (torch.randn(1, 3, 16, 16),)


    def build_perturbed():
        """A benign change of conv's weights, and the forward of $PARITY_TEST_PLANTED scaling its output."""
        model = build()
        with torch.no_grad():
            model.conv.weight.add_(1e-4)
        planted = model.get_submodule(os.environ.get("PARITY_TEST_PLANTED", "attention.proj"))
        forward = planted.forward
        planted.forward = lambda *args: forward(*args) * 1.1
        return model
''').format(model_dir=str(Path(__file__).resolve().parent))


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    path = tmp_path_factory.mktemp("torch_attribution") / "net.py"
    path.write_text(NET)
    return path


def load_net(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("attribution_net", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def attribution(report_path):
    return json.loads(report_path.read_text())["attribution"]


def test_planted_module_behind_benign_difference_ranks_first(run_parity, net, tmp_path):
    """Two PyTorch runs (no ONNX model): conv's benign weight change is the first tensor over the
    tolerance, the planted forward of attention.proj is the top introducer."""
    report = tmp_path / "report.json"
    run = run_parity("run", "--torch", "--torch", "--torch-model-script", f"{net}:build", f"{net}:build_perturbed",
                     "--onnx-outputs", "mark", "all", "--attribute", "--report", report, timeout=TIMEOUT,
                     env={"PARITY_TEST_PLANTED": "attention.proj"})
    assert run.returncode == 1, run.describe()
    found = attribution(report)
    assert found["by"] == "module"
    [layerwise] = json.loads(report.read_text())["layerwise"]
    assert layerwise["first_divergence"]["tensor"] == "conv", layerwise["first_divergence"]
    assert found["top"][0]["node"] == "attention.proj", found["top"]
    assert found["top"][0]["op"] == "Linear"
    assert found["first_local_failure"]["node"] == "conv"
    by_module = {t["node"]: t for t in found["tensors"]}
    # The attention block alone, its projections returning the reference's outputs, adds nothing.
    assert by_module["attention"]["local"]["abs"] == 0, by_module["attention"]
    # Modules after the planted one only inherit: exact alone (fp32 eager on both sides), inputs differing.
    assert by_module["head"]["local"]["abs"] == 0 and by_module["head"]["inherited"]["abs"] > 0
    assert by_module["conv"]["inherited"]["abs"] == 0  # fed the model input
    assert "First module whose local error exceeds the tolerance: 'conv' [Class: Conv2d]" in run.stdout, run.describe()
    assert "Top " in run.stdout and "attention.proj" in run.stdout


def local_errors_with_torch(path, dtype):
    """Each module's local error computed here with torch, as docs/attribution.md defines it: the
    module under autocast(dtype) on the CPU, fed the fp32 run's arguments, its submodules returning the
    fp32 run's outputs; the max abs error against the fp32 run's output."""
    net = load_net(path)
    model = net.build()
    (image,) = net.example_inputs()
    arguments, outputs = {}, {}
    handles = []

    def keep_arguments(name):
        def hook(module, args):
            arguments[name] = [t.clone() for t in args]
        return hook

    def keep_output(name):
        def hook(module, args, output):
            outputs[name] = output.clone()
        return hook

    for name, module in model.named_modules():
        if name:
            handles.append(module.register_forward_pre_hook(keep_arguments(name)))
            handles.append(module.register_forward_hook(keep_output(name)))
    with torch.inference_mode():
        model(image)
    for handle in handles:
        handle.remove()
    errors = {}
    for name in arguments:
        module = model.get_submodule(name)
        substitutes = [model.get_submodule(child).register_forward_hook(
            lambda m, a, o, child=child: outputs[child].to(o.dtype))
            for child, _ in module.named_modules(prefix=name) if child != name]
        with torch.inference_mode(), torch.autocast("cpu", dtype=dtype):
            value = module(*arguments[name]).float()
        for handle in substitutes:
            handle.remove()
        errors[name] = (value - outputs[name]).abs().max().item()
    return errors


def test_bf16_autocast_ranks_modules_by_their_local_error(run_parity, net, tmp_path):
    """bf16 autocast against fp32 on the CPU: every module is attributed, and the ranking follows the local
    errors computed independently with torch (--rtol 0: the ranking is by absolute error)."""
    import numpy as np

    report, inputs = tmp_path / "report.json", tmp_path / "inputs.npz"
    np.savez(inputs, image=load_net(net).example_inputs()[0].numpy())  # the values computed with below
    run = run_parity("run", "--torch", "--torch", "--torch-model-script", f"{net}:build", "--torch-dtype", "fp32",
                     "--torch-dtype", "bf16", "--torch-dtype-mode", "autocast", "--onnx-outputs", "mark", "all",
                     "--attribute", "--atol", "1e-3", "--rtol", "0", "--layerwise-worst", "20", "--report", report,
                     "--load-inputs", inputs, timeout=TIMEOUT)
    assert run.returncode in (0, 1), run.describe()
    found = attribution(report)
    expected = local_errors_with_torch(net, torch.bfloat16)
    by_module = {t["node"]: t for t in found["tensors"]}
    assert set(by_module) == set(expected), (sorted(by_module), sorted(expected))
    for name, tensor in by_module.items():
        assert tensor["local"] is not None, tensor
        assert tensor["local"]["abs"] == pytest.approx(expected[name], rel=0.05, abs=1e-6), (name, tensor, expected)
    ranked = [t["node"] for t in found["top"]]
    assert ranked, found
    # The ranking is the independent local errors' order (ties within 5% may swap).
    for before, after in zip(ranked, ranked[1:]):
        assert expected[before] >= 0.95 * expected[after], (ranked, expected)
    assert expected[ranked[0]] >= 0.95 * max(expected.values()), (ranked, expected)
    assert "Error Attribution" in run.stdout and "PyTorch module(s) run alone" in run.stdout


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_onnx_reference_feeds_modules_its_paired_tensors(run_parity, net, tmp_path, exporter):
    """ONNX Runtime on the export as the reference, the PyTorch runner under test with conv2's forward
    planted: the modules whose arguments are model inputs or paired modules' outputs run alone on
    ONNX Runtime's tensors, conv2 ranks first; a module fed a tensor computed in its caller's forward
    (norm, after flatten/transpose) is listed as not attributed, with why."""
    exported = tmp_path / f"net_{exporter}.onnx"
    mod = load_net(net)
    with torch.no_grad():
        torch.onnx.export(mod.build(), mod.example_inputs(), str(exported), dynamo=exporter == "dynamo",
                          input_names=["image"], output_names=["logits"],
                          **({"external_data": False} if exporter == "dynamo" else {"opset_version": 17}))
    report = tmp_path / "report.json"
    run = run_parity("run", exported, "--onnxrt", "--torch", "--torch-model-script", f"{net}:build_perturbed",
                     "--onnx-outputs", "mark", "all", "--attribute", "--report", report, timeout=TIMEOUT,
                     env={"PARITY_TEST_PLANTED": "conv2"})
    assert run.returncode == 1, run.describe()
    found = attribution(report)
    assert found["by"] == "module"
    by_module = {t["node"]: t for t in found["tensors"]}
    assert found["top"][0]["node"] == "conv2", found["top"]
    assert by_module["conv"]["local"] is not None and by_module["conv"]["inherited"]["abs"] == 0
    assert by_module["norm"]["local"] is None
    assert "neither a model input nor the output of a module" in by_module["norm"]["not_run"], by_module["norm"]
    assert "Not attributed: " in run.stdout


def test_torch_reference_onnx_under_test_names_modules(run_parity, net, tmp_path):
    """The PyTorch module as the reference, ONNX Runtime on its export under test: node attribution runs on
    the tensors the module outputs give, and each names its module."""
    exported = tmp_path / "net.onnx"
    mod = load_net(net)
    with torch.no_grad():
        torch.onnx.export(mod.build(), mod.example_inputs(), str(exported), dynamo=False, opset_version=17,
                          input_names=["image"], output_names=["logits"])
    report = tmp_path / "report.json"
    run = run_parity("run", exported, "--torch", "--torch-model-script", f"{net}:build", "--onnxrt",
                     "--onnx-outputs", "mark", "all", "--attribute", "--atol", "1e-4", "--rtol", "1e-4",
                     "--report", report, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    found = attribution(report)
    assert found["by"] == "node"
    run_alone = [t for t in found["tensors"] if t["local"] is not None]
    assert run_alone, found["tensors"]
    named = {m for t in found["tensors"] for m in t.get("modules", [])}
    assert "conv: Conv2d" in named and "conv2: Conv2d" in named, named
    conv = next(t for t in found["tensors"] if "conv: Conv2d" in t.get("modules", []))
    assert conv["local"] is not None and conv["inherited"]["abs"] == 0, conv


def test_compiled_runner_under_test_runs_each_module_compiled_alone(run_parity, tmp_path):
    """--torch-compile under test: each module runs alone through torch.compile (inductor on the CPU) with
    the hooks of its capture; every module is attributed (a two-layer model: compiling is slow)."""
    script = tmp_path / "small.py"
    script.write_text(textwrap.dedent('''
        import torch
        from torch import nn


        def build():
            torch.manual_seed(0)
            return nn.Sequential(nn.Linear(4, 8), nn.Tanh()).eval()


        def example_inputs():
            return (torch.randn(2, 4),)
    '''))
    report = tmp_path / "report.json"
    run = run_parity("run", "--torch", "--torch", "--torch-model-script", f"{script}:build", "--torch-compile=none",
                     "--torch-compile=default", "--onnx-outputs", "mark", "all", "--attribute", "--report", report,
                     timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    found = attribution(report)
    modules = {t["node"]: t for t in found["tensors"]}
    assert set(modules) == {"0", "1"}, modules
    for tensor in modules.values():
        assert tensor["local"] is not None, tensor
        assert tensor["local"]["abs"] < 1e-5, tensor


def test_html_report_names_modules(run_parity, net, tmp_path):
    """--report-html: the introducers' table and the first failure say module and class."""
    import re

    from test_report_html import browse

    page = tmp_path / "report.html"
    run = run_parity("run", "--torch", "--torch", "--torch-model-script", f"{net}:build", f"{net}:build_perturbed",
                     "--onnx-outputs", "mark", "all", "--attribute", "--report-html", page, timeout=TIMEOUT,
                     env={"PARITY_TEST_PLANTED": "attention.proj"})
    assert run.returncode == 1, run.describe()
    dom, console, _, _ = browse(page, tmp_path)
    assert not [line for line in console if "Uncaught" in line], console
    introducers = re.search(r'<table id="introducers">(.*?)</table>', dom, re.S).group(1)
    assert "<th>module</th><th>class</th>" in introducers, introducers[:300]
    assert re.findall(r"<td>([^<]*)</td>", introducers)[1:3] == ["attention.proj", "Linear"], introducers[:600]
    assert "First module whose local error exceeds the tolerance: conv [Conv2d]" in dom


def test_modules_that_cannot_run_alone_are_listed_with_why(run_parity, tmp_path):
    """A module called with a keyword argument and one given a Python number are not attributed, each with
    its reason; the others are."""
    script = tmp_path / "odd.py"
    script.write_text(textwrap.dedent('''
        import torch
        from torch import nn


        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = nn.Linear(4, 4)

            def forward(self, x, scale=1.0):
                return self.linear(x) * scale


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.first = nn.Linear(4, 4)
                self.by_keyword = Scaled()
                self.by_number = Scaled()

            def forward(self, x):
                return self.by_number(self.by_keyword(self.first(x), scale=2.0), 0.5)


        def build():
            torch.manual_seed(0)
            return Net().eval()


        def example_inputs():
            return (torch.randn(2, 4),)
    '''))
    report = tmp_path / "report.json"
    run = run_parity("run", "--torch", "--torch", "--torch-model-script", f"{script}:build", "--torch-dtype", "fp32",
                     "--torch-dtype", "bf16", "--onnx-outputs", "mark", "all", "--attribute", "--atol", "1",
                     "--rtol", "1", "--report", report, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    modules = {t["node"]: t for t in attribution(report)["tensors"]}
    assert modules["by_keyword"]["local"] is None
    assert "called with keyword argument(s) scale" in modules["by_keyword"]["not_run"], modules["by_keyword"]
    assert modules["by_number"]["local"] is None
    assert "its argument 1 is a float, not a tensor" in modules["by_number"]["not_run"], modules["by_number"]
    for name in ("first", "by_keyword.linear", "by_number.linear"):
        assert modules[name]["local"] is not None, modules[name]
    assert "Not attributed: 'by_keyword' (module 'by_keyword' [Class: Scaled]): " in run.stdout, run.describe()
