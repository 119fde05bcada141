"""Models for the `debug reduce` tests and benchmark, built with the onnx package.

chain_model: about `nodes` nodes over two inputs, mostly a chain of float ops (Add, Mul,
Abs, Neg, Max; after the planted node only exact ones) with short side branches that merge back, and one planted node named
`planted_bad` (a Tanh, which the reference runner and ONNX Runtime compute with different
approximations; with planted_nan, a Sqrt of a negative tensor, NaN everywhere) about `position` of
the way through.
branches_model: `branches` independent branches meeting only at the end (one Concat), the planted
node ending one of them.
peak_model, peak_image: a peak detector, Equal(heat, MaxPool(heat)) after a Conv stack (with
symmetrize, the last convolution's input made exactly mirror-symmetric first), and an image on
which ref and ONNX Runtime disagree about its peaks.
"""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PLANTED = "planted_bad"


def _model(nodes, inputs, outputs, initializers, opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def chain_model(nodes=1000, position=0.6, width=16, planted_nan=False):
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", width]) for n in ("x", "y")]
    inits = [
        numpy_helper.from_array(np.full([width], 0.5, np.float32), "half"),
        numpy_helper.from_array(np.full([width], 0.25, np.float32), "quarter"),
        numpy_helper.from_array(np.full([width], 2.0, np.float32), "two"),
    ]
    graph_nodes = [helper.make_node("Add", ["x", "y"], ["t0"], name="n0")]
    current = "t0"
    planted_at = int(nodes * position)
    i = 1
    while len(graph_nodes) < nodes - 1:
        name = f"n{i}"
        out = f"t{i}"
        if len(graph_nodes) == planted_at and planted_nan:  # Sqrt(-|t| - 1): NaN everywhere
            graph_nodes.append(helper.make_node("Abs", [current], [out + "_abs"], name=name + "_abs"))
            graph_nodes.append(helper.make_node("Neg", [out + "_abs"], [out + "_neg"], name=name + "_neg"))
            graph_nodes.append(helper.make_node("Sub", [out + "_neg", "quarter"], [out + "_sub"], name=name + "_sub"))
            graph_nodes.append(helper.make_node("Sqrt", [out + "_sub"], [out], name=PLANTED))
        elif len(graph_nodes) == planted_at:
            graph_nodes.append(helper.make_node("Tanh", [current], [out], name=PLANTED))
        elif i % 7 == 0:  # a side branch of two nodes merging back
            graph_nodes.append(helper.make_node("Neg", [current], [out + "_a"], name=name + "_a"))
            graph_nodes.append(helper.make_node("Abs", [out + "_a"], [out + "_b"], name=name + "_b"))
            graph_nodes.append(helper.make_node("Max", [current, out + "_b"], [out], name=name))
        else:
            # After the planted node only exact ops, so its last-bit difference reaches the output.
            exact = len(graph_nodes) > planted_at
            op = ("Mul", "Abs", "Neg", "Mul2", "Abs", "Mul")[i % 6] if exact else ("Mul", "Add", "Abs", "Neg", "Add", "Mul")[i % 6]
            if op == "Mul2":
                graph_nodes.append(helper.make_node("Mul", [current, "two"], [out], name=name))
            elif op == "Mul":
                graph_nodes.append(helper.make_node("Mul", [current, "half"], [out], name=name))
            elif op == "Add":
                graph_nodes.append(helper.make_node("Add", [current, "y" if i % 2 else "quarter"], [out], name=name))
            else:
                graph_nodes.append(helper.make_node(op, [current], [out], name=name))
        current = out
        i += 1
    graph_nodes.append(helper.make_node("Concat", [current, "x"], ["out"], name="last", axis=1))
    output = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 2 * width])
    return _model(graph_nodes, inputs, [output], inits)


