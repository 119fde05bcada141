"""Performance mode's concurrent requests on a PyTorch model (`parity run --torch --perf --requests N`):
run_requests (the threads' scheduling and clock), InferenceRequest (a request's own feed, buffers and CUDA
stream) and infer_concurrently (requests of a TorchModel run at once).

Like _torch_model.py, pure Python over torch and the standard library. The `parity` binary's Python worker
runs this file's text after _torch_model.py's (its infer_concurrently command calls infer_concurrently);
the requests call only the TorchModel they are given.
"""
import threading
import time


def run_requests(requests, count, seconds, run):
    """Performance mode's concurrent requests (`parity run --perf --requests N`): `requests` threads, thread i
    calling run(i) (one inference, returning once it has completed) again as soon as it returns, until `count`
    inferences have started, or, with `seconds` (not None), until that many seconds have passed (each thread runs
    at least one; an inference in flight then completes and counts). The threads are started before the clock and
    released together. Returns (each inference's seconds from its start to its completion, in completion order;
    the wall seconds from the common start to the last completion). The first exception a thread raises stops
    the others at their next start and is raised here once every thread has stopped."""
    if seconds is None:
        requests = min(requests, count)
    requests = max(requests, 1)
    lock = threading.Lock()
    go = threading.Event()
    state = {"started": 0, "error": None, "deadline": None}
    latencies = []

    def claim(first):
        with lock:
            if state["error"] is not None:
                return False
            if seconds is not None:
                return first or time.perf_counter() < state["deadline"]
            if state["started"] >= count:
                return False
            state["started"] += 1
            return True

    def loop(index):
        go.wait()
        first = True
        while claim(first):
            first = False
            start = time.perf_counter()
            try:
                run(index)
            except BaseException as error:  # noqa: B036 (raised again in the calling thread)
                with lock:
                    if state["error"] is None:
                        state["error"] = error
                return
            elapsed = time.perf_counter() - start
            with lock:
                latencies.append(elapsed)

    threads = [threading.Thread(target=loop, args=(index,), name=f"parity-request-{index}", daemon=True)
               for index in range(requests)]
    for thread in threads:
        thread.start()
    start = time.perf_counter()
    if seconds is not None:
        state["deadline"] = start + seconds
    go.set()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    if state["error"] is not None:
        raise state["error"]
    return latencies, wall


class InferenceRequest:
    """One of performance mode's concurrent requests on a TorchModel: a copy of its feed of its own (in pinned
    host memory on CUDA) and, on CUDA, a torch.cuda.Stream of its own that its inferences run on (the feed's
    copy to the device, forward(), the outputs' copy into pinned host buffers of its own, then only that stream
    synchronized), so the requests' work overlaps on the device. run() is one inference; the outputs stay in the
    request's buffers."""

    def __init__(self, model, feed):
        import torch

        self.model = model
        self.cuda = model.device.type == "cuda"
        self.stream = torch.cuda.Stream(device=model.device) if self.cuda else None
        self.feed = {}
        for name, value in feed.items():
            tensor = torch.tensor(value) if not isinstance(value, torch.Tensor) else value.detach().clone()
            self.feed[name] = tensor.pin_memory() if self.cuda else tensor
        self.outputs = {}

    def run(self):
        if self.cuda:
            import torch

            with torch.cuda.device(self.model.device), torch.cuda.stream(self.stream):
                return self.model.infer(self.feed, copy=False, pinned=self.outputs, stream=self.stream)
        return self.model.infer(self.feed, copy=False)


def infer_concurrently(model, feeds, requests, count, seconds):
    """`requests` InferenceRequests of `model` run concurrently (run_requests), request i on feeds[i % len(feeds)],
    each after one untimed inference of its own (its allocations, outside the clock). Returns {requests,
    latencies, wall_seconds, device, intra_op_threads}."""
    if seconds is None:
        requests = min(requests, count)
    requests = max(requests, 1)
    pool = [InferenceRequest(model, feeds[index % len(feeds)]) for index in range(requests)]
    for request in pool:
        request.run()
    latencies, wall = run_requests(requests, count, seconds, lambda index: pool[index].run())
    import torch

    return {"requests": requests, "latencies": latencies, "wall_seconds": wall, "device": str(model.device),
            "intra_op_threads": torch.get_num_threads()}
