"""`parity inspect model model.onnx --openvino` and `parity inspect model model.ovc`: the layers
OpenVINO executes, in order, with kernel, precision, shapes and the ONNX nodes fused into each.

- The invariant, on every example and shared model OpenVINO converts: each ONNX compute node
  (every main-graph node but Constant) is in exactly one executed layer's ONNX nodes (named by
  OpenVINO or attributed by dataflow), or is listed as folded into constants or removed, never both;
  the summary's lists agree with the layers, checked here from the JSON against the ONNX graph.
- Known fusions are shown: small_cnn's Conv+BatchNormalization+Relu run as one convolution.
- A compiled model file shows the same layers (kernels, precisions, shapes) as the ONNX model
  compiled the same way.
- `run --ov-profile-layers N`: the N slowest layers, by share of the total, each a layer of the
  runtime model with its precision; outputs unchanged by profiling.
"""

import json
import re

import onnx
import pytest

from run_util import SHARED_MODELS, RUN_TIMEOUT, single_error_line

MODELS = [
    ("small_cnn", "examples", "small_cnn.onnx"),
    ("small_if", "examples", "small_if.onnx"),
    ("small_transformer", "examples", "small_transformer.onnx"),
    ("blazeface", "shared", "blazeface_front_128.onnx"),
    ("magika", "shared", "magika_standard_v3_3.onnx"),
    ("ppocrv4_det", "shared", "ppocrv4_det.onnx"),
    ("silero_vad_op18_ifless", "shared", "silero_vad_op18_ifless.onnx"),
]
# silero_vad_v5.onnx is left out: OpenVINO's ONNX frontend cannot convert it (test_unconvertible_model).


def model_path(examples_dir, where, filename):
    return (examples_dir if where == "examples" else SHARED_MODELS) / filename


def compute_nodes(path):
    graph = onnx.load(str(path), load_external_data=False).graph
    nodes = []
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            continue
        nodes.append(node.name or node.output[0])
    return nodes


