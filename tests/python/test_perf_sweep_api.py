"""PerfConfig(shapes=...): the Python API's shape sweep (`parity run --perf-shapes`, docs/perf.md) on the
dynamic-shape BERT (batch, sequence) on ONNX Runtime and OpenVINO; no timing is asserted."""
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from exported_models import export  # noqa: E402

from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx  # noqa: E402
from parity.backend.openvino import OpenVINORunner  # noqa: E402
from parity.common import TensorMetadata  # noqa: E402
from parity.comparator import Comparator, DataLoader, PerfConfig, PerfResult  # noqa: E402

ORDER = ["min", "p25", "median", "p75", "p90", "p95", "p99", "max"]


@pytest.fixture(scope="session")
def bert(tmp_path_factory):
    folder = tmp_path_factory.mktemp("perf_sweep_models")
    cache = {}

    def get(exporter):
        if exporter not in cache:
            cache[exporter] = export("bert", folder / f"bert_{exporter}.onnx", exporter)
        return cache[exporter]

    return get


def input_names(model):
    return [value.name for value in onnx.load(str(model)).graph.input]


def shape_set(model, shape):
    return {name: shape for name in input_names(model)}


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_sweep_one_result_per_shape_set(bert, exporter):
    """Each runner is measured again per shape set (OpenVINO without compiling again); each PerfResult.sweep entry
    holds the shapes its feed had, its own latencies and the main measurement's settings."""
    model = bert(exporter)
    shapes = [(1, 4), [2, 16], (3, 9)]
    results = Comparator.run([OnnxrtRunner(SessionFromOnnx(model)), OpenVINORunner(model, precision="f32")],
                             warm_up=1,
                             perf=PerfConfig(iterations=4, shapes=[shape_set(model, shape) for shape in shapes]))
    assert len(results.perf) == 2
    for name, perf in zip(results.keys(), results.perf):
        assert perf.runner_name == name
        # The main measurement keeps the data loader's shape (dynamic dims generated as 1).
        assert perf.input_shapes == shape_set(model, [1, 1])
        assert len(perf.sweep) == len(shapes)
        for point, shape in zip(perf.sweep, shapes):
            assert isinstance(point, PerfResult) and point.runner_name == name
            assert point.input_shapes == shape_set(model, list(shape))
            assert point.iterations == 4 and point.warm_up == 1 and len(point.latencies) == 4
            values = [point.latency[key] for key in ORDER]
            assert values == sorted(values) and point.throughput > 0
            assert point.sweep == [] and point.layers is None
    assert Comparator.compare_accuracy(results)


def test_sweep_keeps_the_data_loaders_other_shapes(bert):
    """A set naming some inputs leaves the others at the data loader's shape (its input_metadata), as
    `--perf-shapes` leaves them at `--input-shapes`."""
    model = bert("torchscript")
    names = input_names(model)
    loader = DataLoader(seed=7, input_metadata=TensorMetadata().add(names[2], None, (1, 6)).add(names[0], None, (1, 6))
                        .add(names[1], None, (1, 6)))
    (perf,) = Comparator.run([OnnxrtRunner(SessionFromOnnx(model))], data_loader=loader,
                             perf=PerfConfig(iterations=2, shapes=[{name: (1, 6) for name in names[:2]},
                                                                   shape_set(model, (2, 3))])).perf
    assert perf.input_shapes == shape_set(model, [1, 6])
    assert [point.input_shapes for point in perf.sweep] == [shape_set(model, [1, 6]), shape_set(model, [2, 3])]


def test_sweep_with_requests(bert):
    model = bert("torchscript")
    (perf,) = Comparator.run([OpenVINORunner(model)],
                             perf=PerfConfig(iterations=6, requests=2, shapes=[shape_set(model, (2, 8))])).perf
    (point,) = perf.sweep
    assert point.requests == 2 and point.iterations == 6
    assert point.concurrency.startswith("2 OpenVINO asynchronous infer request(s)")


def test_sweep_outside_openvinos_compiled_bounds(bert):
    """A swept shape outside the bounds OpenVINO compiled the model for: an error naming the input and the bounds
    (the CLI's [E] line); the shape within them runs."""
    model = bert("torchscript")
    names = input_names(model)
    runner = OpenVINORunner(model, min_shapes={name: (1, 1) for name in names},
                            max_shapes={name: (1, 8) for name in names})
    ok = Comparator.run([runner], perf=PerfConfig(iterations=2, shapes=[shape_set(model, (1, 8))])).perf[0]
    assert ok.sweep[0].input_shapes == shape_set(model, [1, 8])
    with pytest.raises(Exception, match=r"input '\w+' has shape .*outside the bounds the model was compiled for: "
                                        r"min \[1, 1\], max \[1, 8\]"):
        Comparator.run([runner], perf=PerfConfig(iterations=2, shapes=[shape_set(model, (1, 4)),
                                                                        shape_set(model, (1, 16))]))


def test_sweep_static_shape_refused(tmp_path):
    """A static model refuses a swept shape other than its own, naming the input."""
    from test_perf_api import mlp

    model = mlp(tmp_path / "mlp.onnx")
    with pytest.raises(Exception, match=r"x \[shape=\[4, 16\]\] \| Cannot override its shape with \[8, 16\]"):
        Comparator.run([OnnxrtRunner(SessionFromOnnx(model))], perf=PerfConfig(iterations=2, shapes=[{"x": (8, 16)}]))


@pytest.mark.parametrize("shapes, message", [
    ({"x": (1, 4)}, "list of shape sets"),
    ([{}], "non-empty dict"),
    ([[("x", (1, 4))]], "non-empty dict"),
    ([{"x": (1, -1)}], "every dimension must be a fixed size"),
    ([{"x": (1, "seq")}], "every dimension must be a fixed size"),
    ([{"x": 4}], "every dimension must be a fixed size"),
])
def test_sweep_bad_shapes(shapes, message):
    with pytest.raises(ValueError, match=message):
        PerfConfig(shapes=shapes)


def test_sweep_refuses_a_custom_data_loader(tmp_path):
    from test_perf_api import mlp

    model = mlp(tmp_path / "mlp.onnx")
    feeds = [{"x": np.ones((4, 16), np.float32)}]
    with pytest.raises(ValueError, match="generates random data of each shape"):
        Comparator.run([OnnxrtRunner(SessionFromOnnx(model))], data_loader=feeds,
                       perf=PerfConfig(iterations=2, shapes=[{"x": (4, 16)}]))
