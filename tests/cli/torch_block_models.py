"""The PyTorch model the `--torch` tests build: a small convolution + attention block written as a
model script (write_block_script), its TorchScript and torch.export files, and its ONNX exports by
both exporters. Imports only torch (and onnx for the exports), so the GPU tests can use it on a
machine with nothing else."""
import sys
from pathlib import Path

BLOCK_SCRIPT = '''
import torch
from torch import nn


class ConvAttentionBlock(nn.Module):
    def __init__(self, channels=8, heads=2):
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        self.norm = nn.LayerNorm(channels)
        self.attn = nn.MultiheadAttention(channels, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(channels, 16), nn.GELU(), nn.Linear(16, channels))
        self.head = nn.Linear(channels, 4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        t = self.norm(y.flatten(2).transpose(1, 2))
        a, _ = self.attn(t, t, t, need_weights=False)
        t = t + a
        t = t + self.mlp(t)
        return self.head(t).mean(1)


class TwoOutputs(ConvAttentionBlock):
    """The block's logits and its pooled features: a tuple."""

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return super().forward(x), y.mean((2, 3))


class DictOutputs(TwoOutputs):
    def forward(self, x):
        logits, features = super().forward(x)
        return {"logits": logits, "features": features}


def _seeded(cls):
    torch.manual_seed(0)
    model = cls()
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 1.5)
    return model.eval()


def load_model():
    return _seeded(ConvAttentionBlock)


def load_two_outputs():
    return _seeded(TwoOutputs)


def load_dict_outputs():
    return _seeded(DictOutputs)


def example_inputs():
    return (torch.rand(1, 3, 8, 8),)
'''

INPUT_SHAPE = (1, 3, 8, 8)


def write_block_script(folder, name="block.py"):
    """Writes the model script; returns its path."""
    path = Path(folder) / name
    path.write_text(BLOCK_SCRIPT)
    return path


def load_block(script, function="load_model"):
    """The module a function of the written script returns (imported from its file)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"torch_block_{abs(hash(str(script)))}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, function)()


def example_input():
    import torch

    torch.manual_seed(1)
    return (torch.rand(*INPUT_SHAPE),)


def export_onnx(script, path, exporter, function="load_model", output_names=None):
    """The block exported to ONNX with torch.onnx.export: exporter "torchscript" (dynamo=False) or
    "dynamo" (dynamo=True); input 'x'. Returns the path."""
    import torch

    model = load_block(script, function)
    kwargs = {"input_names": ["x"]}
    if output_names is not None:
        kwargs["output_names"] = list(output_names)
    torch.onnx.export(model, example_input(), str(path), dynamo=(exporter == "dynamo"), **kwargs)
    return Path(path)


def save_torchscript(script, path, function="load_model"):
    """The block traced (torch.jit.trace) and saved with torch.jit.save, as the seeds do."""
    import torch

    model = load_block(script, function)
    # MultiheadAttention's traced graph differs from a retrace only by mangled class names.
    torch.jit.trace(model, example_input(), check_trace=False).save(str(path))
    return Path(path)


def save_torch_export(script, path, function="load_model"):
    """The block's torch.export program saved to a .pt2 file."""
    import torch

    model = load_block(script, function)
    torch.export.save(torch.export.export(model, example_input()), str(path))
    return Path(path)


if __name__ == "__main__":
    print(write_block_script(sys.argv[1] if len(sys.argv) > 1 else "."))
