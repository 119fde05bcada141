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
