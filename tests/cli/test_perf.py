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
        # Shares are of the profiled inferences' latency: the layers and the parts outside them make it up.
        assert sum(row["share"] for row in layers["layers"] + layers["outside_times"]) == pytest.approx(1.0)
        mapped = [layer for layer in layers["layers"] if layer["onnx_nodes"]]
        assert mapped, f"{entry['runner']}: no layer maps to an ONNX node"
        for layer in mapped:
            assert set(layer["onnx_nodes"]) <= nodes, layer
        assert layers["sum_seconds_per_inference"] > 0 and layers["outside"]
        assert re.search(re.escape(entry["runner"]) + r".*\| Per-layer time \(.*the 4 slowest of \d+ layers; outside "
                         r"the layers: .*\n.*profiled inferences: mean .*unprofiled mean .*\n\s+layers sum .* of the "
                         r"profiled inferences' mean latency, .* of the unprofiled mean latency", result.output)
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


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_perf_requests_run_concurrently(run_parity, tmp_path, exported, exporter):
    """--requests 3: ONNX Runtime's threads and OpenVINO's asynchronous infer requests, three requests in flight.
    Each of the 12 timed inferences is one completed request; the throughput is all of them over the wall time."""
    model = exported("bert", exporter)
    report, result = perf_report(run_parity, tmp_path, model, "--onnxrt", "--openvino", "--ov-precision", "f32",
                                 "--atol", "1e-3", "--rtol", "1e-3", "--perf", "--iterations", "12", "--requests", "3")
    onnxrt, openvino = report["perf"]
    for entry in report["perf"]:
        check_entry(entry, iterations=12)
        assert entry["requests"] == 3, entry
        assert entry["throughput"] == pytest.approx(12 / entry["wall_seconds"])
        assert re.search(re.escape(entry["runner"]) + r".*\| Performance: 12 timed inference\(s\)", result.output)
    assert onnxrt["concurrency"].startswith("3 concurrent Run call(s) on one ONNX Runtime session")
    assert openvino["concurrency"].startswith("3 OpenVINO asynchronous infer request(s)")
    assert "concurrency: 3 OpenVINO asynchronous infer request(s)" in result.output
    assert report["passed"] is True


