"""`parity run --perf --perf-layers` (docs/perf.md, "Per-layer time"): the per-layer table's arithmetic, on models
exported from PyTorch (tests/cli/exported_models.py). No timing threshold is asserted; the tests check that

- every executed OpenVINO layer is counted exactly once (a layer fusing several ONNX nodes included), and only
  executed ones, against OpenVINO's own counters read here on a model built with onnx.helper;
- the layers and the named parts outside them add up to the profiled inferences' mean latency, each share being its
  time over that latency, in the report and in the printed table;
- the layers' sum does not exceed the latency of the inferences it was measured in (each layer runs inside its
  inference; OpenVINO's counters are a running mean since compilation, so a profile that kept the first,
  slow inference in its means breaks this on BERT);
- ONNX Runtime's profiler cost is its profiled runs' median less the unprofiled session's, printed as reported;
- an OpenVINO model with a dynamic dimension is compiled again for the feed's static shapes (as benchmark_app -shape),
  except where the user gave bounds, a shape sweep needs the dynamic model or the feeds differ in shape."""

import json
import re
import statistics

import numpy as np
import pytest

from exported_models import export
from run_util import RUN_TIMEOUT

LAYER_INFERENCES = 4


@pytest.fixture(scope="session")
def bert(tmp_path_factory):
    return export("bert", tmp_path_factory.mktemp("perf_layers") / "bert.onnx", "torchscript")