def branches_model(branches=200, depth=3, planted_branch=117, width=8):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, width])]
    inits = [numpy_helper.from_array(np.full([width], 0.5, np.float32), "half")]
    graph_nodes, ends = [], []
    for b in range(branches):
        current = "x"
        for d in range(depth):
            out = f"b{b}_{d}"
            if b == planted_branch and d == depth - 1:
                graph_nodes.append(helper.make_node("Tanh", [current], [out], name=PLANTED))
            else:
                op = "Mul" if d % 2 == 0 else "Add"
                graph_nodes.append(helper.make_node(op, [current, "half"], [out], name=f"b{b}_n{d}"))
            current = out
        ends.append(current)
    graph_nodes.append(helper.make_node("Concat", ends, ["out"], name="concat_all", axis=1))
    output = helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, width * branches])
    return _model(graph_nodes, inputs, [output], inits)



def peak_model(convs=4, channels=8, size=32, seed=0, symmetrize=False):
    """Equal(heat, MaxPool(heat)) after a stack of Conv+Relu (a peak detector). The image and every
    kernel are mirror-symmetric left to right, and the image is the same on every row, so the two
    middle columns of `heat` are equal in exact arithmetic: which of them is the peak depends on
    the last bits of each runner's accumulation order. With symmetrize, the input of the last
    convolution (heat_conv) is Add(t, mirror(t)), mirror-symmetric to the last bit on every runner
    (float addition commutes), so the ties are broken by heat_conv's own accumulation alone."""
    rng = np.random.default_rng(seed)
    inputs = [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, channels, size, size])]
    graph_nodes, inits = [], []

    def symmetric_kernel(name):
        weight = rng.standard_normal([channels, channels, 3, 3]) / np.sqrt(9 * channels)
        weight[..., 2] = weight[..., 0]
        inits.append(numpy_helper.from_array(weight.astype(np.float32), name))

    current = "image"
    for c in range(convs):
        symmetric_kernel(f"w{c}")
        graph_nodes.append(helper.make_node("Conv", [current, f"w{c}"], [f"conv{c}"], name=f"conv{c}",
                                            pads=[1, 1, 1, 1]))
        graph_nodes.append(helper.make_node("Relu", [f"conv{c}"], [f"relu{c}"], name=f"relu{c}"))
        current = f"relu{c}"
    if symmetrize:
        mirror = {"mirror_starts": -1, "mirror_ends": -(2**62), "mirror_axes": 3, "mirror_steps": -1}
        for name, value in mirror.items():
            inits.append(numpy_helper.from_array(np.array([value], np.int64), name))
        graph_nodes.append(helper.make_node("Slice", [current, "mirror_starts", "mirror_ends", "mirror_axes",
                                                      "mirror_steps"], ["mirrored"], name="mirror"))
        graph_nodes.append(helper.make_node("Add", [current, "mirrored"], ["symmetric"], name="symmetrize"))
        current = "symmetric"
    symmetric_kernel("w_heat")
    graph_nodes.append(helper.make_node("Conv", [current, "w_heat"], ["heat"], name="heat_conv", pads=[1, 1, 1, 1]))
    graph_nodes.append(helper.make_node("MaxPool", ["heat"], ["pooled"], name="pool", kernel_shape=[3, 3],
                                        pads=[1, 1, 1, 1], strides=[1, 1]))
    graph_nodes.append(helper.make_node("Equal", ["heat", "pooled"], ["peaks"], name="peak_equal"))
    graph_nodes.append(helper.make_node("Cast", ["peaks"], ["out"], name="to_float", to=TensorProto.FLOAT))
    output = helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, channels, size, size])
    return _model(graph_nodes, inputs, [output], inits)


def peak_image(channels=8, size=32, seed=1):
    """A left-right mirror-symmetric image, the same on every row, peaking between the middle columns."""
    rng = np.random.default_rng(seed)
    half = rng.uniform(0, 1, [channels, size // 2]).astype(np.float32)
    half = np.sort(half, axis=1)  # rising towards the middle
    row = np.concatenate([half, half[:, ::-1]], axis=1)
    return np.broadcast_to(row[:, None, :], [channels, size, size])[None].copy()
