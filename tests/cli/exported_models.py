"""Small transformer and CNN models built with torch and exported to ONNX by torch's two exporters.

They stand in for the models users bring (BERT, GPT-2, a ViT, ResNet-50 from PyTorch): the same
module structure and attribute names as Hugging Face's and torchvision's implementations, so the
exported graphs have the same shapes of trouble (float Constant nodes, INT64_MAX Slice ends, -inf
attention masks, module paths in node names or in `namespace` metadata), with tiny random weights.

    export(kind, path, exporter="torchscript"|"dynamo") -> path of the ONNX file
    KINDS: "bert", "gpt2", "vit", "resnet"

As a script (for benchmarks): python tests/cli/exported_models.py OUT_DIR [--kinds bert,gpt2]
[--exporters torchscript,dynamo] [--size tiny|bench|weights] writes OUT_DIR/<kind>_<exporter>.onnx.
"""

import argparse
import math
import os
import sys
import warnings
from pathlib import Path

import logging

import torch
from torch import nn

logging.getLogger("torch.onnx").setLevel(logging.ERROR)

KINDS = ("bert", "gpt2", "vit", "resnet")
EXPORTERS = ("torchscript", "dynamo")

# "tiny" for tests (seconds to export and run); "bench" for benchmarks (closer to the real models'
# node counts, still small enough for this machine); "weights" for memory benchmarks, where the weights
# must dominate the process's own memory (GPT-2's width, two layers, half its vocabulary: about 53 M
# parameters, 214 MB, like the GPT-2 export issue 38 measured).
SIZES = {
    "tiny": dict(hidden=32, layers=2, heads=2, vocab=100, seq=8, image=32, patch=8, cnn_width=8),
    "bench": dict(hidden=256, layers=4, heads=4, vocab=8000, seq=64, image=96, patch=16, cnn_width=32),
    "weights": dict(hidden=768, layers=2, heads=12, vocab=25000, seq=64, image=96, patch=16, cnn_width=64),
}


class _SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_size = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def _split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, x, mask_bias):
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + mask_bias
        context = torch.matmul(scores.softmax(dim=-1), v).permute(0, 2, 1, 3).contiguous()
        return context.view(context.shape[0], context.shape[1], -1)


class _BertOutput(nn.Module):
    def __init__(self, inner, hidden):
        super().__init__()
        self.dense = nn.Linear(inner, hidden)
        self.LayerNorm = nn.LayerNorm(hidden)

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class _BertAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.self = _SelfAttention(hidden, heads)
        self.output = _BertOutput(hidden, hidden)

    def forward(self, x, mask_bias):
        return self.output(self.self(x, mask_bias), x)


class _BertIntermediate(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.dense = nn.Linear(hidden, 4 * hidden)
        self.intermediate_act_fn = nn.GELU()

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class _BertLayer(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.attention = _BertAttention(hidden, heads)
        self.intermediate = _BertIntermediate(hidden)
        self.output = _BertOutput(4 * hidden, hidden)

    def forward(self, x, mask_bias):
        a = self.attention(x, mask_bias)
        return self.output(self.intermediate(a), a)


class _BertEncoder(nn.Module):
    def __init__(self, hidden, heads, layers):
        super().__init__()
        self.layer = nn.ModuleList(_BertLayer(hidden, heads) for _ in range(layers))

    def forward(self, x, mask_bias):
        for layer in self.layer:
            x = layer(x, mask_bias)
        return x


class _BertEmbeddings(nn.Module):
    def __init__(self, vocab, hidden, seq):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max(seq, 512), hidden)
        self.token_type_embeddings = nn.Embedding(2, hidden)
        self.LayerNorm = nn.LayerNorm(hidden)
        self.register_buffer("position_ids", torch.arange(max(seq, 512)).unsqueeze(0), persistent=False)

    def forward(self, input_ids, token_type_ids):
        positions = self.position_ids[:, : input_ids.shape[1]]
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions)
        return self.LayerNorm(x + self.token_type_embeddings(token_type_ids))


class _Bert(nn.Module):
    def __init__(self, vocab, hidden, heads, layers, seq):
        super().__init__()
        self.embeddings = _BertEmbeddings(vocab, hidden, seq)
        self.encoder = _BertEncoder(hidden, heads, layers)
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask, token_type_ids):
        # As Hugging Face does: masked positions get the dtype's lowest value (a -inf-like bias).
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        x = self.encoder(self.embeddings(input_ids, token_type_ids), mask_bias)
        return x, torch.tanh(self.pooler(x[:, 0]))


class _Gpt2Attention(nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.heads, self.hidden = heads, hidden
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        n = max(seq, 256)
        self.register_buffer("bias", torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n),
                             persistent=False)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.c_attn(x).split(self.hidden, dim=2)
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.shape[-1])
        causal = self.bias[:, :, k.shape[-2] - q.shape[-2]: k.shape[-2], : k.shape[-2]]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        out = torch.matmul(w.softmax(dim=-1), v).transpose(1, 2).contiguous().view(b, s, self.hidden)
        return self.c_proj(out)


