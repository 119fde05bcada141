#!/usr/bin/env python3
"""Writes Parity's small example ONNX models.

    python examples/make_models.py [-o DIR] [--verify]

Models (opset 17, weights from numpy with a fixed seed, so reruns give identical files):
  small_cnn.onnx          Conv/BatchNorm/Relu/MaxPool x2 -> Flatten -> Gemm -> Softmax
  small_transformer.onnx  one pre-norm transformer encoder block (4 heads, Erf-based Gelu)
  small_if.onnx           an If whose branches read outer-scope values

--verify runs onnx.checker (full_check) and ONNX Runtime on each written model.
"""

import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # the IR version that goes with opset 17 (ONNX 1.12)
PRODUCER = "parity-examples"
SEED = 20240517


def opset_imports():
    return [helper.make_opsetid("", OPSET)]


def make_model(graph, doc):
    model = helper.make_model(graph, opset_imports=opset_imports(), producer_name=PRODUCER,
                              producer_version="1.0", doc_string=doc)
    model.ir_version = IR_VERSION
    return model


def he_normal(rng, shape, fan_in):
    return (rng.standard_normal(shape) * math.sqrt(2.0 / fan_in)).astype(np.float32)


def xavier_normal(rng, shape, fan_in, fan_out):
    return (rng.standard_normal(shape) * math.sqrt(2.0 / (fan_in + fan_out))).astype(np.float32)


def init(name, array):
    return numpy_helper.from_array(np.array(array, copy=True, order="C"), name)


# ------------------------------------------------------------------------------------------
# 1. small_cnn
# ------------------------------------------------------------------------------------------
def make_small_cnn(rng):
    initializers = []
    nodes = []

    def conv_block(index, x, in_channels, out_channels):
        w = he_normal(rng, (out_channels, in_channels, 3, 3), in_channels * 9)
        b = (rng.standard_normal(out_channels) * 0.05).astype(np.float32)
        scale = rng.uniform(0.8, 1.2, out_channels).astype(np.float32)
        bias = (rng.standard_normal(out_channels) * 0.1).astype(np.float32)
        mean = (rng.standard_normal(out_channels) * 0.2).astype(np.float32)
        var = rng.uniform(0.5, 1.5, out_channels).astype(np.float32)
        p = f"conv{index}"
        q = f"bn{index}"
        initializers.extend([
            init(f"{p}.weight", w), init(f"{p}.bias", b),
            init(f"{q}.scale", scale), init(f"{q}.bias", bias),
            init(f"{q}.running_mean", mean), init(f"{q}.running_var", var),
        ])
        nodes.append(helper.make_node("Conv", [x, f"{p}.weight", f"{p}.bias"], [f"{p}_out"],
                                      name=p, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                      strides=[1, 1]))
        nodes.append(helper.make_node("BatchNormalization",
                                      [f"{p}_out", f"{q}.scale", f"{q}.bias",
                                       f"{q}.running_mean", f"{q}.running_var"],
                                      [f"{q}_out"], name=q, epsilon=1e-5))
        nodes.append(helper.make_node("Relu", [f"{q}_out"], [f"relu{index}_out"],
                                      name=f"relu{index}"))
        nodes.append(helper.make_node("MaxPool", [f"relu{index}_out"], [f"pool{index}_out"],
                                      name=f"pool{index}", kernel_shape=[2, 2], strides=[2, 2]))
        return f"pool{index}_out"

    x = conv_block(1, "image", 3, 8)        # [batch, 8, 16, 16]
    x = conv_block(2, x, 8, 16)             # [batch, 16, 8, 8]
    nodes.append(helper.make_node("Flatten", [x], ["flatten_out"], name="flatten", axis=1))
    features = 16 * 8 * 8
    initializers.append(init("fc.weight", xavier_normal(rng, (10, features), features, 10)))
    initializers.append(init("fc.bias", (rng.standard_normal(10) * 0.05).astype(np.float32)))
    nodes.append(helper.make_node("Gemm", ["flatten_out", "fc.weight", "fc.bias"], ["logits"],
                                  name="fc", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax",
                                  axis=-1))

    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", 10])],
        initializer=initializers)
    return make_model(graph, "Small image classifier: two Conv-BN-ReLU-MaxPool blocks, Gemm, Softmax")


# ------------------------------------------------------------------------------------------
# 2. small_transformer
# ------------------------------------------------------------------------------------------
SEQ, D_MODEL, HEADS, D_MLP = 16, 32, 4, 64
HEAD_DIM = D_MODEL // HEADS


