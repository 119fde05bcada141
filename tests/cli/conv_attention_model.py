"""A small conv + BatchNorm + attention network, built with torch and exported by either exporter, for
the tests that pair PyTorch modules with ONNX tensors.

Its modules cover the cases pairing must tell apart: a Conv2d followed by a BatchNorm2d (which both
exporters fold together), a ReLU called twice, a self-attention block (Linear projections, softmax), a
LayerNorm, a module returning a tuple, and an nn.Identity (no node).

    build(seed=0) -> (model in eval mode, example inputs)
    export_model(model, inputs, path, exporter) -> path
As a runner script (--torch-model-script conv_attention_model.py:load): `load()` returns the model,
`load_changed()` the model with the weights of the module PARITY_TEST_CHANGED_MODULE names changed,
`example_inputs()` the inputs.
"""

import math
import os
import sys
import warnings

import torch
from torch import nn

INPUT_NAMES = ["image"]
OUTPUT_NAMES = ["logits"]


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        split = lambda t: t.view(b, n, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        weights = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads), dim=-1)
        return self.proj(torch.matmul(weights, v).transpose(1, 2).reshape(b, n, d))


class Stats(nn.Module):
    """Returns a tuple: its output is not one tensor."""

    def forward(self, x):
        return x.mean(dim=1), x.amax(dim=1)


class ConvAttention(nn.Module):
    def __init__(self, channels=8, heads=2, classes=5):
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        self.act = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=2, padding=1)
        self.norm = nn.LayerNorm(channels)
        self.attention = Attention(channels, heads)
        self.skip = nn.Identity()
        self.stats = Stats()
        self.head = nn.Linear(2 * channels, classes)

    def forward(self, image):
        x = self.act(self.bn(self.conv(image)))
        x = self.act(self.conv2(x))                      # the ReLU's second call
        tokens = x.flatten(2).transpose(1, 2)
        tokens = self.skip(tokens) + self.attention(self.norm(tokens))
        mean, peak = self.stats(tokens)
        return self.head(torch.cat([mean, peak], dim=1))


def build(seed=0):
    torch.manual_seed(seed)
    model = ConvAttention()
    with torch.no_grad():  # BatchNorm statistics a trained model would have
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    return model.eval(), (torch.randn(1, 3, 16, 16),)


def load():
    """The runner script's entry: the model as exported."""
    return build()[0]


def load_changed():
    """The model with the weights of the module PARITY_TEST_CHANGED_MODULE names scaled by 1.5 (after
    the ONNX export was made)."""
    model = load()
    with torch.no_grad():
        dict(model.named_modules())[os.environ["PARITY_TEST_CHANGED_MODULE"]].weight.mul_(1.5)
    return model


def example_inputs():
    """The inputs of a run without an ONNX model."""
    return build()[1]


def export_model(model, inputs, path, exporter):
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            torch.onnx.export(model, inputs, str(path), dynamo=False, opset_version=17,
                              input_names=INPUT_NAMES, output_names=OUTPUT_NAMES)
        else:
            saved = sys.stdout
            with open(os.devnull, "w") as devnull:
                sys.stdout = devnull  # the dynamo exporter prints progress
                try:
                    program = torch.onnx.export(model, inputs, dynamo=True, opset_version=18,
                                                input_names=INPUT_NAMES, output_names=OUTPUT_NAMES,
                                                external_data=False)
                    program.save(str(path), external_data=False)
                finally:
                    sys.stdout = saved
    return path
