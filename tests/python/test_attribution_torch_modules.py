"""Comparator.run_layerwise(attribute=True) with a PyTorch worker runner under test attributes by module
(docs/attribution.md, "PyTorch modules"), as `parity run --attribute` does."""
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch runner needs torch")

from parity.backend.pyt import ModuleFromScript, PytWorkerRunner  # noqa: E402
from parity.comparator import CompareFunc, Comparator  # noqa: E402

NET = textwrap.dedent('''
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = nn.Linear(8, 8)
            self.second = nn.Linear(8, 8)

        def forward(self, x):
            return x + self.second(torch.relu(self.first(x)))


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(4, 8)
            self.block = Block()
            self.head = nn.Linear(8, 2)

        def forward(self, x):
            return self.head(self.block(self.embed(x)))


    def build():
        torch.manual_seed(0)
        return Net().eval()


    def build_planted():
        """block.second's forward scales its output (the planted change); embed's weights change a little."""
        model = build()
        with torch.no_grad():
            model.embed.weight.add_(1e-4)
        forward = model.block.second.forward
        model.block.second.forward = lambda x: forward(x) * 1.1
        return model


    def example_inputs():
        return (torch.randn(3, 4),)
''')


def test_planted_module_ranks_first_through_the_python_api(tmp_path):
    script = tmp_path / "net.py"
    script.write_text(NET)
    runners = [PytWorkerRunner(ModuleFromScript(script, "build")),
               PytWorkerRunner(ModuleFromScript(script, "build_planted"))]
    result = Comparator.run_layerwise(runners, compare_func=CompareFunc.simple(atol=1e-5, rtol=1e-5), attribute=True)
    assert not result
    attribution = result.attribution
    assert attribution["by"] == "module"
    assert attribution["top"][0]["node"] == "block.second", attribution["top"]
    assert attribution["first_local_failure"]["node"] == "embed"
    modules = {t["node"]: t for t in attribution["tensors"]}
    # The block alone, its Linear layers returning the reference's outputs, adds nothing of its own.
    assert modules["block"]["local"]["abs"] == 0, modules["block"]
    entries = {entry.tensor: entry for entry in result.entries}
    assert entries["block.second"].local_error["failed"]


SEQUENTIAL = textwrap.dedent('''
    import torch
    from torch import nn


    def build():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh())).eval()


    def build_planted():
        """The inner Sequential's last layer (its Tanh) scales its output."""
        model = build()
        forward = model[1][1].forward
        model[1][1].forward = lambda x: forward(x) * 1.1
        return model
''')


def test_modules_sharing_a_tensor_give_the_entry_the_innermost(tmp_path):
    """ONNX Runtime on the export as the reference, the PyTorch worker runner under test: the inner
    Sequential '1' and its last layer '1.1' output the same ONNX tensor; the planted layer introduces the
    error, the Sequential (its layers returning the reference's outputs) none, and the layerwise entry of
    that tensor carries the layer's attribution."""
    from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx

    script = tmp_path / "seq.py"
    script.write_text(SEQUENTIAL)
    import importlib.util

    spec = importlib.util.spec_from_file_location("seq_net", script)
    net = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(net)
    exported = tmp_path / "seq.onnx"
    with torch.no_grad():
        torch.onnx.export(net.build(), (torch.randn(2, 4),), str(exported), dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["y"])
    runners = [OnnxrtRunner(SessionFromOnnx(str(exported))),
               PytWorkerRunner(ModuleFromScript(script, "build_planted"), onnx_model=str(exported))]
    result = Comparator.run_layerwise(runners, compare_func=CompareFunc.simple(atol=1e-5, rtol=1e-5), attribute=True)
    attribution = result.attribution
    assert attribution["by"] == "module"
    modules = {t["node"]: t for t in attribution["tensors"]}
    assert modules["1.1"]["tensor"] == modules["1"]["tensor"], modules
    assert modules["1.1"]["local"]["failed"], modules["1.1"]
    assert modules["1"]["local"]["abs"] == 0, modules["1"]
    assert attribution["top"][0]["node"] == "1.1"
    [entry] = [e for e in result.entries if e.tensor == modules["1"]["tensor"]]
    assert entry.local_error["failed"], entry.local_error