def make_small_transformer(rng):
    initializers = []
    nodes = []

    def add_init(name, array):
        initializers.append(init(name, array))
        return name

    def node(op, inputs, output, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))
        return output

    def linear(x, name, fan_in, fan_out):
        w = add_init(f"{name}.weight", xavier_normal(rng, (fan_in, fan_out), fan_in, fan_out))
        b = add_init(f"{name}.bias", (rng.standard_normal(fan_out) * 0.02).astype(np.float32))
        y = node("MatMul", [x, w], f"{name}_matmul_out", f"{name}_matmul")
        return node("Add", [y, b], f"{name}_out", f"{name}_add")

    def layer_norm(x, name):
        scale = add_init(f"{name}.scale", rng.uniform(0.9, 1.1, D_MODEL).astype(np.float32))
        bias = add_init(f"{name}.bias", (rng.standard_normal(D_MODEL) * 0.02).astype(np.float32))
        return node("LayerNormalization", [x, scale, bias], f"{name}_out", name, axis=-1,
                    epsilon=1e-5)

    heads_shape = add_init("heads_shape", np.array([0, SEQ, HEADS, HEAD_DIM], np.int64))
    merged_shape = add_init("merged_shape", np.array([0, SEQ, D_MODEL], np.int64))
    inv_sqrt_d = add_init("inv_sqrt_head_dim", np.array(1.0 / math.sqrt(HEAD_DIM), np.float32))
    inv_sqrt2 = add_init("inv_sqrt2", np.array(1.0 / math.sqrt(2.0), np.float32))
    one = add_init("one", np.array(1.0, np.float32))
    half = add_init("half", np.array(0.5, np.float32))

    # Attention sub-block (pre-norm).
    h = layer_norm("tokens", "ln1")
    heads = {}
    for which in ("q", "k", "v"):
        projected = linear(h, f"attn.{which}", D_MODEL, D_MODEL)            # [b,16,32]
        split = node("Reshape", [projected, heads_shape], f"attn.{which}_heads",
                     f"attn.{which}_reshape")                                # [b,16,4,8]
        perm = [0, 2, 3, 1] if which == "k" else [0, 2, 1, 3]               # k: [b,4,8,16]
        heads[which] = node("Transpose", [split], f"attn.{which}_transposed",
                            f"attn.{which}_transpose", perm=perm)
    scores = node("MatMul", [heads["q"], heads["k"]], "attn.scores", "attn.scores_matmul")
    scaled = node("Mul", [scores, inv_sqrt_d], "attn.scaled_scores", "attn.scale")
    probs = node("Softmax", [scaled], "attn.probs", "attn.softmax", axis=-1)  # [b,4,16,16]
    context = node("MatMul", [probs, heads["v"]], "attn.context", "attn.context_matmul")
    context = node("Transpose", [context], "attn.context_transposed", "attn.context_transpose",
                   perm=[0, 2, 1, 3])                                        # [b,16,4,8]
    context = node("Reshape", [context, merged_shape], "attn.context_merged",
                   "attn.context_reshape")                                   # [b,16,32]
    attn_out = linear(context, "attn.out", D_MODEL, D_MODEL)
    residual1 = node("Add", ["tokens", attn_out], "residual1_out", "residual1")

    # MLP sub-block (pre-norm), Gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2))).
    h = layer_norm(residual1, "ln2")
    up = linear(h, "mlp.fc1", D_MODEL, D_MLP)
    scaled = node("Mul", [up, inv_sqrt2], "mlp.gelu_scaled", "mlp.gelu_div_sqrt2")
    erf = node("Erf", [scaled], "mlp.gelu_erf", "mlp.gelu_erf")
    erf_plus_one = node("Add", [erf, one], "mlp.gelu_erf_plus_one", "mlp.gelu_add_one")
    gated = node("Mul", [up, erf_plus_one], "mlp.gelu_gated", "mlp.gelu_mul")
    gelu = node("Mul", [gated, half], "mlp.gelu_out", "mlp.gelu_half")
    down = linear(gelu, "mlp.fc2", D_MLP, D_MODEL)
    node("Add", [residual1, down], "hidden", "residual2")

    graph = helper.make_graph(
        nodes, "small_transformer",
        [helper.make_tensor_value_info("tokens", TensorProto.FLOAT, ["batch", SEQ, D_MODEL])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", SEQ, D_MODEL])],
        initializer=initializers)
    return make_model(graph, "One pre-norm transformer encoder block: 4-head self-attention "
                             "and an Erf-Gelu MLP, each with a residual connection")


# ------------------------------------------------------------------------------------------
# 3. small_if
# ------------------------------------------------------------------------------------------
def make_small_if(rng):
    """y = x * scale + offset if sum(x) > 0 else relu(x) - offset.

    Both branches read `x` and `offset` from the outer graph (no branch inputs)."""
    features = 4
    scale = init("scale", rng.uniform(0.5, 2.0, features).astype(np.float32))
    offset = init("offset", (rng.standard_normal(features) * 0.5).astype(np.float32))
    zero = init("zero", np.array(0.0, np.float32))

    then_graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "scale"], ["then_scaled"], name="then_mul"),
         helper.make_node("Add", ["then_scaled", "offset"], ["then_out"], name="then_add")],
        "then_branch", [],
        [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, ["batch", features])])
    else_graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["else_relu"], name="else_relu"),
         helper.make_node("Sub", ["else_relu", "offset"], ["else_out"], name="else_sub")],
        "else_branch", [],
        [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, ["batch", features])])

    nodes = [
        helper.make_node("ReduceSum", ["x"], ["total"], name="sum_all", keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["is_positive"], name="is_positive"),
        helper.make_node("If", ["is_positive"], ["y"], name="branch",
                         then_branch=then_graph, else_branch=else_graph),
    ]
    graph = helper.make_graph(
        nodes, "small_if",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", features])],
        initializer=[scale, offset, zero])
    return make_model(graph, "Control flow: an If whose branches use outer-scope values")