@pytest.fixture(scope="session")
def slow_matmul_model(tmp_path_factory):
    """Four 256x512 @ 512x512 MatMuls (about 270 MFLOP, milliseconds per inference). Built with onnx.helper
    because the tiny exported models infer in tens of microseconds, less than a thread takes to start, so whether
    their requests overlap would depend on the scheduler rather than on Parity."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, initializers, previous = [], [], "x"
    for i in range(4):
        initializers.append(numpy_helper.from_array((rng.standard_normal((512, 512)) / 23).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [previous, f"w{i}"], [f"m{i}"], name=f"matmul{i}"))
        previous = f"m{i}"
    graph = helper.make_graph(nodes, "slow_matmul", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 512])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [256, 512])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = tmp_path_factory.mktemp("perf_slow") / "slow_matmul.onnx"
    onnx.save(model, str(path))
    return path


def test_perf_requests_overlap(run_parity, tmp_path, slow_matmul_model):
    """With --requests 3 the requests are in flight together: their latencies add up to more than the wall time,
    which inferences run one after another never do; without --requests they run one at a time and add up to at
    most the wall time."""
    report, _ = perf_report(run_parity, tmp_path, slow_matmul_model, "--onnxrt", "--openvino", "--ov-precision",
                            "f32", "--atol", "1e-2", "--rtol", "1e-2", "--perf", "--iterations", "6", "--requests", "3")
    for entry in report["perf"]:
        assert entry["requests"] == 3 and entry["iterations"] == 6
        assert sum(entry["latencies"]) > entry["wall_seconds"], entry
    report, _ = perf_report(run_parity, tmp_path, slow_matmul_model, "--onnxrt", "--openvino", "--ov-precision",
                            "f32", "--atol", "1e-2", "--rtol", "1e-2", "--perf", "--iterations", "6")
    for entry in report["perf"]:
        assert entry["requests"] == 1 and "concurrency" not in entry
        assert sum(entry["latencies"]) <= entry["wall_seconds"], entry


def test_perf_requests_auto_is_openvinos_optimal_number(run_parity, tmp_path, exported):
    """--requests auto runs as many infer requests as the compiled model says is optimal (read back from it)."""
    report, _ = perf_report(run_parity, tmp_path, exported("bert"), "--openvino", "--ov-perf-hint", "throughput",
                            "--perf", "--iterations", "20", "--requests", "auto")
    (entry,) = report["perf"]
    optimal = int(entry["backend_properties"]["OPTIMAL_NUMBER_OF_INFER_REQUESTS"])
    assert entry["requests"] == min(optimal, 20)
    assert "the compiled model's optimal number" in entry["concurrency"]
    check_entry(entry, iterations=20)


def test_perf_requests_with_duration_completes_every_request(run_parity, tmp_path, exported):
    report, _ = perf_report(run_parity, tmp_path, exported("bert"), "--onnxrt", "--openvino", "--perf",
                            "--duration", "0.3", "--requests", "2", "--atol", "1e-2", "--rtol", "1e-2")
    for entry in report["perf"]:
        check_entry(entry)
        assert entry["requests"] == 2 and entry["iterations"] >= 2 and entry["wall_seconds"] >= 0.3


def test_perf_requests_backend_without_concurrency_says_so(run_parity, tmp_path, exported):
    report, result = perf_report(run_parity, tmp_path, exported("bert"), "--ref", "--perf", "--iterations", "3",
                                 "--requests", "2")
    (entry,) = report["perf"]
    check_entry(entry, iterations=3)
    assert entry["requests"] == 1
    assert entry["concurrency"] == "one inference at a time: this backend runs one inference at a time"
    assert any("--requests: one inference at a time" in line for line in result.lines("[W]")), result.describe()


def test_perf_requests_beyond_the_hardware_threads_warns(run_parity, tmp_path, exported):
    import os

    requests = (os.cpu_count() or 1) + 1
    report, result = perf_report(run_parity, tmp_path, exported("bert"), "--onnxrt", "--perf", "--iterations",
                                 str(requests), "--requests", str(requests))
    assert report["perf"][0]["requests"] == requests
    assert any(f"{requests} requests in flight on a machine with" in line for line in result.lines("[W]")), \
        result.describe()


@pytest.mark.parametrize("hint, threads", [("latency", "1"), ("throughput", "2")])
def test_perf_openvino_hint_read_back(run_parity, tmp_path, exported, hint, threads):
    """--ov-perf-hint, --ov-precision and --ov-threads are compiled in: the compiled model's own properties, read
    back from it, say so in the log and the report."""
    report, result = perf_report(run_parity, tmp_path, exported("resnet"), "--openvino", "--ov-perf-hint", hint,
                                 "--ov-precision", "f32", "--ov-threads", threads, "--perf", "--iterations", "2")
    properties = report["perf"][0]["backend_properties"]
    assert properties["PERFORMANCE_HINT"] == hint.upper()
    assert properties["INFERENCE_PRECISION_HINT"] == "f32"
    assert properties["INFERENCE_NUM_THREADS"] == threads
    assert int(properties["NUM_STREAMS"]) >= 1 and int(properties["OPTIMAL_NUMBER_OF_INFER_REQUESTS"]) >= 1
    if hint == "latency":
        assert properties["NUM_STREAMS"] == "1"
    assert f"backend properties: PERFORMANCE_HINT {hint.upper()} | NUM_STREAMS" in result.output


def input_names(path):
    return [i.name for i in onnx.load(str(path)).graph.input]


def shape_sets(model, shapes):
    """--perf-shapes entries: every input of `model` at each shape in turn (a repeated name starts the next set)."""
    return [f"{name}:[{','.join(map(str, shape))}]" for shape in shapes for name in input_names(model)]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_perf_shape_sweep_one_row_per_shape(run_parity, tmp_path, exported, exporter):
    """--perf-shapes on the dynamic-shape BERT (batch, sequence): after the main measurement each runner is measured
    on each shape set, OpenVINO and ONNX Runtime without recompiling; one sweep entry and one table row per set,
    with the shapes the feeds actually had."""
    model = exported("bert", exporter)
    shapes = [[1, 4], [2, 16], [3, 9]]
    report, result = perf_report(run_parity, tmp_path, model, "--onnxrt", "--openvino", "--ov-precision", "f32",
                                 "--atol", "1e-3", "--rtol", "1e-3", "--perf", "--iterations", "4", "--warm-up", "1",
                                 "--perf-shapes", *shape_sets(model, shapes))
    for entry in report["perf"]:
        check_entry(entry, iterations=4)
        # The main measurement keeps the data loader's shape (dynamic dims generated as 1).
        assert entry["input_shapes"] == {name: [1, 1] for name in input_names(model)}
        sweep = entry["sweep"]
        assert len(sweep) == len(shapes)
        for point, shape in zip(sweep, shapes):
            assert point["input_shapes"] == {name: shape for name in input_names(model)}
            assert point["iterations"] == 4 and point["warm_up"] == 1 and len(point["latencies"]) == 4
            values = [point["latency_seconds"][name] for name in PERCENTILES]
            assert values == sorted(values) and point["throughput"] > 0
            row = " ".join(f"{name}:[{','.join(map(str, shape))}]" for name in input_names(model))
            assert re.search(re.escape(row) + r" +\| +4 \|", result.output), row
        assert re.search(re.escape(entry["runner"]) + r" +\| Shape sweep: 3 shape\(s\)", result.output)
    # OpenVINO compiled the model once.
    assert result.output.count("compiled " + str(model)) == 1


def test_perf_shape_sweep_with_requests(run_parity, tmp_path, exported):
    model = exported("bert")
    report, _ = perf_report(run_parity, tmp_path, model, "--openvino", "--perf", "--iterations", "6", "--requests",
                            "2", "--perf-shapes", *shape_sets(model, [[2, 8]]))
    (point,) = report["perf"][0]["sweep"]
    assert point["requests"] == 2 and point["iterations"] == 6
    assert point["concurrency"].startswith("2 OpenVINO asynchronous infer request(s)")


def test_perf_shape_sweep_outside_compiled_bounds(run_parity, exported):
    """A swept shape outside the bounds OpenVINO compiled the model for: one [E] line naming the bounds."""
    model = exported("bert")
    bounds = []
    for flag, length in (("--ov-min-shapes", 1), ("--ov-max-shapes", 8)):
        bounds += [flag] + [f"{name}:[1,{length}]" for name in input_names(model)]
    result = run_parity("run", model, "--openvino", *bounds, "--perf", "--iterations", "2", "--perf-shapes",
                        *shape_sets(model, [[1, 4], [1, 16]]), timeout=RUN_TIMEOUT)
    assert result.returncode != 0, result.describe()
    errors = result.lines("[E]")
    assert len(errors) == 1 and "outside the bounds the model was compiled for" in errors[0], result.describe()
    assert not result.crash_markers(), result.describe()


@pytest.mark.parametrize("hint, streams", [("throughput", 1), ("latency", 2)])
def test_perf_openvino_streams_read_back(run_parity, tmp_path, exported, hint, streams):
    """--ov-streams overrides the number of streams the hint would pick (throughput: one per core pair or more,
    latency: one), as the compiled model's NUM_STREAMS says."""
    import os

    if streams > (os.cpu_count() or 1):
        pytest.skip(f"OpenVINO caps its streams at the {os.cpu_count()} hardware thread(s) of this machine")
    report, _ = perf_report(run_parity, tmp_path, exported("bert"), "--openvino", "--ov-perf-hint", hint,
                            "--ov-streams", str(streams), "--perf", "--iterations", "4", "--requests", "auto")
    (entry,) = report["perf"]
    properties = entry["backend_properties"]
    assert properties["PERFORMANCE_HINT"] == hint.upper() and properties["NUM_STREAMS"] == str(streams)
    assert entry["requests"] == int(properties["OPTIMAL_NUMBER_OF_INFER_REQUESTS"])


