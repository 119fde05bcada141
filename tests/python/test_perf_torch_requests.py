"""The PyTorch worker's concurrent requests (`parity run --perf --torch --requests N`, docs/perf.md):
_torch_requests.py's run_requests (the threads' scheduling) and infer_concurrently (requests of their own) tested on
the CPU, where threads stand in for CUDA streams; on a CUDA device each request also runs on a stream of its own
(the test at the end, skipped with the reason where torch sees no CUDA). No timing is asserted: overlap is proven
with a barrier that only opens when every request is in flight at once."""
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from parity.backend.pyt import _torch_model as model_module
from parity.backend.pyt import _torch_requests as requests_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

BARRIER_TIMEOUT = 60  # seconds; only reached when the requests do not run at once


def recording_run(requests):
    """A run(i) whose first call per thread waits until `requests` threads are inside it at once."""
    barrier = threading.Barrier(requests, timeout=BARRIER_TIMEOUT)
    calls, seen, lock = [], set(), threading.Lock()

    def run(index):
        with lock:
            first = index not in seen
            seen.add(index)
            calls.append(index)
        if first:
            barrier.wait()

    return run, calls


def test_count_requests_run_at_once_until_count_have_started():
    run, calls = recording_run(3)
    latencies, wall = requests_module.run_requests(3, 7, None, run)
    assert len(calls) == 7 and len(latencies) == 7
    assert set(calls) == {0, 1, 2}
    assert all(latency >= 0 for latency in latencies) and wall >= max(latencies)


def test_fewer_inferences_than_requests_start_fewer_threads():
    run, calls = recording_run(2)
    latencies, _ = requests_module.run_requests(5, 2, None, run)
    assert sorted(calls) == [0, 1] and len(latencies) == 2


def test_duration_each_request_runs_at_least_once_and_every_completion_counts():
    run, calls = recording_run(4)
    latencies, _ = requests_module.run_requests(4, 1, 1e-9, run)  # the time is up before any second start
    assert sorted(calls) == [0, 1, 2, 3] and len(latencies) == 4


def test_an_inference_that_raises_stops_every_request_and_is_raised():
    run, calls = recording_run(2)

    def failing(index):
        run(index)
        if index == 1:
            raise RuntimeError("request 1 failed")

    with pytest.raises(RuntimeError, match="request 1 failed"):
        requests_module.run_requests(2, 10**6, None, failing)
    assert calls.count(1) == 1  # thread 1 stopped at its failure


def linear_model():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return model_module.TorchModel(torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()), output_names=["y"])


def test_infer_concurrently_requests_of_their_own_on_the_cpu():
    """Each request holds a copy of its feed (request i: feed i modulo the feeds) and its outputs, computed as one
    inference computes them."""
    model = linear_model()
    feeds = [{"x": np.full((2, 16), value, np.float32)} for value in (0.5, -0.25)]
    result = requests_module.infer_concurrently(model, feeds, requests=3, count=9, seconds=None)
    assert result["requests"] == 3 and len(result["latencies"]) == 9 and result["wall_seconds"] > 0
    pool = [requests_module.InferenceRequest(model, feeds[i % 2]) for i in range(3)]
    feeds[0]["x"][:] = 7  # the requests copied their feeds
    for index, request in enumerate(pool):
        outputs = request.run()
        assert list(outputs) == ["y"]
        expected = model.infer({"x": np.full((2, 16), (0.5, -0.25)[index % 2], np.float32)})["y"]
        np.testing.assert_array_equal(outputs["y"], expected)


def test_cuda_requests_on_streams_of_their_own():
    """On CUDA: each request has its own stream, its feed pinned, and its outputs in pinned buffers of its own,
    equal to a single inference's; concurrent requests complete `count` inferences."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA device: torch.cuda.is_available() is false in {sys.executable} (torch "
                    f"{torch.__version__}); the CUDA streams of --requests are tested on a GPU machine")
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    model = model_module.TorchModel(module, model_module.TorchRunOptions(device="cuda"), output_names=["y"])
    feeds = [{"x": np.random.default_rng(i).standard_normal((4, 256)).astype(np.float32)} for i in range(2)]
    pool = [requests_module.InferenceRequest(model, feeds[i % 2]) for i in range(2)]
    assert pool[0].stream != pool[1].stream
    assert all(request.feed["x"].is_pinned() for request in pool)
    for index, request in enumerate(pool):
        outputs = request.run()
        assert request.outputs["y"].is_pinned()
        np.testing.assert_allclose(outputs["y"], model.infer(feeds[index % 2])["y"], rtol=1e-5, atol=1e-5)
    assert pool[0].outputs["y"].data_ptr() != pool[1].outputs["y"].data_ptr()
    result = requests_module.infer_concurrently(model, feeds, requests=4, count=40, seconds=None)
    assert result["requests"] == 4 and len(result["latencies"]) == 40
