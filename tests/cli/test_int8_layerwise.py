"""Layerwise comparison across Q/DQ (docs/int8.md): an int8 model run with `--onnx-outputs mark all`
against the float model's saved outputs pairs every original node output with its float twin, leaves
the Q/DQ outputs out (named, not reported missing), gives each tensor's SQNR, and names the first
original node whose quantized output diverges."""

import json
import math
import struct

import numpy as np
import onnx
import pytest

from exported_models import export
from int8_util import read_cache
from run_util import load_polygraphy_json


@pytest.fixture(scope="module", params=["torchscript", "dynamo"])
def resnet(request, tmp_path_factory, run_parity):
    """The tiny ResNet, its int8 model (min-max, cache written) and the float run's mark-all outputs."""
    folder = tmp_path_factory.mktemp("int8_layerwise")
    model = export("resnet", folder / "resnet.onnx", request.param)
    int8, cache, fp32 = folder / "resnet.int8.onnx", folder / "c.cache", folder / "fp32_all.json"
    convert = run_parity("convert", model, "--int8", "--calibration-algo", "minmax", "--calibration-cache", cache,
                         "-o", int8, timeout=300)
    assert convert.returncode == 0, convert.describe()
    saved = run_parity("run", model, "--onnxrt", "--onnx-outputs", "mark", "all", "--save-outputs", fp32, timeout=300)
    assert saved.returncode == 0, saved.describe()
    return folder, model, int8, cache, fp32


def layerwise_against_fp32(run_parity, int8, fp32, report, *flags):
    result = run_parity("run", int8, "--onnxrt", "--onnx-outputs", "mark", "all", "--load-outputs", fp32,
                        "--report", report, *flags, timeout=300)
    assert "[!]" not in result.output and "Traceback" not in result.output, result.describe()
    (layerwise,) = json.loads(report.read_text())["layerwise"]
    return result, layerwise


def node_outputs(path, op_types=None):
    graph = onnx.load(str(path)).graph
    return [out for node in graph.node if op_types is None or node.op_type in op_types
            for out in node.output if out and node.op_type != "Constant"]


def test_pairing_covers_every_original_tensor_and_sqnr_matches_numpy(run_parity, resnet):
    folder, model, int8, _, fp32 = resnet
    saved = folder / "int8_all.json"
    result, layerwise = layerwise_against_fp32(run_parity, int8, fp32, folder / "pairing.json",
                                               "--save-outputs", saved)
    assert result.returncode == 1, result.describe()  # the default tolerances are far below int8 error
    compared = {entry["tensor"] for entry in layerwise["sqnr_db"]}
    assert compared == set(node_outputs(model))
    qdq = set(node_outputs(int8, {"QuantizeLinear", "DequantizeLinear"}))
    assert qdq and set(layerwise["qdq_left_out"]) == qdq
    assert layerwise["only_in_runner0"] == [] and layerwise["only_in_runner1"] == []
    assert "were not produced by" not in result.output
    assert f"{len(qdq)} Q/DQ tensor(s) of" in result.output
    # SQNR from the two runs' saved tensors, the float run as the reference.
    reference = dict(load_polygraphy_json(fp32)[0][1][0].items())
    quantized = dict(load_polygraphy_json(saved)[0][1][0].items())
    for entry in layerwise["sqnr_db"]:
        ref = np.asarray(reference[entry["tensor"]], dtype=np.float64)
        q = np.asarray(quantized[entry["tensor"]], dtype=np.float64)
        expected = 10 * math.log10(np.sum(ref ** 2) / np.sum((ref - q) ** 2))
        assert entry["sqnr_db"] == pytest.approx(expected, rel=1e-6, abs=1e-6), entry["tensor"]
        assert f"| {entry['tensor']}" in result.output
    assert layerwise["first_divergence"]["sqnr_db"] == pytest.approx(
        next(e["sqnr_db"] for e in layerwise["sqnr_db"] if e["tensor"] == layerwise["first_divergence"]["tensor"]))


def test_badly_quantized_tensor_names_its_reader_first(run_parity, resnet):
    folder, model, int8, cache, fp32 = resnet
    # With --rtol 0 the worst tensors are ranked by absolute error.
    _, baseline = layerwise_against_fp32(run_parity, int8, fp32, folder / "baseline.json", "--rtol", "0")
    tolerance = 2 * max(entry["max_absdiff"] for entry in baseline["worst"])
    # A hand-written cache: the calibrated scales, with one activation given a scale 1000 times too
    # large (every value quantizes to 0).
    header, scales = read_cache(cache)
    graph = onnx.load(str(model)).graph
    readers = {}
    for node in graph.node:
        if node.op_type == "Conv":
            readers.setdefault(node.input[0], []).append(node.name)
    # An activation in the middle of the network that one Conv reads.
    candidates = [name for name, nodes in readers.items() if name in scales and len(nodes) == 1]
    planted = candidates[len(candidates) // 2]
    reader = readers[planted][0]
    bad_cache = folder / "bad.cache"
    lines = [header] + [f"{name}: {struct.pack('>f', scale * (1000 if name == planted else 1)).hex()}"
                        for name, scale in scales.items()]
    bad_cache.write_text("\n".join(lines) + "\n")
    bad_int8 = folder / "bad.int8.onnx"
    convert = run_parity("convert", model, "--int8", "--calibration-algo", "minmax", "--calibration-cache", bad_cache,
                         "-o", bad_int8, timeout=300)
    assert convert.returncode == 0, convert.describe()
    loose = ("--atol", str(tolerance), "--rtol", "0")
    good, good_layerwise = layerwise_against_fp32(run_parity, int8, fp32, folder / "good.json", *loose)
    assert good.returncode == 0 and good_layerwise["first_divergence"] is None, good.describe()
    bad, bad_layerwise = layerwise_against_fp32(run_parity, bad_int8, fp32, folder / "bad.json", *loose)
    assert bad.returncode == 1, bad.describe()
    first = bad_layerwise["first_divergence"]
    assert first["node"] == reader, bad.describe()
    assert f"First divergence (topological order): tensor '{first['tensor']}' produced by node " \
           f"'{reader}'" in bad.output
    # Its SQNR is far below the same tensor's in the well-calibrated model; the tensors before it keep theirs.
    good_sqnr = {e["tensor"]: e["sqnr_db"] for e in good_layerwise["sqnr_db"]}
    assert first["sqnr_db"] < good_sqnr[first["tensor"]] - 20
    for entry in bad_layerwise["sqnr_db"]:
        if entry["tensor"] == first["tensor"]:
            break
        assert entry["sqnr_db"] == pytest.approx(good_sqnr[entry["tensor"]]), entry["tensor"]


def test_two_runner_int8_form_leaves_qdq_out(run_parity, resnet):
    _, model, int8, cache, _ = resnet
    result = run_parity("run", model, "--onnxrt", "--onnxrt", "--int8", "--calibration-algo", "minmax",
                        "--calibration-cache", cache, "--onnx-outputs", "mark", "all", "--iterations", "2",
                        timeout=300)
    assert result.returncode == 1, result.describe()
    assert "were not produced by" not in result.output, result.describe()
    # Counted once over the two iterations: the Q/DQ outputs of the same int8 model convert made.
    qdq = len(node_outputs(int8, {"QuantizeLinear", "DequantizeLinear"}))
    assert f"{qdq} Q/DQ tensor(s) of" in result.output and "-int8 (the int8 run)" in result.output
    assert "SQNR per tensor" in result.output
