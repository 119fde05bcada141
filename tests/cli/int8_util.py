"""Helpers of the int8 tests: small float models built with onnx.helper (a Conv -> Relu ->
GlobalAveragePool -> Flatten -> MatMul chain whose every quantized input is known), calibration
data-loader scripts, TensorRT cache text, and numpy references written from the algorithms' public
descriptions (not from Parity's code)."""

import struct
import textwrap

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv_chain_model(path, zero_activation=False, channels=8):
    """x [N,3,8,8] -> conv (Conv, W [channels,3,3,3], B) -> relu -> gap (GlobalAveragePool) -> flat ->
    fc (MatMul, M [channels,4]) -> y. zero_activation: relu's input multiplied by 0 first (an
    activation that is zero in every batch)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((channels, 3, 3, 3)).astype(np.float32)
    w[1] *= 10  # channels of different ranges: per-channel scales differ
    inits = [numpy_helper.from_array(w, "W"),
             numpy_helper.from_array(rng.standard_normal((channels,)).astype(np.float32), "B"),
             numpy_helper.from_array(rng.standard_normal((channels, 4)).astype(np.float32), "M"),
             numpy_helper.from_array(np.zeros((1,), np.float32), "zero")]
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1])]
    if zero_activation:
        nodes.append(helper.make_node("Mul", ["c", "zero"], ["c0"], name="zero_out"))
    nodes += [helper.make_node("Relu", ["c0" if zero_activation else "c"], ["r"], name="relu"),
              helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
              helper.make_node("Flatten", ["g"], ["f"], name="flat"),
              helper.make_node("MatMul", ["f", "M"], ["y"], name="fc")]
    graph = helper.make_graph(nodes, "conv_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def calibration_data(batches, batch=2, seed=3, outlier=None):
    """The batches a calibration script yields (numpy, seeded): x ~ N(0, 1), plus, with `outlier`,
    one element of the first batch set to it."""
    rng = np.random.default_rng(seed)
    data = [rng.standard_normal((batch, 3, 8, 8)).astype(np.float32) for _ in range(batches)]
    if outlier is not None:
        data[0][0, 0, 0, 0] = outlier
    return data


def write_calibration_script(path, batches, batch=2, seed=3, outlier=None, name="x", shape_tail=(3, 8, 8)):
    path.write_text(textwrap.dedent(f"""\
        import numpy as np

        def load_data():
            rng = np.random.default_rng({seed})
            data = [rng.standard_normal(({batch}, {", ".join(map(str, shape_tail))})).astype(np.float32)
                    for _ in range({batches})]
            if {outlier!r} is not None:
                data[0][0, 0, 0, 0] = {outlier!r}
            for x in data:
                yield {{{name!r}: x}}
        """))
    return path


def hex_scale(scale):
    return struct.pack(">f", np.float32(scale)).hex()


def read_cache(path):
    lines = path.read_text().splitlines()
    scales = {}
    for line in lines[1:]:
        name, value = line.rsplit(":", 1)
        scales[name.strip()] = struct.unpack(">f", bytes.fromhex(value.strip()))[0]
    return lines[0], scales


def initializers(path):
    model = onnx.load(str(path))
    return {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}, model


def entropy_amax(values, bins=2048, levels=128):
    """TensorRT's EntropyCalibration2 as NVIDIA describes it (GTC 2017, "8-bit Inference with TensorRT",
    and pytorch-quantization's histogram calibrator): histogram of |x| over [0, max] in 2048 bins
    (bin 0 counted as bin 1); for each candidate i of 128..2048 bins, P = the first i bins with the
    outliers added to the last, Q = those bins merged into 128 levels and spread evenly over each
    level's non-empty bins; amax = i * bin width for the (last) i of least KL(P || Q)."""
    a = np.abs(values.astype(np.float64)).ravel()
    hist, edges = np.histogram(a, bins=bins, range=(0, a.max()))
    hist = hist.astype(np.float64)
    hist[0] = hist[1]
    best, best_i = np.inf, bins
    for i in range(levels, bins + 1):
        p = hist[:i].copy()
        p[i - 1] += hist[i:].sum()
        level = np.digitize(np.arange(i), np.linspace(0, i, levels + 1)) - 1
        nonzero = hist[:i] != 0
        sums = np.bincount(level[nonzero], weights=hist[:i][nonzero], minlength=levels)
        counts = np.bincount(level[nonzero], minlength=levels)
        q = np.zeros(i)
        q[nonzero] = sums[level[nonzero]] / counts[level[nonzero]]
        p /= p.sum()
        q /= q.sum()
        mask = p > 0
        if np.any(q[mask] == 0):
            divergence = np.inf
        else:
            divergence = np.sum(p[mask] * np.log(p[mask] / q[mask]))
        if divergence <= best:
            best, best_i = divergence, i
    return min(edges[best_i], a.max())
