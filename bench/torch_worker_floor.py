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
- with --pingpong, the floor of any runner whose model runs in another process: the bare loop body in a child
  process, one 8-byte request and reply per inference (blocking pipes), against the same body in this process,
  wall medians, in alternating blocks of 100.

    python3 bench/torch_worker_floor.py [--models add_one,small_cnn] [--calls N] [--pingpong]
"""
import argparse
import importlib.util
import os
import statistics
import subprocess
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
    for name in ("_module_capture.py", "_torch_model.py", "_torch_requests.py", "_torch_layer_profile.py"):
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


def pingpong_child(script, function):
    """The other end of pingpong(): the model's bare loop body once per 8-byte request, an 8-byte reply after it."""
    import numpy as np
    import torch

    spec = importlib.util.spec_from_file_location("bench_models", script)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    module = getattr(models, function)()
    feed = np.random.default_rng(1).random(SHAPES[function], dtype=np.float32)
    with torch.inference_mode():
        for _ in range(50):
            module(torch.from_numpy(feed)).cpu().numpy()
        os.write(1, b"ready!!!")
        while os.read(0, 8):
            module(torch.from_numpy(feed)).cpu().numpy()
            os.write(1, b"=" + bytes(7))


def pingpong(script, function, calls):
    """The floor of any runner whose model runs in another process, on this machine: wall seconds of each round trip
    to a child process that runs the bare loop body per 8-byte request (pipes, both sides blocking), and of each bare
    loop body in this process (wall), alternating blocks of 100."""
    import numpy as np
    import torch

    child = subprocess.Popen([sys.executable, __file__, "--pingpong-child", str(script), function],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdout.read(8) == b"ready!!!"
    spec = importlib.util.spec_from_file_location("bench_models", script)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    module = getattr(models, function)()
    feed = np.random.default_rng(1).random(SHAPES[function], dtype=np.float32)
    trips, bare = [], []
    clock = time.perf_counter
    with torch.inference_mode():
        for _ in range(50):
            module(torch.from_numpy(feed)).cpu().numpy()
        for block in range(calls // 100 + 2):
            for _ in range(100):
                start = clock()
                child.stdin.write(b"!" + bytes(7))
                child.stdout.read(8)
                if block >= 2:
                    trips.append(clock() - start)
            for _ in range(100):
                start = clock()
                module(torch.from_numpy(feed)).cpu().numpy()
                if block >= 2:
                    bare.append(clock() - start)
    child.stdin.close()
    child.wait()
    return trips, bare


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="add_one,small_cnn")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--round-trips", type=int, default=20000)
    parser.add_argument("--pingpong", action="store_true",
                        help="also each model's bare loop body in another process, one round trip per inference, "
                             "against the same body here: the floor of a separate worker process on this machine")
    parser.add_argument("--pingpong-child", nargs=2, metavar=("SCRIPT", "FUNCTION"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pingpong_child:
        pingpong_child(*args.pingpong_child)
        return
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
        if args.pingpong:
            print(f"{'model':10} {'bare us (wall)':>15} {'round trip us':>14} {'ratio':>7} {'extra us':>9}   "
                  "(the bare body in another process, one 8-byte request and reply each, wall medians)")
            for function in args.models.split(","):
                trips, bare = pingpong(script, function, args.calls)
                t, b = statistics.median(trips) * 1e6, statistics.median(bare) * 1e6
                print(f"{function:10} {b:15.2f} {t:14.2f} {t / b:6.3f}x {t - b:9.2f}")


if __name__ == "__main__":
    main()