@pytest.mark.parametrize("precision", ["f32", "bf16"])
@pytest.mark.parametrize("case", MODELS, ids=[c[0] for c in MODELS])
def test_every_compute_node_is_in_one_layer_or_folded_or_removed(run_parity, examples_dir, tmp_path, case, precision):
    path = model_path(examples_dir, case[1], case[2])
    report_path = tmp_path / "layers.json"
    run = run_parity("inspect", "model", path, "--openvino", "--ov-precision", precision, "--json", report_path,
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    report = json.loads(report_path.read_text())
    assert report["inference_precision"] == precision
    nodes = compute_nodes(path)
    executed = [layer for layer in report["layers"] if layer["kind"] in ("compute", "reorder")]
    placed = {}
    for layer in executed:
        for node in layer["onnx_nodes"] + layer["dataflow_nodes"]:
            assert node in nodes, f"layer {layer['name']} names {node}, which is no compute node of the model"
            assert node not in placed, f"{node} is in layers {placed[node]} and {layer['name']}"
            placed[node] = layer["name"]
    summary = report["summary"]
    folded, removed = summary["folded_nodes"], summary["removed_nodes"]
    assert summary["onnx_compute_nodes"] == len(nodes)
    assert summary["covered_nodes"] == [node for node in nodes if node in placed]
    for node in nodes:
        listed = (node in placed) + (node in folded) + (node in removed)
        assert listed == 1, f"{node}: in a layer: {node in placed}, folded: {node in folded}, removed: {node in removed}"
    # Folded nodes are named by constant layers only.
    constant_names = {n for layer in report["layers"] if layer["kind"] == "constant" for n in layer["onnx_nodes"]}
    assert set(folded) <= constant_names
    assert summary["executed_layers"] == len(executed)
    assert sum(summary["layers_per_precision"].values()) == len(executed)
    assert sum(summary["layers_per_kernel"].values()) == len(executed)
    # The text form carries the same summary.
    assert f"Executed layers: {len(executed)} (" in run.output
    assert f"ONNX compute nodes: {len(nodes)} | covered by executed layers: {len(placed)}" in run.output


def test_fused_convolution_is_shown_with_its_onnx_nodes(run_parity, examples_dir, tmp_path):
    report_path = tmp_path / "layers.json"
    run = run_parity("inspect", "model", examples_dir / "small_cnn.onnx", "--openvino", "--ov-precision", "f32",
                     "--json", report_path, "--show", "layers")
    assert run.returncode == 0, run.describe()
    layers = json.loads(report_path.read_text())["layers"]
    conv = [layer for layer in layers if "bn1" in layer["onnx_nodes"]]
    assert len(conv) == 1 and conv[0]["layer_type"] == "Convolution", conv
    assert set(conv[0]["onnx_nodes"] + conv[0]["dataflow_nodes"]) == {"conv1", "bn1", "relu1"}
    assert conv[0]["kernel"].endswith("_f32") and conv[0]["runtime_precision"] == "f32"
    assert any(layer["kind"] == "reorder" and layer["layer_type"] == "Reorder" for layer in layers)
    assert "(reorder) | kernel: reorder_f32" in run.output
    assert "ONNX nodes: bn1, relu1" in run.output and "ONNX nodes (by dataflow): conv1" in run.output


def test_show_layers_and_attrs_as_for_onnx(run_parity, examples_dir):
    """Polygraphy's `inspect model`: the summary alone by default, the layers with --show layers, and each layer's
    attributes (OpenVINO's originalLayersNames) with --show layers attrs."""
    path = examples_dir / "small_cnn.onnx"
    plain = run_parity("inspect", "model", path, "--openvino", "--ov-precision", "f32")
    assert plain.returncode == 0, plain.describe()
    assert "---- Summary ----" in plain.output and "Layer 0 " not in plain.output, plain.describe()
    layers = run_parity("inspect", "model", path, "--openvino", "--ov-precision", "f32", "--show", "layers")
    assert "Layer 0 " in layers.output and "ONNX nodes: bn1, relu1" in layers.output, layers.describe()
    assert "originalLayersNames" not in layers.output
    attrs = run_parity("inspect", "model", path, "--openvino", "--ov-precision", "f32", "--show", "layers", "attrs")
    assert re.search(r"originalLayersNames: Multiply_\d+, bn1, relu1", attrs.output), attrs.describe()


def test_bf16_layers_say_so(run_parity, examples_dir, tmp_path):
    report_path = tmp_path / "layers.json"
    run = run_parity("inspect", "model", examples_dir / "small_cnn.onnx", "--openvino", "--ov-precision", "bf16",
                     "--json", report_path)
    assert run.returncode == 0, run.describe()
    summary = json.loads(report_path.read_text())["summary"]
    assert summary["layers_per_precision"].get("bf16", 0) > 0
    assert any(kernel.endswith("bf16") for kernel in summary["layers_per_kernel"])


def test_compiled_file_shows_the_same_layers(run_parity, examples_dir, tmp_path):
    onnx_path = examples_dir / "small_transformer.onnx"
    ovc = tmp_path / "model.ovc"
    assert run_parity("convert", onnx_path, "--openvino", "--ov-precision", "bf16", "-o", ovc).returncode == 0
    from_onnx, from_file = tmp_path / "onnx.json", tmp_path / "file.json"
    run = run_parity("inspect", "model", onnx_path, "--openvino", "--ov-precision", "bf16", "--json", from_onnx)
    assert run.returncode == 0, run.describe()
    run = run_parity("inspect", "model", ovc, "--json", from_file)
    assert run.returncode == 0, run.describe()
    # The file keeps the layers' ONNX nodes as `convert` mapped them (tests/cli/test_openvino_exported_models.py).
    assert "ONNX nodes: not known" not in run.output, run.describe()
    expected, got = json.loads(from_onnx.read_text()), json.loads(from_file.read_text())
    # originalLayersNames may differ: the imported model is compiled again from OpenVINO's exported
    # form, where a fused snippet Subgraph keeps only its own name.
    keys = ("name", "kind", "layer_type", "kernel", "runtime_precision", "output_precisions", "output_shapes")
    assert [{k: layer[k] for k in keys} for layer in got["layers"]] == \
        [{k: layer[k] for k in keys} for layer in expected["layers"]]
    assert got["summary"]["layers_per_kernel"] == expected["summary"]["layers_per_kernel"]


def test_bad_compiled_file_one_clear_error(run_parity, tmp_path):
    bad = tmp_path / "bad.ovc"
    bad.write_bytes(b"not a compiled model\n")
    run = run_parity("inspect", "model", bad)
    assert run.returncode == 1, run.describe()
    assert f"{bad}: not a compiled OpenVINO model file" in single_error_line(run)


def test_unconvertible_model_one_clear_error(run_parity):
    run = run_parity("inspect", "model", SHARED_MODELS / "silero_vad_v5.onnx", "--openvino", timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    assert "silero_vad_v5.onnx: OpenVINO:" in single_error_line(run)


@pytest.mark.parametrize("flags, message", [
    (["--show", "weights"], "--show weights describes the ONNX graph's weights"),
    (["--show", "attrs"], "--show attrs needs --show layers"),
    (["--ov-precision", "f32"], "--ov-precision cannot apply to it"),
])
def test_options_for_a_compiled_file_are_checked(run_parity, examples_dir, tmp_path, flags, message):
    ovc = tmp_path / "model.ovc"
    assert run_parity("convert", examples_dir / "small_cnn.onnx", "--openvino", "-o", ovc).returncode == 0
    run = run_parity("inspect", "model", ovc, *flags)
    assert run.returncode == 1, run.describe()
    assert message in single_error_line(run)


def test_json_needs_openvino(run_parity, examples_dir, tmp_path):
    run = run_parity("inspect", "model", examples_dir / "small_cnn.onnx", "--json", tmp_path / "x.json")
    assert run.returncode == 1, run.describe()
    assert "--json describes what OpenVINO executes: give --openvino" in single_error_line(run)


# ---- per-layer timings (run --ov-profile-layers N) ----

PROFILE_LINE = re.compile(r"^\s+(\d+\.\d)% \|\s+(\d+\.\d+) ms \| (.+) \[(\w+)\] \| kernel: (\S+) \| precision: (\S+)$")


def test_profile_layers_lists_the_slowest_layers(run_parity, examples_dir, tmp_path):
    model = examples_dir / "small_transformer.onnx"
    report_path = tmp_path / "layers.json"
    assert run_parity("inspect", "model", model, "--openvino", "--ov-precision", "bf16", "--json",
                      report_path).returncode == 0
    layers = {layer["name"]: layer for layer in json.loads(report_path.read_text())["layers"]}
    run = run_parity("run", model, "--openvino", "--ov-precision", "bf16", "--ov-profile-layers", "4", "--iterations",
                     "2", "--save-outputs", tmp_path / "profiled.json", "--save-inputs", tmp_path / "inputs.json")
    assert run.returncode == 0, run.describe()
    lines = run.output.splitlines()
    [start] = [i for i, line in enumerate(lines) if "the 4 slowest of" in line]
    assert "mean over 2 inference(s)" in lines[start]
    rows = [PROFILE_LINE.match(line) for line in lines[start + 1:start + 5]]
    assert all(rows), "\n".join(lines[start:start + 5])
    shares = [float(row.group(1)) for row in rows]
    assert shares == sorted(shares, reverse=True) and sum(shares) <= 100.05
    for row in rows:
        layer = layers[row.group(3)]  # a layer of the runtime model, with its kernel and precision
        assert row.group(6) == layer["runtime_precision"]
    # Profiling does not change what runs: outputs bit-identical to an unprofiled run.
    plain = run_parity("run", model, "--openvino", "--ov-precision", "bf16", "--load-inputs", tmp_path / "inputs.json",
                       "--save-outputs", tmp_path / "plain.json")
    assert plain.returncode == 0, plain.describe()
    from polygraphy.json import load_json
    a, b = load_json(str(tmp_path / "profiled.json")), load_json(str(tmp_path / "plain.json"))
    [(_, first)], [(_, second)] = list(a.items()), list(b.items())
    for name, value in first[0].items():
        assert value.tobytes() == second[0][name].tobytes(), name


def test_profile_layers_needs_the_runner(run_parity, examples_dir):
    run = run_parity("run", examples_dir / "small_cnn.onnx", "--ref", "--ov-profile-layers", "3")
    assert run.returncode == 1, run.describe()
    assert "the --ov-* options need an OpenVINO runner (--openvino)" in single_error_line(run)
