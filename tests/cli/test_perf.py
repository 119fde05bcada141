"""`parity run --perf` (docs/perf.md): per runner latency percentiles, throughput, host memory and per-layer
time, in the log and in --report's "perf" entry, on models exported from PyTorch by both exporters
(tests/cli/exported_models.py). No timing is asserted: the tests check the structure, the counts, the
ordering of the percentiles, that the per-layer names are the model's node names, and the bad input."""

import json
import re
import sys

import onnx
import pytest

from exported_models import export
from run_util import RUN_TIMEOUT

PERCENTILES = ["min", "p25", "median", "p75", "p90", "p95", "p99", "max"]


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("perf_models")
    cache = {}

    def get(kind, exporter="torchscript"):
        if (kind, exporter) not in cache:
            cache[kind, exporter] = export(kind, folder / f"{kind}_{exporter}.onnx", exporter)
        return cache[kind, exporter]

    return get


def node_names(path):
    return {node.name for node in onnx.load(str(path)).graph.node}


def perf_report(run_parity, tmp_path, model, *flags):
    report = tmp_path / "report.json"
    model_args = [] if model is None else [model]
    result = run_parity("run", *model_args, *flags, "--report", report, timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.describe()
    assert not result.crash_markers(), result.describe()
    return json.loads(report.read_text()), result


def check_entry(entry, iterations=None):
    latency = entry["latency_seconds"]
    values = [latency[name] for name in PERCENTILES]
    assert values == sorted(values), latency
    assert latency["min"] <= latency["mean"] <= latency["max"]
    assert latency["iqr"] == pytest.approx(latency["p75"] - latency["p25"])
    assert len(entry["latencies"]) == entry["iterations"]
    if iterations is not None:
        assert entry["iterations"] == iterations
    assert min(entry["latencies"]) == latency["min"] and max(entry["latencies"]) == latency["max"]
    assert entry["throughput"] > 0 and entry["wall_seconds"] > 0
    memory = entry["host_memory"]
    assert memory["rss_peak_bytes"] >= memory["rss_before_bytes"] > 0
    assert memory["added_bytes"] == memory["rss_peak_bytes"] - memory["rss_before_bytes"]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
@pytest.mark.parametrize("kind", ["bert", "resnet"])
def test_perf_every_runner_in_order_with_counts(run_parity, tmp_path, exported, kind, exporter):
    model = exported(kind, exporter)
    # f32: OpenVINO's default precision on a CPU with bf16 would fail the comparison this test also checks.
    report, result = perf_report(run_parity, tmp_path, model, "--onnxrt", "--openvino", "--ov-precision", "f32",
                                 "--ref", "--perf", "--iterations", "7", "--warm-up", "2", "--atol", "1e-3",
                                 "--rtol", "1e-3")
    runners = [entry["runner"] for entry in report["perf"]]
    assert [name.split("-runner")[0] for name in runners] == ["onnxrt", "openvino", "ref"]
    for entry in report["perf"]:
        check_entry(entry, iterations=7)
        assert entry["warm_up"] == 2
    # The outputs are still compared (the untimed inference per feed): three runners, two comparisons.
    assert report["passed"] is True
    assert len(re.findall(r"Accuracy Summary \| .* \| Passed: 1/1 iterations", result.output)) == 2
    for runner in runners:
        assert re.search(re.escape(runner) + r".*\| Performance: 7 timed inference\(s\)", result.output)
    assert "latency (ms): min" in result.output and "IQR" in result.output
    assert "Performance summary" in result.output


def test_perf_duration_runs_until_time_is_up(run_parity, tmp_path, exported):
    report, _ = perf_report(run_parity, tmp_path, exported("bert"), "--onnxrt", "--perf", "--duration", "0.3")
    (entry,) = report["perf"]
    check_entry(entry)
    assert entry["iterations"] >= 1 and entry["wall_seconds"] >= 0.3


def test_perf_default_iterations(run_parity, tmp_path, exported):
    report, _ = perf_report(run_parity, tmp_path, exported("bert"), "--onnxrt", "--perf")
    check_entry(report["perf"][0], iterations=100)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_perf_layers_name_real_nodes(run_parity, tmp_path, exported, exporter):
    model = exported("bert", exporter)
    nodes = node_names(model)
    report, result = perf_report(run_parity, tmp_path, model, "--onnxrt", "--openvino", "--ov-precision", "f32",
                                 "--atol", "1e-3", "--rtol", "1e-3", "--perf", "--iterations", "5", "--perf-layers",
                                 "4", "--perf-layer-iterations", "3")
    for entry in report["perf"]:
        layers = entry["layers"]
        assert layers["inferences"] == 3
        assert layers["layers"], entry["runner"]
        assert sum(layer["share"] for layer in layers["layers"]) == pytest.approx(1.0)
        mapped = [layer for layer in layers["layers"] if layer["onnx_nodes"]]
        assert mapped, f"{entry['runner']}: no layer maps to an ONNX node"
        for layer in mapped:
            assert set(layer["onnx_nodes"]) <= nodes, layer
        assert layers["sum_seconds_per_inference"] > 0 and layers["outside"]
        assert re.search(re.escape(entry["runner"]) + r".*\| Per-layer time \(.*the 4 slowest of \d+ layers; layers "
                         r"sum .* of the median latency", result.output)
    onnxrt, openvino = report["perf"]
    assert onnxrt["layers"]["backend_run_seconds_per_inference"] > 0
    # OpenVINO's layers carry their kernel and precision, and some fuse several ONNX nodes.
    assert all(layer["kernel"] and layer["precision"] for layer in openvino["layers"]["layers"])
    assert any(len(layer["onnx_nodes"]) > 1 for layer in openvino["layers"]["layers"])


def test_perf_layers_unoptimized_onnxrt_names_every_node(run_parity, tmp_path, exported):
    """Without graph optimizations ONNX Runtime runs the model's own nodes: every layer is one of them."""
    model = exported("bert")
    nodes = node_names(model)
    report, _ = perf_report(run_parity, tmp_path, model, "--onnxrt", "--ort-opt-level", "disable", "--perf",
                            "--iterations", "3", "--perf-layers", "3")
    layers = report["perf"][0]["layers"]["layers"]
    assert {layer["name"] for layer in layers} <= nodes
    assert all(layer["onnx_nodes"] == [layer["name"]] for layer in layers)


def test_perf_layers_backend_without_profiler_says_so(run_parity, tmp_path, exported):
    report, result = perf_report(run_parity, tmp_path, exported("bert"), "--ref", "--perf", "--iterations", "2",
                                 "--perf-layers", "5")
    entry = report["perf"][0]
    assert "layers" not in entry and "no per-layer times" in entry["layers_unavailable"]
    assert "no per-layer time: this backend reports no per-layer times" in result.output
    assert "Per-layer time" not in result.output


@pytest.mark.parametrize("flags, message", [
    (["--perf", "--duration", "0"], "--duration must be more than 0 seconds"),
    (["--perf", "--duration", "-1"], "--duration must be more than 0 seconds"),
    (["--perf", "--iterations", "0"], "--iterations must be at least 1"),
    (["--duration", "1"], "--duration is a performance mode flag: add --perf"),
    (["--perf-layers", "3"], "--perf-layers is a performance mode flag: add --perf"),
    (["--perf", "--iterations", "3", "--duration", "1"], "not both"),
    (["--perf", "--perf-layers", "-1"], "--perf-layers must be 0 or more"),
    (["--perf", "--onnx-outputs", "mark", "all"], "--perf measures the runners as they run the model"),
    (["--perf", "--use-subprocess"], "--perf measures the runners as they run the model"),
    (["--perf", "--gen-script", "-"], "cannot express --perf"),
    (["--perf", "--dataset", "samples"], "leave out --dataset"),
])
def test_perf_bad_flags(run_parity, exported, flags, message):
    result = run_parity("run", exported("bert"), "--onnxrt", *flags, timeout=RUN_TIMEOUT)
    assert result.returncode != 0, result.describe()
    errors = result.lines("[E]")
    assert len(errors) == 1 and message in errors[0], result.describe()
    assert not result.crash_markers(), result.describe()
    assert "Performance:" not in result.output


def test_perf_shape_outside_compiled_bounds(run_parity, exported):
    model = exported("bert")
    inputs = [i.name for i in onnx.load(str(model)).graph.input]
    bounds = []
    for flag, length in (("--ov-min-shapes", 4), ("--ov-max-shapes", 8)):
        bounds += [flag] + [f"{name}:[1,{length}]" for name in inputs]
    result = run_parity("run", model, "--openvino", *bounds, "--perf", "--iterations", "2", "--input-shapes",
                        *[f"{name}:[1,16]" for name in inputs], timeout=RUN_TIMEOUT)
    assert result.returncode != 0, result.describe()
    errors = result.lines("[E]")
    assert len(errors) == 1 and "outside the bounds the model was compiled for" in errors[0], result.describe()
    assert not result.crash_markers(), result.describe()


def torch_perf(run_parity, tmp_path, *flags):
    from torch_block_models import write_block_script

    script = write_block_script(tmp_path)
    return perf_report(run_parity, tmp_path, None, "--torch", "--torch-model-script", script, "--torch-python",
                       sys.executable, *flags, "--perf", "--iterations", "3")


def test_perf_torch_worker_memory_on_cpu(run_parity, tmp_path):
    """The PyTorch runner infers in a worker process: its peak resident set is reported, and on the CPU there is
    no GPU figure, with the reason."""
    report, result = torch_perf(run_parity, tmp_path)
    (entry,) = report["perf"]
    check_entry(entry, iterations=3)
    worker = entry["worker_memory"]
    assert worker["peak_rss_bytes"] > 0 and worker["gpu_peak_bytes"] is None
    assert "runs on the CPU" in worker["gpu_note"]
    assert "worker process peak" in result.output and "no GPU memory figure" in result.output


def test_perf_torch_cuda_gpu_memory(run_parity, tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA device: torch.cuda.is_available() is false in {sys.executable} (torch "
                    f"{torch.__version__}); the GPU memory of --torch-device cuda is measured on a GPU machine")
    report, result = torch_perf(run_parity, tmp_path, "--torch-device", "cuda")
    worker = report["perf"][0]["worker_memory"]
    assert worker["gpu_peak_bytes"] > 0, result.describe()
    assert "GPU peak allocated" in result.output
