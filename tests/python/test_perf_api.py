"""Comparator.run(perf=PerfConfig(...)): the Python API's performance mode (docs/perf.md). The results carry
the outputs of the untimed inference and one PerfResult per runner; no timing is asserted."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
from parity.backend.ref import RefRunner
from parity.comparator import Comparator, PerfConfig, PerfResult

ORDER = ["min", "p25", "median", "p75", "p90", "p95", "p99", "max"]


def mlp(path):
    """x -> MatMul 'mm' -> Add 'bias' -> Relu 'relu' -> y."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm_out"], name="mm"),
        helper.make_node("Add", ["mm_out", "b"], ["add_out"], name="bias"),
        helper.make_node("Relu", ["add_out"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        initializer=[numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "w"),
                     numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def test_perf_results_per_runner(tmp_path):
    model = mlp(tmp_path / "mlp.onnx")
    results = Comparator.run([OnnxrtRunner(SessionFromOnnx(model)), RefRunner(model)], warm_up=1,
                             perf=PerfConfig(iterations=6, layers=2, layer_iterations=2))
    assert len(results) == 2 and len(results.perf) == 2
    for (name, iterations), perf in zip(results.items(), results.perf):
        assert isinstance(perf, PerfResult) and perf.runner_name == name
        assert list(iterations[0].keys()) == ["y"]  # the untimed inference's outputs, for comparisons
        assert perf.iterations == 6 and len(perf.latencies) == 6 and perf.warm_up == 1
        values = [perf.latency[key] for key in ORDER]
        assert values == sorted(values)
        assert perf.throughput > 0
        assert perf.host_memory["rss_peak_bytes"] >= perf.host_memory["rss_before_bytes"]
    onnxrt, ref = results.perf
    # ONNX Runtime fuses MatMul and Add into one node named after them; every layer maps to the model's nodes.
    assert onnxrt.layers and all(layer.onnx_nodes for layer in onnxrt.layers)
    assert {node for layer in onnxrt.layers for node in layer.onnx_nodes} <= {"mm", "bias", "relu"}
    assert onnxrt.layers_info["inferences"] == 2
    # The shares are of the profiled inferences' mean latency, which the layers and the parts outside them make up.
    info = onnxrt.layers_info
    assert len(info["profiled_latencies"]) == 2 and info["profiled_latency_seconds"]["mean"] > 0
    assert [part["name"] for part in info["outside_times"]] == ["between the kernels, inside ONNX Runtime's run",
                                                                "outside ONNX Runtime's run"]
    shares = [layer.share for layer in onnxrt.layers] + [part["share"] for part in info["outside_times"]]
    assert sum(shares) == pytest.approx(1.0)
    assert info["sum_over_profiled_latency"] == pytest.approx(sum(layer.share for layer in onnxrt.layers))
    assert info["profiling_overhead"] > 0
    assert ref.layers is None and "no per-layer times" in ref.layers_unavailable
    assert Comparator.compare_accuracy(results)


def test_perf_duration():
    with pytest.raises(ValueError, match="more than 0 seconds"):
        PerfConfig(duration=0)
    with pytest.raises(ValueError, match="at least 1"):
        PerfConfig(iterations=0)


def test_plain_run_has_no_perf(tmp_path):
    results = Comparator.run([RefRunner(mlp(tmp_path / "mlp.onnx"))])
    assert results.perf is None


def test_perf_requests(tmp_path):
    """PerfConfig(requests=3): ONNX Runtime's session runs three requests at once (each one timed inference); the
    reference interpreter runs one at a time and says so."""
    model = mlp(tmp_path / "mlp.onnx")
    results = Comparator.run([OnnxrtRunner(SessionFromOnnx(model)), RefRunner(model)],
                             perf=PerfConfig(iterations=9, requests=3))
    onnxrt, ref = results.perf
    assert onnxrt.requests == 3 and onnxrt.iterations == 9 and len(onnxrt.latencies) == 9
    assert onnxrt.throughput == pytest.approx(9 / onnxrt.wall_seconds)
    assert "3 concurrent Run call(s)" in onnxrt.concurrency
    assert ref.requests == 1 and ref.concurrency.startswith("one inference at a time")
    assert onnxrt.backend_properties == {} and ref.backend_properties == {}
    unset = Comparator.run([RefRunner(model)], perf=PerfConfig(iterations=2)).perf[0]
    assert unset.requests == 1 and unset.concurrency is None


@pytest.mark.parametrize("requests", [0, -1, 1.5, "two", True])
def test_perf_requests_refused(requests):
    with pytest.raises(ValueError, match="requests must be a number of requests"):
        PerfConfig(requests=requests)


def test_perf_openvino_streams(tmp_path):
    """OpenVINORunner(streams=1) with the throughput hint: the compiled model runs one stream, as its properties
    read back in performance mode say."""
    from parity.backend.openvino import OpenVINORunner

    model = mlp(tmp_path / "mlp.onnx")
    (perf,) = Comparator.run([OpenVINORunner(model, performance_hint="throughput", streams=1)],
                             perf=PerfConfig(iterations=2)).perf
    assert perf.backend_properties["PERFORMANCE_HINT"] == "THROUGHPUT"
    assert perf.backend_properties["NUM_STREAMS"] == "1"
    with pytest.raises(Exception, match="streams must be at least 1"):
        OpenVINORunner(model, streams=0)


def test_perf_result_says_openvino_compiled_for_the_feed(tmp_path):
    # A batch dimension left dynamic: performance mode compiles OpenVINO's model again for the feed's static
    # shapes (docs/perf.md), and PerfResult.compiled_for_feed says so; ONNX Runtime's result has None.
    pytest.importorskip("openvino", reason="needs the openvino package (scripts/setup.sh installs it)")
    from parity.backend.openvino import OpenVINORunner
    from parity.common import TensorMetadata
    from parity.comparator import DataLoader
    model = onnx.load(mlp(tmp_path / "mlp.onnx"))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    model.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    path = tmp_path / "dynamic.onnx"
    onnx.save(model, str(path))
    results = Comparator.run([OpenVINORunner(str(path), precision="f32"), OnnxrtRunner(SessionFromOnnx(str(path)))],
                             data_loader=DataLoader(iterations=1,
                                                    input_metadata=TensorMetadata().add("x", np.float32, [3, 16])),
                             perf=PerfConfig(iterations=3))
    openvino, onnxrt = results.perf
    assert openvino.input_shapes == {"x": [3, 16]}
    assert "x:[3,16]" in openvino.compiled_for_feed
    assert onnxrt.compiled_for_feed is None
