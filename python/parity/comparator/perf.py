"""Performance mode in the Python API (docs/perf.md): PerfConfig asks Comparator.run for it, PerfResult is
one runner's measurement (the `parity run --perf --report` JSON entry as attributes)."""


class PerfConfig:
    """How Comparator.run(perf=...) measures: `iterations` timed inferences (or, with `duration`, timed
    inferences until that many seconds have passed), and with `layers` > 0 a per-layer profile over
    `layer_iterations` inferences whose `layers` slowest layers are logged. `requests`: inference requests in flight
    at once (`parity run --requests`): None runs one inference after another, a number N runs N (OpenVINO's
    asynchronous infer requests, ONNX Runtime's concurrent Run calls), "auto" the backend's own number.
    `shapes`: a shape sweep (`parity run --perf-shapes`): a list of shape sets, each a dict {input name: shape}
    (every dimension a fixed size); after its main measurement each runner is measured again per set on random
    data of those shapes (the default DataLoader's seed and ranges; inputs a set leaves out keep their shape), one
    PerfResult in the runner's PerfResult.sweep per set."""

    def __init__(self, iterations=100, duration=None, layers=0, layer_iterations=10, requests=None, shapes=None):
        if duration is not None and not duration > 0:
            raise ValueError(f"PerfConfig: duration must be more than 0 seconds, got {duration}")
        if duration is None and iterations < 1:
            raise ValueError(f"PerfConfig: iterations must be at least 1, got {iterations}")
        if layers < 0 or layer_iterations < 1:
            raise ValueError("PerfConfig: layers must be 0 or more and layer_iterations at least 1")
        if requests == "auto":
            requests = 0
        elif requests is not None and (isinstance(requests, bool) or not isinstance(requests, int) or requests < 1):
            raise ValueError(f"PerfConfig: requests must be a number of requests (at least 1), 'auto' or None, "
                             f"got {requests!r}")
        self.requests = requests
        self.shapes = _shape_sets(shapes)
        self.iterations = iterations
        self.duration = duration
        self.layers = layers
        self.layer_iterations = layer_iterations


def _shape_sets(shapes):
    """PerfConfig's shapes checked: a list of {name: [fixed dims]}, as lists of (name, [int]) in order."""
    if shapes is None:
        return []
    if isinstance(shapes, dict) or not isinstance(shapes, (list, tuple)):
        raise ValueError(f"PerfConfig: shapes must be a list of shape sets, each a dict {{input name: shape}}, "
                         f"got {shapes!r}")
    sets = []
    for shape_set in shapes:
        if not isinstance(shape_set, dict) or not shape_set:
            raise ValueError(f"PerfConfig: each shape set must be a non-empty dict {{input name: shape}}, "
                             f"got {shape_set!r}")
        entries = []
        for name, shape in shape_set.items():
            dims = list(shape) if isinstance(shape, (list, tuple)) else None
            if (not isinstance(name, str) or dims is None
                    or any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in dims)):
                raise ValueError(f"PerfConfig: shapes {name}: {shape!r}: every dimension must be a fixed size "
                                 f"(the sweep generates data of that shape)")
            entries.append((name, [int(d) for d in dims]))
        sets.append(entries)
    return sets


class LayerTime:
    """One layer of a per-layer profile: name, type, kernel, precision, seconds (per inference, the mean over the
    profiled inferences), share (of the profiled inferences' mean latency) and onnx_nodes (the ONNX nodes it ran)."""

    def __init__(self, entry):
        self.name = entry["name"]
        self.type = entry["type"]
        self.kernel = entry["kernel"]
        self.precision = entry["precision"]
        self.seconds = entry["seconds_per_inference"]
        self.share = entry["share"]
        self.onnx_nodes = list(entry["onnx_nodes"])

    def __repr__(self):
        return f"LayerTime({self.name!r}, {self.seconds * 1e3:.4g} ms, {self.share:.1%})"


class PerfResult:
    """One runner's measurement. latency: {min, mean, median, p25, p75, p90, p95, p99, max, iqr} in seconds;
    latencies: every timed inference in seconds; throughput: inferences per second; requests: inferences in flight
    at once (1, or what ran concurrently, in words, in concurrency); backend_properties: the backend's own report of
    its settings (OpenVINO's PERFORMANCE_HINT, NUM_STREAMS, ...; empty for others); host_memory: {rss_before_bytes,
    rss_peak_bytes, added_bytes, peak_reset}; worker_memory: a worker process's {peak_rss_bytes, gpu_peak_bytes,
    gpu_note} or None; layers: [LayerTime] (None without a profile; layers_unavailable then says why when one was
    asked for); layers_info: the profile's source, inferences, sums, the profiled inferences' latencies
    (profiled_latencies, profiled_latency_seconds {mean, median}), the layers' sum over them
    (sum_over_profiled_latency) and over the unprofiled median (sum_over_median_latency), profiling_overhead (profiled
    median / unprofiled median) and outside_times (the parts of the latency outside the layers: name, what,
    seconds_per_inference, share);
    input_shapes: {input name: shape} of the feed measured; compiled_for_feed: what the runner compiled again for
    the feed's static shapes (OpenVINO with a dynamic model and no bounds given), else None; sweep: with PerfConfig(shapes=...), one PerfResult per
    shape set, in order (their host_memory, worker_memory, backend_properties and layers left empty)."""

    def __init__(self, entry, runner_name=None):
        self.runner_name = entry["runner"] if runner_name is None else runner_name
        self.warm_up = entry["warm_up"]
        self.iterations = entry["iterations"]
        self.wall_seconds = entry["wall_seconds"]
        self.throughput = entry["throughput"]
        self.requests = entry["requests"]
        self.concurrency = entry.get("concurrency")
        self.backend_properties = dict(entry.get("backend_properties", {}))
        self.latency = dict(entry["latency_seconds"])
        self.latencies = list(entry["latencies"])
        self.input_shapes = {name: list(shape) for name, shape in entry.get("input_shapes", {}).items()}
        self.compiled_for_feed = entry.get("compiled_for_feed")
        self.host_memory = dict(entry.get("host_memory", {}))
        self.worker_memory = entry.get("worker_memory")
        profile = entry.get("layers")
        self.layers = [LayerTime(layer) for layer in profile["layers"]] if profile else None
        self.layers_info = {key: value for key, value in profile.items() if key != "layers"} if profile else None
        self.layers_unavailable = entry.get("layers_unavailable")
        self.sweep = [PerfResult(point, self.runner_name) for point in entry.get("sweep", [])]

    def __repr__(self):
        return (f"PerfResult({self.runner_name!r}, median {self.latency['median'] * 1e3:.4g} ms, "
                f"{self.throughput:.4g} inferences/s)")