class _Gpt2Mlp(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.c_proj = nn.Linear(4 * hidden, hidden)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class _Gpt2Block(nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden)
        self.attn = _Gpt2Attention(hidden, heads, seq)
        self.ln_2 = nn.LayerNorm(hidden)
        self.mlp = _Gpt2Mlp(hidden)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class _Gpt2(nn.Module):
    def __init__(self, vocab, hidden, heads, layers, seq):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max(seq, 256), hidden)
        self.h = nn.ModuleList(_Gpt2Block(hidden, heads, seq) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids):
        positions = torch.arange(0, input_ids.shape[-1], dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class _VitBlock(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(hidden)
        self.attention = _SelfAttention(hidden, heads)
        self.layernorm_after = nn.LayerNorm(hidden)
        self.intermediate = _BertIntermediate(hidden)
        self.output = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        x = x + self.attention(self.layernorm_before(x), 0.0)
        return x + self.output(self.intermediate(self.layernorm_after(x)))


class _Vit(nn.Module):
    def __init__(self, hidden, heads, layers, image, patch):
        super().__init__()
        self.patch_embeddings = nn.Conv2d(3, hidden, kernel_size=patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, hidden) * 0.02)
        self.position_embeddings = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, hidden) * 0.02)
        self.layer = nn.ModuleList(_VitBlock(hidden, heads) for _ in range(layers))
        self.layernorm = nn.LayerNorm(hidden)
        self.classifier = nn.Linear(hidden, 10)

    def forward(self, pixel_values):
        x = self.patch_embeddings(pixel_values).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.position_embeddings
        for block in self.layer:
            x = block(x)
        return self.classifier(self.layernorm(x)[:, 0])


class _BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                           if stride != 1 or cin != cout else None)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x))))) + identity)


class _ResNet(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(_BasicBlock(width, width, 1), _BasicBlock(width, width, 1))
        self.layer2 = nn.Sequential(_BasicBlock(width, 2 * width, 2), _BasicBlock(2 * width, 2 * width, 1))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, 10)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class _Wrapper(nn.Module):
    """Holds the model as `m`, so TorchScript-exported node names start with /m/ (as in the issue)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, *args):
        return self.m(*args)


def build(kind, size="tiny", seed=0):
    """The module (in eval mode, random weights from `seed`), example inputs, and input/output names."""
    torch.manual_seed(seed)
    c = SIZES[size]
    if kind == "bert":
        m = _Bert(c["vocab"], c["hidden"], c["heads"], c["layers"], c["seq"])
        ids = torch.randint(0, c["vocab"], (1, c["seq"]))
        mask = torch.ones(1, c["seq"], dtype=torch.long)
        mask[:, -2:] = 0
        args = (ids, mask, torch.zeros(1, c["seq"], dtype=torch.long))
        names = (["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"])
    elif kind == "gpt2":
        m = _Gpt2(c["vocab"], c["hidden"], c["heads"], c["layers"], c["seq"])
        args = (torch.randint(0, c["vocab"], (1, c["seq"])),)
        names = (["input_ids"], ["logits"])
    elif kind == "vit":
        m = _Vit(c["hidden"], c["heads"], c["layers"], c["image"], c["patch"])
        args = (torch.randn(1, 3, c["image"], c["image"]),)
        names = (["pixel_values"], ["logits"])
    elif kind == "resnet":
        m = _ResNet(c["cnn_width"])
        with torch.no_grad():  # non-trivial BatchNorm statistics, as a trained model has
            for mod in m.modules():
                if isinstance(mod, nn.BatchNorm2d):
                    mod.running_mean.uniform_(-0.5, 0.5)
                    mod.running_var.uniform_(0.5, 2.0)
        args = (torch.randn(1, 3, c["image"], c["image"]),)
        names = (["x"], ["logits"])
    else:
        raise ValueError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    return _Wrapper(m).eval(), args, names


def export(kind, path, exporter="torchscript", size="tiny", seed=0, opset=17, dynamic=True):
    """Exports `kind` to `path` with torch's TorchScript (dynamo=False) or dynamo (dynamo=True) exporter.

    dynamic: batch (and, for the text models, sequence) dimensions left symbolic, as exports meant for
    deployment do; it is what leaves shape arithmetic (Shape, Gather, Constant, Slice) in the graph."""
    if exporter not in EXPORTERS:
        raise ValueError(f"unknown exporter {exporter!r}; one of {', '.join(EXPORTERS)}")
    model, args, (input_names, output_names) = build(kind, size, seed)
    path = Path(path)
    text = kind in ("bert", "gpt2")
    axes = {n: ({0: "batch", 1: "sequence"} if text else {0: "batch"}) for n in input_names}
    axes.update({n: {0: "batch"} for n in output_names})
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            torch.onnx.export(model, args, str(path), dynamo=False, opset_version=opset,
                              input_names=input_names, output_names=output_names,
                              dynamic_axes=axes if dynamic else None)
        else:
            # The dynamo exporter prints progress on stdout; keep test output readable.
            with open(os.devnull, "w") as devnull:
                saved = sys.stdout
                sys.stdout = devnull
                try:
                    shapes = None
                    if dynamic:
                        batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("sequence", max=256)
                        shapes = [{0: batch, 1: seq} if text else {0: batch} for _ in input_names]
                    program = torch.onnx.export(model, args, dynamo=True, opset_version=max(opset, 18),
                                                input_names=input_names, output_names=output_names,
                                                dynamic_shapes=(tuple(shapes),) if shapes else None,
                                                external_data=False)
                    program.save(str(path), external_data=False)
                finally:
                    sys.stdout = saved
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--exporters", default=",".join(EXPORTERS))
    parser.add_argument("--size", default="tiny", choices=sorted(SIZES))
    a = parser.parse_args(argv)
    a.out_dir.mkdir(parents=True, exist_ok=True)
    for kind in a.kinds.split(","):
        for exporter in a.exporters.split(","):
            print(export(kind, a.out_dir / f"{kind}_{exporter}.onnx", exporter, a.size))


if __name__ == "__main__":
    main()