@pytest.mark.parametrize("flags, message", [
    (["--perf", "--duration", "0"], "--duration must be more than 0 seconds"),
    (["--perf", "--duration", "-1"], "--duration must be more than 0 seconds"),
    (["--perf", "--iterations", "0"], "--iterations must be at least 1"),
    (["--duration", "1"], "--duration is a performance mode flag: add --perf"),
    (["--perf-layers", "3"], "--perf-layers is a performance mode flag: add --perf"),
    (["--perf", "--iterations", "3", "--duration", "1"], "not both"),
    (["--perf", "--perf-layers", "-1"], "--perf-layers must be 0 or more"),
    (["--perf", "--requests", "0"], "--requests must be a number of requests (at least 1) or 'auto', got '0'"),
    (["--perf", "--requests", "many"], "--requests must be a number of requests (at least 1) or 'auto'"),
    (["--requests", "2"], "--requests is a performance mode flag: add --perf"),
    (["--perf-shapes", "input_ids:[1,4]"], "--perf-shapes is a performance mode flag: add --perf"),
    (["--perf", "--perf-shapes", "input_ids:[1,x]"], "--perf-shapes input_ids"),
    (["--perf", "--perf-shapes", "input_ids:[1,4]", "--load-inputs", "in.json"], "leave out --load-inputs"),
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


@pytest.mark.parametrize("flags", [["--iterations", "6"], ["--duration", "0.3"]])
def test_perf_torch_requests_on_cpu(run_parity, tmp_path, flags):
    """--torch --requests 2 on the CPU: two requests in flight in the worker, each a thread of its own sharing
    torch's intra-op threads; every completed request is one timed inference (6, or as many as the duration
    allowed), and the throughput is over the wall time."""
    from torch_block_models import write_block_script

    script = write_block_script(tmp_path)
    report, result = perf_report(run_parity, tmp_path, None, "--torch", "--torch-model-script", script,
                                 "--torch-python", sys.executable, "--perf", "--requests", "2", *flags)
    (entry,) = report["perf"]
    check_entry(entry, iterations=6 if "--iterations" in flags else None)
    assert entry["requests"] == 2
    assert re.fullmatch(r"2 concurrent request\(s\) on the CPU, each a thread of its own, sharing torch's \d+ "
                        r"intra-op thread\(s\)", entry["concurrency"]), entry["concurrency"]
    assert entry["throughput"] == pytest.approx(entry["iterations"] / entry["wall_seconds"])
    assert "concurrency: 2 concurrent request(s) on the CPU" in result.output, result.describe()


@pytest.mark.parametrize("flags, requests", [(["--iterations", "12"], 3), (["--duration", "0.5"], 3)])
def test_perf_torch_cuda_requests_on_streams(run_parity, tmp_path, flags, requests):
    """--torch-device cuda --requests 3: three requests in flight in the worker, each a thread with a CUDA stream
    of its own; every completed request is one timed inference (12, or as many as the duration allowed)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA device: torch.cuda.is_available() is false in {sys.executable} (torch "
                    f"{torch.__version__}); --requests on CUDA streams is measured on a GPU machine")
    from torch_block_models import write_block_script

    script = write_block_script(tmp_path)
    report, result = perf_report(run_parity, tmp_path, None, "--torch", "--torch-model-script", script,
                                 "--torch-python", sys.executable, "--torch-device", "cuda", "--perf",
                                 "--requests", str(requests), *flags)
    (entry,) = report["perf"]
    check_entry(entry, iterations=12 if "--iterations" in flags else None)
    assert entry["requests"] == requests
    # The worker names the device it resolved 'cuda' to (cuda:0 on a one-GPU machine).
    assert re.match(rf"{requests} concurrent request\(s\) on cuda:\d+, each a thread with a CUDA stream of its own",
                    entry["concurrency"]), entry["concurrency"]
    assert entry["throughput"] == pytest.approx(entry["iterations"] / entry["wall_seconds"])
