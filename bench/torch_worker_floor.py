#!/usr/bin/env python3
"""Where the `--torch` runner's per-infer() overhead goes, in parts that a loaded machine moves less than
the end-to-end figure of bench/torch_runner_overhead.py:

- the floor of a process round trip on this machine: one 8-byte message through a pipe to a child
  process and one back (what a bound inference exchanges), wall time per round trip;
- the worker's own work per bound inference, in this process without pipes: the prepared call
  (BoundInference.infer) and the 8-byte reply (the outputs copied into the previous reply's views; the
  reply written to /dev/null), against the bare loop's body (torch.from_numpy, forward, .numpy()) under
  torch.inference_mode(), side by side; thread CPU time, so other processes' load counts little.
  Prints the medians and the RATIO.

The worker's program is read from src/runtime/python_worker.cpp and python/parity/backend/pyt (the text
the parity binary carries). Needs python3 with torch and numpy:
    python3 bench/torch_worker_floor.py [--models add_one,small_cnn] [--calls N]
"""
import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from torch_runner_overhead import MODELS_SCRIPT, SHAPES  # noqa: E402


def pipe_round_trips(count):
    """Wall seconds of each of `count` 8-byte round trips to a forked child (after 1000 unmeasured)."""
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(from_parent)
        os.close(to_parent)
        while True:
            message = os.read(to_child, 8)
            if not message:
                os._exit(0)
            os.write(from_child, message)
    os.close(to_child)
    os.close(from_child)
    times = []
    for index in range(count + 1000):
        start = time.perf_counter()
        os.write(from_parent, b"!" + bytes(7))
        os.read(to_parent, 8)
        if index >= 1000:
            times.append(time.perf_counter() - start)
    os.close(from_parent)
    os.waitpid(pid, 0)
    return times


def worker_globals(region_fd):
    """The worker's program and the PyTorch runner's commands, run in a namespace of their own."""
    source = (REPO / "src" / "runtime" / "python_worker.cpp").read_text()
    program = source.split('R"PY(')[1].split(')PY"')[0]
    namespace = {"__name__": "parity_worker"}
    # The program sends standard output to standard error (its replies go to a copy of it): undone here.
    sys.stdout.flush()
    argv, sys.argv, stdout = sys.argv, ["worker", str(region_fd)], os.dup(1)
    try:
        exec(program, namespace)
    finally:
        sys.argv = argv
        os.dup2(stdout, 1)
        os.close(stdout)
    namespace["_replies"].close()
    namespace["_replies"] = open(os.devnull, "wb")
    for name in ("_module_capture.py", "_torch_model.py", "_torch_requests.py"):
        exec((REPO / "python" / "parity" / "backend" / "pyt" / name).read_text(), namespace)
    namespace["serve_commands"](namespace["command"], namespace["Reply"], namespace["CommandFailed"])
    return namespace


def worker_and_bare(script, function, calls):
    """Thread CPU seconds of each bound inference's work in the worker, and of each bare loop body."""
    import numpy as np
    import torch

    shape = SHAPES[function]
    region_fd = os.memfd_create("parity-bench")
    os.ftruncate(region_fd, 1 << 24)
    worker = worker_globals(region_fd)
    worker["_map"](1 << 24)
    worker["_commands"]["activate"]({"source": {"kind": "script", "path": str(script), "function": function},
                                     "options": {"device": "cpu"}, "output_names": None}, {})
    views = worker["_views"]([{"name": "image", "dtype": "<f4", "shape": shape, "offset": 0}])
    feed = np.random.default_rng(1).random(shape, dtype=np.float32)
    views["image"][...] = feed
    reply_offset = (feed.nbytes + 63) // 64 * 64
    binding = worker["_Binding"](worker["_preparers"]["infer"]({"capture": None}, views), reply_offset)
    worker["_reply_bound"](binding, binding.run())  # the JSON reply that places the outputs

    spec = importlib.util.spec_from_file_location("bench_models", script)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    module = getattr(models, function)()
    clock = time.thread_time_ns
    in_worker, bare = [], []
    for index in range(calls + calls // 5):
        start = clock()
        worker["_reply_bound"](binding, binding.run())
        middle = clock()
        with torch.inference_mode():
            module(torch.from_numpy(feed)).cpu().numpy()
        end = clock()
        if index >= calls // 5:
            in_worker.append((middle - start) * 1e-9)
            bare.append((end - middle) * 1e-9)
    return in_worker, bare


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="add_one,small_cnn")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--round-trips", type=int, default=20000)
    args = parser.parse_args()
    import torch

    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; torch {torch.__version__}, "
          f"{torch.get_num_threads()} intra-op thread(s)")
    trips = sorted(pipe_round_trips(args.round_trips))
    print(f"pipe round trip (8 bytes each way, another process): median {statistics.median(trips) * 1e6:.1f} us, "
          f"10th percentile {trips[len(trips) // 10] * 1e6:.1f} us, 90th {trips[9 * len(trips) // 10] * 1e6:.1f} us")
    print(f"{'model':10} {'bare body us':>13} {'worker us':>10} {'ratio':>7} {'worker extra us':>16}")
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "bench_models.py"
        script.write_text(MODELS_SCRIPT)
        for function in args.models.split(","):
            in_worker, bare = worker_and_bare(script, function, args.calls)
            w, b = statistics.median(in_worker) * 1e6, statistics.median(bare) * 1e6
            print(f"{function:10} {b:13.2f} {w:10.2f} {w / b:6.3f}x {w - b:16.2f}")


if __name__ == "__main__":
    main()
