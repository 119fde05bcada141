"""The full-size models that issue 34's accuracy figures name, written here without downloads:

- "resnet50": torchvision's ResNet-50 architecture (bench/torch_runner_overhead.py's definition, random weights,
  non-trivial BatchNorm statistics), exported by torch.onnx (dynamo=False, opset 17) at 1x3x224x224;
- "bert-base": bench/make_bert.py's BERT-base encoder (12 layers, hidden 768, 12 heads, FFN 3072, sequence 128),
  input "hidden" float32 [batch, 128, 768].

The benches' other kinds (resnet, bert, ...) are tests/cli/exported_models.py's "bench" size: the same kinds of
graph, smaller (a two-stage ResNet at 96x96, a 4-layer BERT of hidden 256 at sequence 64).

    model_path = full_size_models.write(kind, folder)   # kind in FULL_SIZE_KINDS
"""
import os
import sys

FULL_SIZE_KINDS = ("resnet50", "bert-base")

_HERE = os.path.dirname(os.path.abspath(__file__))


def _resnet50(path):
    import torch
    from torch import nn
    sys.path.insert(0, _HERE)
    from torch_runner_overhead import MODELS_SCRIPT
    namespace = {}
    exec(compile(MODELS_SCRIPT, "torch_runner_overhead.MODELS_SCRIPT", "exec"), namespace)
    model = namespace["resnet50"]()
    with torch.no_grad():  # non-trivial BatchNorm statistics, as a trained model has
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
    torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), path, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17, dynamo=False)


def _bert_base(path):
    import onnx
    sys.path.insert(0, _HERE)
    from make_bert import build
    onnx.save(build(layers=12, seq=128), path)


def write(kind, folder):
    """Writes the full-size model `kind` into `folder`; returns its path."""
    path = os.path.join(folder, f"{kind}.onnx")
    if kind == "resnet50":
        _resnet50(path)
    elif kind == "bert-base":
        _bert_base(path)
    else:
        raise ValueError(f"unknown full-size kind {kind!r}; one of {', '.join(FULL_SIZE_KINDS)}")
    return path
