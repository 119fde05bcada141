"""OpenVINO on models exported from PyTorch by both of torch's exporters (tests/cli/exported_models.py):

- `--ov-outputs mark fused` logs one summary line for all its compiles (the model, the precision,
  the tensors marked and compared, how many compiles), never one line per compile, and leaves no
  layer of the plain model changed by the marks.
- `--ov-precision f16` (or bf16) on a CPU that OpenVINO's CPU plugin cannot infer in it: one clear
  error naming the precision it would run instead, never a silent run in another precision; where
  the plugin lists the precision among its optimization capabilities, the run is in it.
- A compiled model file (`convert --openvino -o m.ovc`) keeps which ONNX nodes each layer covers:
  `inspect model m.ovc` shows what `inspect model m.onnx --openvino` shows; a file written without
  that map says they are not known, one whose map was changed is refused.
"""

import json
import re

import openvino
import pytest

from exported_models import export
from run_util import RUN_TIMEOUT, SHARED_MODELS

MODELS = [(kind, exporter) for kind in ("bert", "gpt2", "vit") for exporter in ("torchscript", "dynamo")]
COMPILED_LINE = re.compile(r"openvino-runner\S*: OpenVINO \S+ compiled .* for CPU \| inference precision")
SUMMARY = re.compile(r"\| --ov-outputs mark fused: (\d+) of the (\d+) tensor\(s\) the compiled model's layers write "
                     r"out are compared.* \((\d+) compiles\):")


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exported")
    cache = {}

    def get(kind, exporter):
        if (kind, exporter) not in cache:
            cache[kind, exporter] = export(kind, folder / f"{kind}_{exporter}.onnx", exporter)
        return cache[kind, exporter]

    return get


@pytest.mark.parametrize("kind,exporter", MODELS)
def test_mark_fused_sums_up_its_compiles_in_one_line(run_parity, exported, kind, exporter):
    run = run_parity("run", exported(kind, exporter), "--openvino", "--ov-outputs", "mark", "fused",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    compiled = [line for line in run.output.splitlines() if COMPILED_LINE.search(line)]
    assert len(compiled) == 1, f"one compile line expected, got {len(compiled)}:\n" + "\n".join(compiled)
    summary = SUMMARY.search(compiled[0])
    assert summary, run.describe()
    compared, written, compiles = (int(group) for group in summary.groups())
    assert 0 < compared <= written, run.describe()
    assert compiles >= 2, run.describe()  # the plain model, then the marked one
    assert "marking still changes" not in run.output, run.describe()


CAPABILITY = {"f16": "FP16", "bf16": "BF16"}


@pytest.mark.parametrize("precision", ["f16", "bf16"])
def test_a_precision_the_cpu_lacks_is_refused(run_parity, exported, precision):
    capabilities = openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    run = run_parity("run", exported("bert", "torchscript"), "--openvino", "--ov-precision", precision,
                     timeout=RUN_TIMEOUT)
    if CAPABILITY[precision] in capabilities:
        assert run.returncode == 0, run.describe()
        assert f"inference precision: {precision}" in run.output, run.describe()
        return
    errors = run.lines("[E] ")
    assert run.returncode == 1 and len(errors) == 1, run.describe()
    assert f"cannot run it in {precision} on this CPU" in errors[0], run.describe()
    assert re.search(r"it compiles it for (f32|bf16|f16)", errors[0]), run.describe()
    assert "inference precision" not in run.output, run.describe()


def coverage(report_path):
    report = json.loads(report_path.read_text())
    layers = {layer["name"]: (layer.get("onnx_nodes"), layer.get("dataflow_nodes")) for layer in report["layers"]
              if layer["kind"] != "constant"}
    summary = report["summary"]
    return summary.get("onnx_compute_nodes"), summary.get("covered_nodes"), summary.get("folded_nodes"), layers


def ovc_cases():
    return [("bert", "torchscript"), ("bert", "dynamo"), ("ppocrv4_det", None)]


@pytest.mark.parametrize("kind,exporter", ovc_cases(), ids=lambda value: str(value))
def test_compiled_file_keeps_the_layers_onnx_nodes(run_parity, exported, tmp_path, kind, exporter):
    """`convert --openvino` keeps which ONNX nodes each layer covers in the .ovc header: `inspect model m.ovc`
    shows the same coverage as `inspect model m.onnx --openvino`, layer by layer."""
    model = SHARED_MODELS / "ppocrv4_det.onnx" if exporter is None else exported(kind, exporter)
    ovc, from_onnx, from_file = tmp_path / "m.ovc", tmp_path / "onnx.json", tmp_path / "file.json"
    flags = ("--ov-precision", "f32")
    run = run_parity("convert", model, "--openvino", *flags, "-o", ovc, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    run = run_parity("inspect", "model", model, "--openvino", *flags, "--json", from_onnx, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    run = run_parity("inspect", "model", ovc, "--json", from_file, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    nodes, covered, folded, layers = coverage(from_onnx)
    assert nodes and covered, from_onnx.read_text()[:2000]
    file_nodes, file_covered, file_folded, file_layers = coverage(from_file)
    assert (file_nodes, file_covered, file_folded) == (nodes, covered, folded)
    assert file_layers == layers
    assert f"ONNX compute nodes: {nodes} | covered by executed layers: {len(covered)}" in run.output, run.describe()


def without_onnx_map(data):
    """A file as format version 1 wrote it: no onnx-map lines (and no header-hash line, from version 3)."""
    head, tail = data.split(b"\nend\n", 1)
    lines = [line for line in head.split(b"\n") if not line.startswith((b"onnx-map", b"header-hash"))]
    lines[0] = lines[0].replace(b"COMPILED-MODEL 3", b"COMPILED-MODEL 1")
    return b"\n".join(lines) + b"\nend\n" + tail


def with_a_changed_map(data):
    start = data.index(b"\nonnx-map {") + len(b"\nonnx-map {")
    return data[:start] + b" " + data[start:]


def test_compiled_file_without_or_with_a_damaged_map(run_parity, exported, tmp_path):
    model = exported("bert", "torchscript")
    ovc = tmp_path / "m.ovc"
    run = run_parity("convert", model, "--openvino", "-o", ovc, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    old = tmp_path / "old.ovc"
    old.write_bytes(without_onnx_map(ovc.read_bytes()))
    run = run_parity("inspect", "model", old, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "ONNX nodes: not known for a compiled model file written without its ONNX node map" in run.output
    assert run_parity("run", old, "--openvino", timeout=RUN_TIMEOUT).returncode == 0
    damaged = tmp_path / "damaged.ovc"
    damaged.write_bytes(with_a_changed_map(ovc.read_bytes()))
    run = run_parity("inspect", "model", damaged, timeout=RUN_TIMEOUT)
    errors = run.lines("[E] ")
    assert run.returncode == 1 and len(errors) == 1, run.describe()
    assert str(damaged) in errors[0] and "its ONNX node map hashes to" in errors[0], run.describe()