@pytest.fixture(scope="session")
def profiled_bert(bert, tmp_path_factory, run_parity):
    report = tmp_path_factory.mktemp("perf_layers_report") / "report.json"
    result = run_parity("run", bert, "--onnxrt", "--openvino", "--ov-precision", "f32", "--atol", "1e-3",
                                "--rtol", "1e-3", "--perf", "--iterations", "5", "--perf-layers", "3",
                                "--perf-layer-iterations", str(LAYER_INFERENCES), "--report", report,
                                timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.describe()
    return json.loads(report.read_text())["perf"], result.output


def fused_dense_model(path):
    """x -> MatMul "mm" -> Add "bias" -> Relu "relu" -> Reshape "reshape" -> MatMul "mm2" -> y. OpenVINO fuses mm, bias
    and relu into one FullyConnected layer and runs the Reshape in place (NOT_RUN). Built here rather than exported:
    the layers' names must be the same in Parity's compile and in OpenVINO's own compile of the file, and the
    exported models' converted graphs carry names OpenVINO numbers afresh in each compile."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    initializers = [numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "w1"),
                    numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b1"),
                    numpy_helper.from_array(np.array([4, 8, 4], np.int64), "shape"),
                    numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "w2")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["mm"], name="mm"),
             helper.make_node("Add", ["mm", "b1"], ["biased"], name="bias"),
             helper.make_node("Relu", ["biased"], ["relu"], name="relu"),
             helper.make_node("Reshape", ["relu", "shape"], ["reshaped"], name="reshape"),
             helper.make_node("MatMul", ["reshaped", "w2"], ["y"], name="mm2")]
    graph = helper.make_graph(nodes, "fused_dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8, 8])], initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_every_executed_openvino_layer_counted_once(run_parity, tmp_path):
    import openvino as ov

    model = fused_dense_model(tmp_path / "fused_dense.onnx")
    report = tmp_path / "report.json"
    result = run_parity("run", model, "--openvino", "--ov-precision", "f32", "--perf", "--iterations", "3",
                        "--perf-layers", "5", "--perf-layer-iterations", "3", "--report", report, timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.describe()
    layers = json.loads(report.read_text())["perf"][0]["layers"]["layers"]
    # OpenVINO's own counters for the same model and settings.
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(model)), "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                                                                        "PERF_COUNT": True})
    request = compiled.create_infer_request()
    request.infer({"x": np.ones((4, 16), np.float32)})
    executed = [p.node_name for p in request.profiling_info if p.status == ov.ProfilingInfo.Status.EXECUTED]
    not_run = {p.node_name for p in request.profiling_info if p.status != ov.ProfilingInfo.Status.EXECUTED}
    assert "reshape" in not_run, "OpenVINO ran the Reshape: nothing left out to check"
    assert sorted(layer["name"] for layer in layers) == sorted(executed)
    fused = [layer for layer in layers if len(layer["onnx_nodes"]) > 1]
    assert fused and {"bias", "relu"} <= set(fused[0]["onnx_nodes"]), layers
    assert all(layer["seconds_per_inference"] >= 0 for layer in layers)


@pytest.mark.parametrize("backend", ["onnxrt", "openvino"])
def test_layers_and_outside_parts_add_up_to_the_profiled_latency(profiled_bert, backend):
    entries, _ = profiled_bert
    entry = next(entry for entry in entries if entry["runner"].startswith(backend))
    profile = entry["layers"]
    assert profile["inferences"] == LAYER_INFERENCES
    assert len(profile["profiled_latencies"]) == LAYER_INFERENCES
    profiled = profile["profiled_latency_seconds"]["mean"]
    assert profiled == pytest.approx(sum(profile["profiled_latencies"]) / LAYER_INFERENCES)
    layers = sum(layer["seconds_per_inference"] for layer in profile["layers"])
    assert layers == pytest.approx(profile["sum_seconds_per_inference"])
    outside = profile["outside_times"]
    assert outside and all(part["name"] and part["what"] for part in outside)
    assert layers + sum(part["seconds_per_inference"] for part in outside) == pytest.approx(profiled)
    for row in profile["layers"] + outside:
        assert row["share"] == pytest.approx(row["seconds_per_inference"] / profiled)
    assert profile["sum_over_profiled_latency"] == pytest.approx(layers / profiled)
    assert profile["sum_over_mean_latency"] == pytest.approx(layers / entry["latency_seconds"]["mean"])
    # Each layer runs inside its inference, so the layers' sum cannot exceed the inferences' latency.
    assert 0 < layers <= profiled
    if backend == "onnxrt":
        # Its kernels run inside its own run, which runs inside Parity's clock: each part outside is measured.
        assert layers <= profile["backend_run_seconds_per_inference"] <= profiled
        assert [part["name"] for part in outside] == ["between the kernels, inside ONNX Runtime's run",
                                                      "outside ONNX Runtime's run"]
        nodes = len(profile["layers"])
        assert f"({nodes} nodes: up to {1e-3 * nodes:.4g} ms)" in outside[0]["what"]
        # The profiler's own cost: the profiled runs' median less that of as many runs of the unprofiled session.
        assert len(profile["unprofiled_latencies"]) == LAYER_INFERENCES
        assert profile["profiler_cost_seconds_per_inference"] == pytest.approx(
            statistics.median(profile["profiled_latencies"]) - statistics.median(profile["unprofiled_latencies"]))
        assert profile["profiler_events_per_inference"] >= nodes
    else:
        # The infer request's own time is measured on a model of the same inputs passed through Identity nodes; the
        # rest outside the layers is named with the bound of what OpenVINO's whole-microsecond counters cut off.
        assert [part["name"] for part in outside] == ["the infer request alone", "between the layers"]
        # Measured on other inferences than the profiled ones (a model of Identity nodes), so no bound by the profiled
        # latency holds on a loaded machine: one preempted inference of the few timed makes its mean the larger.
        assert outside[0]["seconds_per_inference"] > 0
        executed = len(profile["layers"])
        assert f"({executed} executed: up to {2e-3 * executed:.4g} ms)" in outside[1]["what"]


def test_printed_table_matches_its_times(profiled_bert):
    entries, output = profiled_bert
    for entry in entries:
        start = re.search(re.escape(entry["runner"]) + r"\s*\| Per-layer time", output)
        assert start, output
        block = output[start.start():]
        header = re.search(r"profiled inferences: mean ([\d.e+-]+) ms, median [\d.e+-]+ ms; unprofiled mean "
                           r"([\d.e+-]+) ms, median [\d.e+-]+ ms: profiling costs ([\d.]+)x \(median over median\)\n"
                           r"\s+layers sum ([\d.e+-]+) ms per inference = ([\d.]+)% of the profiled inferences' mean "
                           r"latency, ([\d.]+)% of the unprofiled mean", block)
        assert header, block[:600]
        profiled, unprofiled, _, layers, of_profiled, of_unprofiled = map(float, header.groups())
        assert of_profiled == pytest.approx(100 * layers / profiled, abs=0.1 + 100 * 5e-4 * layers / profiled)
        assert of_unprofiled == pytest.approx(100 * layers / unprofiled, abs=0.1 + 100 * 5e-4 * layers / unprofiled)
        rows = re.findall(r"\n\s+([\d.-]+)% \|\s+([\d.-]+) \| ", block.split("\n[", 1)[0])
        # 3 slowest layers, the other layers, the parts outside them.
        assert len(rows) == 3 + 1 + len(entry["layers"]["outside_times"])
        for share, milliseconds in rows:
            # Both columns are rounded when printed: the share to 0.1 (half of it either way), the time to 4 decimals
            # of a millisecond (half of 1e-4 ms, as a share of the profiled mean), the profiled mean to 4 digits.
            rounding = 0.05 + 100 * 0.5e-4 / profiled + 1e-3 * abs(float(share))
            assert float(share) == pytest.approx(100 * float(milliseconds) / profiled, abs=rounding + 1e-3)
        assert sum(float(share) for share, _ in rows) == pytest.approx(100, abs=0.05 * len(rows) + 0.5)
        cost = re.search(r"the profiler's own cost: ([\d.e+-]+) ms per inference", block.split("\n[", 1)[0])
        if entry["runner"].startswith("onnxrt"):
            assert float(cost.group(1)) == pytest.approx(1e3 * entry["layers"]["profiler_cost_seconds_per_inference"],
                                                         rel=1e-3, abs=1e-6)
        else:
            assert cost is None


def test_profile_runs_on_a_twin_and_leaves_the_runner_as_it_was(run_parity, tmp_path):
    # The profile's inferences run on a twin compiled with the counters; the runner's own compiled model (here
    # compiled with them too, for --ov-profile-layers) is used again afterwards and counts only its own inferences:
    # the compared one and the 2 timed ones, not the profile's 1 + 4.
    model = fused_dense_model(tmp_path / "fused_dense.onnx")
    result = run_parity("run", model, "--openvino", "--ov-precision", "f32", "--ov-profile-layers", "2", "--perf",
                        "--iterations", "2", "--perf-layers", "2", "--perf-layer-iterations", "4", timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.describe()
    assert "Per-layer time (OpenVINO's performance counters, mean of 4 profiled inference(s))" in result.output
    assert re.search(r"the 2 slowest of 2 executed layers \(OpenVINO's profiling, mean over 3 inference\(s\)",
                     result.output), result.output


@pytest.fixture(scope="session")
def resnet(tmp_path_factory):
    return export("resnet", tmp_path_factory.mktemp("perf_layers_resnet") / "resnet.onnx", "torchscript")


def openvino_entry(run_parity, model, tmp_path, *flags):
    report = tmp_path / "report.json"
    result = run_parity("run", model, "--openvino", "--ov-precision", "f32", "--perf", "--iterations", "2",
                        *flags, "--report", report, timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.describe()
    return json.loads(report.read_text())["perf"][0], result.output


def test_dynamic_openvino_model_is_compiled_for_the_feed_shapes(run_parity, resnet, tmp_path):
    # The exported model's batch dimension is dynamic; performance mode compiles it again for the feed's
    # shapes (as benchmark_app -shape), and says so in the log and the report.
    entry, output = openvino_entry(run_parity, resnet, tmp_path, "--input-shapes", "x:[2,3,32,32]",
                                   "--perf-layers", "2", "--perf-layer-iterations", "2")
    assert "x:[2,3,32,32]" in entry["compiled_for_feed"]
    assert "compiled again for the static shapes of the feed, x:[2,3,32,32]" in output
    assert entry["input_shapes"] == {"x": [2, 3, 32, 32]}


@pytest.mark.parametrize("flags", [
    # Bounds the user gave are kept (dynamic within them).
    ["--input-shapes", "x:[2,3,32,32]", "--ov-min-shapes", "x:[1,3,32,32]", "--ov-max-shapes", "x:[4,3,32,32]"],
    # A shape sweep needs the dynamic model: each set runs on it without compiling again.
    ["--input-shapes", "x:[2,3,32,32]", "--perf-shapes", "x:[3,3,32,32]"],
])
def test_openvino_keeps_its_dimensions_where_the_user_set_them_or_a_sweep_needs_them(run_parity, resnet, tmp_path,
                                                                                     flags):
    entry, output = openvino_entry(run_parity, resnet, tmp_path, *flags)
    assert "compiled_for_feed" not in entry
    assert "compiled again for the static shapes" not in output


def test_feeds_of_several_shapes_keep_the_dynamic_model(run_parity, resnet, tmp_path):
    # Two feeds of different shapes: a static compile for the first would refuse the second.
    script = tmp_path / "loader.py"
    script.write_text("import numpy as np\n\ndef load_data():\n"
                      "    for batch in (1, 2):\n"
                      "        yield {'x': np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)).astype(np.float32)}\n")
    entry, output = openvino_entry(run_parity, resnet, tmp_path, "--data-loader-script", script)
    assert "compiled_for_feed" not in entry
    assert "compiled again for the static shapes" not in output


def test_compiled_model_file_is_profiled_with_its_rows_outside_the_layers(run_parity, resnet, tmp_path):
    # A runner of a compiled model file has no ONNX model to compile settings-alike twins from; the infer request's
    # own row is still measured, on the identity model compiled here.
    compiled = tmp_path / "resnet.ovc"
    result = run_parity("convert", resnet, "--openvino", "--ov-precision", "f32", "-o", compiled, timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.describe()
    report = tmp_path / "report.json"
    result = run_parity("run", compiled, "--openvino", "--perf", "--iterations", "2", "--input-shapes",
                        "x:[1,3,32,32]", "--perf-layers", "2", "--perf-layer-iterations", "2", "--report", report,
                        timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.describe()
    outside = json.loads(report.read_text())["perf"][0]["layers"]["outside_times"]
    assert [part["name"] for part in outside] == ["the infer request alone", "between the layers"]
    assert outside[0]["seconds_per_inference"] > 0