# ------------------------------------------------------------------------------------------
def build_all():
    rng = np.random.default_rng(SEED)
    return {
        "small_cnn.onnx": make_small_cnn(rng),
        "small_transformer.onnx": make_small_transformer(rng),
        "small_if.onnx": make_small_if(rng),
    }


def transformer_in_numpy(tokens, w):
    """The encoder block restated in plain numpy (float64), to check the graph's wiring."""
    from math import erf

    def layer_norm(x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * w[f"{name}.scale"] + w[f"{name}.bias"]

    def linear(x, name):
        return x @ w[f"{name}.weight"] + w[f"{name}.bias"]

    def split_heads(x):
        return x.reshape(x.shape[0], SEQ, HEADS, HEAD_DIM).transpose(0, 2, 1, 3)

    x = tokens.astype(np.float64)
    h = layer_norm(x, "ln1")
    q, k, v = (split_heads(linear(h, f"attn.{n}")) for n in "qkv")
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(HEAD_DIM)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    probs = scores / scores.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(x.shape[0], SEQ, D_MODEL)
    x = x + linear(context, "attn.out")
    up = linear(layer_norm(x, "ln2"), "mlp.fc1")
    gelu = up * 0.5 * (1.0 + np.vectorize(erf)(up / math.sqrt(2.0)))
    return x + linear(gelu, "mlp.fc2")


def verify(path):
    import onnxruntime as ort

    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for batch in (1, 3):
        feed = {}
        for inp in session.get_inputs():
            shape = [batch if not isinstance(d, int) else d for d in inp.shape]
            feed[inp.name] = rng.standard_normal(shape).astype(np.float32)
        outputs = session.run(None, feed)
        for meta, value in zip(session.get_outputs(), outputs):
            expected = [batch if not isinstance(d, int) else d for d in meta.shape]
            if list(value.shape) != expected:
                raise AssertionError(f"{path}: output {meta.name} has shape {value.shape}, "
                                     f"expected {expected}")
            if not np.all(np.isfinite(value)):
                raise AssertionError(f"{path}: output {meta.name} is not finite")
        name = os.path.basename(path)
        if name == "small_cnn.onnx":
            sums = outputs[0].sum(axis=1)
            if not np.allclose(sums, 1.0, atol=1e-5):
                raise AssertionError(f"{path}: softmax rows do not sum to 1: {sums}")
        if name == "small_transformer.onnx":
            weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
            want = transformer_in_numpy(feed["tokens"], weights)
            if not np.allclose(outputs[0], want, atol=1e-4, rtol=1e-4):
                raise AssertionError(f"{path}: output differs from the numpy restatement by "
                                     f"{np.abs(outputs[0] - want).max()}")
        if name == "small_if.onnx":
            weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
            x = feed["x"]
            for sign in (1.0, -1.0):
                xs = np.abs(x) * sign
                got = session.run(None, {"x": xs})[0]
                if xs.sum() > 0:
                    want = xs * weights["scale"] + weights["offset"]
                else:
                    want = np.maximum(xs, 0) - weights["offset"]
                if not np.allclose(got, want, atol=1e-6):
                    raise AssertionError(f"{path}: If output differs from numpy")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output-dir",
                        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"),
                        help="folder to write the models into (default: %(default)s)")
    parser.add_argument("--verify", action="store_true",
                        help="check each model (onnx.checker, full_check) and run it in ONNX Runtime")
    args = parser.parse_args(argv)

    os.makedirs(args.output_dir, exist_ok=True)
    for name, model in build_all().items():
        onnx.checker.check_model(model, full_check=True)
        path = os.path.join(args.output_dir, name)
        temporary = path + ".tmp"
        onnx.save(model, temporary)
        os.replace(temporary, path)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")
        if args.verify:
            verify(path)
            print(f"verified {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
