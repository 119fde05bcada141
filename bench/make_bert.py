"""Writes a BERT-base-sized encoder (12 layers, hidden 768, 12 heads, FFN 3072, sequence 128,
random weights) as ONNX opset 17, for the reference-runner benchmark and memory tests.

    python bench/make_bert.py -o build/bench/bert_base.onnx [--layers 12] [--seq 128]

Input "hidden" float32 [batch, seq, 768]; output "encoded" [batch, seq, 768]. Each layer:
self-attention (Q/K/V MatMul+Add, Reshape/Transpose to heads, scaled scores, Softmax), output
projection, residual Add, LayerNormalization, MLP with Gelu written as x*0.5*(1+erf(x/sqrt 2)),
residual Add, LayerNormalization.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(layers: int, seq: int, hidden: int = 768, heads: int = 12, ffn: int = 3072, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    head = hidden // heads
    inits, nodes = [], []

    def weight(name, shape, scale):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(name, values, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    const("shape_heads", [0, seq, heads, head], np.int64)
    const("shape_merge", [0, seq, hidden], np.int64)
    const("scale", 1.0 / np.sqrt(head))
    const("half", 0.5)
    const("one", 1.0)
    const("inv_sqrt2", 1.0 / np.sqrt(2.0))
    x = "hidden"
    for l in range(layers):
        p = f"layer{l}."
        def proj(inp, name, n_in, n_out):
            w = weight(p + name + ".weight", (n_in, n_out), 1.0 / np.sqrt(n_in))
            b = weight(p + name + ".bias", (n_out,), 0.02)
            return node("Add", [node("MatMul", [inp, w], p + name + ".matmul"), b], p + name)
        def split_heads(t, name):
            r = node("Reshape", [t, "shape_heads"], p + name + ".reshape")
            return node("Transpose", [r], p + name + ".heads", perm=[0, 2, 1, 3])
        q = split_heads(proj(x, "q", hidden, hidden), "q")
        k = node("Transpose", [node("Reshape", [proj(x, "k", hidden, hidden), "shape_heads"], p + "k.reshape")],
                 p + "k.heads_t", perm=[0, 2, 3, 1])
        v = split_heads(proj(x, "v", hidden, hidden), "v")
        scores = node("Mul", [node("MatMul", [q, k], p + "scores"), "scale"], p + "scores.scaled")
        probs = node("Softmax", [scores], p + "probs", axis=-1)
        context = node("MatMul", [probs, v], p + "context")
        merged = node("Reshape", [node("Transpose", [context], p + "context.t", perm=[0, 2, 1, 3]), "shape_merge"],
                      p + "context.merged")
        attn = proj(merged, "attn_out", hidden, hidden)
        g1 = weight(p + "ln1.gamma", (hidden,), 0.1)
        b1 = weight(p + "ln1.beta", (hidden,), 0.1)
        ln1 = node("LayerNormalization", [node("Add", [x, attn], p + "residual1"), g1, b1], p + "ln1", axis=-1,
                   epsilon=1e-12)
        up = proj(ln1, "ffn_up", hidden, ffn)
        erf = node("Erf", [node("Mul", [up, "inv_sqrt2"], p + "gelu.scaled")], p + "gelu.erf")
        gelu = node("Mul", [node("Mul", [up, "half"], p + "gelu.half"), node("Add", [erf, "one"], p + "gelu.plus1")],
                    p + "gelu")
        down = proj(gelu, "ffn_down", ffn, hidden)
        g2 = weight(p + "ln2.gamma", (hidden,), 0.1)
        b2 = weight(p + "ln2.beta", (hidden,), 0.1)
        x = node("LayerNormalization", [node("Add", [ln1, down], p + "residual2"), g2, b2], p + "ln2", axis=-1,
                 epsilon=1e-12)
    nodes[-1].output[0] = "encoded"
    graph = helper.make_graph(
        nodes, "bert_base_encoder",
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", seq, hidden])],
        [helper.make_tensor_value_info("encoded", TensorProto.FLOAT, ["batch", seq, hidden])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="parity-bench")
    model.ir_version = 8
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--seq", type=int, default=128)
    args = parser.parse_args()
    model = build(args.layers, args.seq)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    onnx.save(model, args.output)
    print(f"wrote {args.output} ({os.path.getsize(args.output) / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
