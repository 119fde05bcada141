#!/usr/bin/env python3
"""Per-infer() overhead of Parity's PyTorch runner (`parity run --torch`) against a bare torch loop:
the same module, inputs, device and interpreter (so the same torch and thread count), side by side in
one run. Prints each model's time per inference both ways and the RATIO (target <= 1.1x), and the
absolute overhead per inference.

What each side times, per iteration:
- bare torch: torch.from_numpy(feed) (moved to the device), module(x) under torch.inference_mode(),
  the output copied to the host as numpy (after a CUDA synchronize): the least any runner does;
- parity: Runner::infer() on the `--torch` runner, as `parity run` reports it ("Average inference
  time"): the feed written to the worker's shared memory, the request, the same forward and host copy
  in the worker, the reply, the output copied out of shared memory.

Models: add_one (x + 1 on 1x3x32x32: the runner's floor, what one infer() costs besides the work),
small_cnn-sized (examples/small_cnn.onnx's layers: two Conv-BN-ReLU-MaxPool blocks and a
Linear, 1x3x32x32) and ResNet-50-sized (torchvision's ResNet-50 architecture, written here so only torch
is needed; random weights, 1x3x224x224).

Needs only python3 with torch and numpy, and a parity binary ($PARITY_BIN or --parity):
    python3 bench/torch_runner_overhead.py [--device cuda] [--iterations N] [--models small_cnn,resnet50]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MODELS_SCRIPT = textwrap.dedent('''
    import torch
    from torch import nn


    class SmallCnn(nn.Module):
        def __init__(self):
            super().__init__()
            def block(i, o):
                return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(2))
            self.features = nn.Sequential(block(3, 8), block(8, 16))
            self.fc = nn.Linear(16 * 8 * 8, 10)

        def forward(self, image):
            return torch.softmax(self.fc(self.features(image).flatten(1)), 1)


    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.down(x))


    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                      nn.MaxPool2d(3, 2, 1)]
            cin = 64
            for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
                for b in range(blocks):
                    layers.append(Bottleneck(cin, width, stride if b == 0 else 1))
                    cin = width * 4
            self.features = nn.Sequential(*layers)
            self.fc = nn.Linear(2048, 1000)

        def forward(self, image):
            return self.fc(self.features(image).mean((2, 3)))


    class AddOne(nn.Module):
        def forward(self, image):
            return image + 1


    def add_one():
        return AddOne()


    def small_cnn():
        torch.manual_seed(0)
        return SmallCnn().eval()


    def resnet50():
        torch.manual_seed(0)
        return ResNet50().eval()
''')

SHAPES = {"add_one": [1, 3, 32, 32], "small_cnn": [1, 3, 32, 32], "resnet50": [1, 3, 224, 224]}

# The bare loop, in a fresh interpreter like the runner's worker: prints one time per iteration (s).
BARE_LOOP = textwrap.dedent('''
    import importlib.util, sys, time
    import numpy as np
    import torch
    script, function, device, iterations, warm_up = sys.argv[1:6]
    shape = [int(d) for d in sys.argv[6].split(",")]
    spec = importlib.util.spec_from_file_location("models", script)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    device = torch.device(device)
    module = getattr(models, function)().to(device)
    feed = np.random.default_rng(1).random(shape, dtype=np.float32)
    cuda = device.type == "cuda"

    def infer():
        x = torch.from_numpy(feed).to(device)
        out = module(x)
        if cuda:
            torch.cuda.synchronize(device)
        return out.cpu().numpy()

    with torch.inference_mode():
        for _ in range(int(warm_up)):
            infer()
        for _ in range(int(iterations)):
            start = time.perf_counter()
            infer()
            print(time.perf_counter() - start)
''')


def bare_ms(python, script, function, device, iterations, warm_up):
    completed = subprocess.run([python, "-c", BARE_LOOP, str(script), function, device, str(iterations),
                                str(warm_up), ",".join(map(str, SHAPES[function]))],
                               capture_output=True, text=True, check=True)
    times = [float(line) for line in completed.stdout.split()]
    return statistics.median(times) * 1e3, statistics.mean(times) * 1e3


def parity_ms(parity, python, script, function, device, iterations, warm_up, statistic="mean"):
    """Parity's time per infer(): the mean `parity run` reports ("Average inference time"), or with
    statistic="median" the median of performance mode (`--perf`, the same infer() calls timed one by one)."""
    shape = ",".join(map(str, SHAPES[function]))
    command = [parity, "run", "--torch", "--torch-model-script", f"{script}:{function}", "--torch-device", device,
               "--torch-python", python, "--input-shapes", f"image:[{shape}]", "--iterations", str(iterations),
               "--warm-up", str(warm_up)] + (["--perf"] if statistic == "median" else [])
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{completed.stdout[-3000:]}{completed.stderr[-3000:]}")
    pattern = r"latency \(ms\): min [0-9.e+-]+ \| mean [0-9.e+-]+ \| median ([0-9.e+-]+)" if statistic == "median" \
        else r"Average inference time: ([0-9.e+-]+) ms"
    found = re.search(pattern, completed.stdout + completed.stderr)
    if found is None:
        sys.exit(f"{' '.join(command)}: no {statistic} time in its output:\n{completed.stdout[-3000:]}")
    return float(found.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parity", default=os.environ.get("PARITY_BIN",
                                                           str(REPO / "build" / "release" / "tools" / "parity" /
                                                               "parity")))
    parser.add_argument("--python", default=sys.executable, help="the interpreter both sides run torch in")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--warm-up", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each side, alternated; the best of each side is compared, and each pair's "
                             "ratio summarized (a shared machine's load moves single runs)")
    parser.add_argument("--models", default="add_one,small_cnn,resnet50")
    parser.add_argument("--statistic", choices=("mean", "median"), default="mean",
                        help="per-inference time of each run: the mean (parity run's 'Average inference time'), or "
                             "the median (parity run --perf's; one slow inference, a preemption or a collection, "
                             "moves a mean but not a median)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "bench_models.py"
        script.write_text(MODELS_SCRIPT)
        print(f"device {args.device}, {args.iterations} iterations after {args.warm_up} warm-ups, {args.statistic} of "
              f"each run, best of "
              f"{args.repeats} alternated runs; {args.python}; load average {os.getloadavg()[0]:.2f} on "
              f"{os.cpu_count()} CPUs")
        print(f"{'model':10} {'bare torch ms':>14} {'parity --torch ms':>18} {'ratio':>7} {'overhead ms':>12}"
              "   each run pair's ratio: median (lowest to highest); overhead median")
        for function in args.models.split(","):
            bare, parity = [], []
            for _ in range(args.repeats):
                # The bare loop's mean, comparable with parity's average.
                median, mean = bare_ms(args.python, script, function, args.device, args.iterations, args.warm_up)
                bare.append(median if args.statistic == "median" else mean)
                parity.append(parity_ms(args.parity, args.python, script, function, args.device, args.iterations,
                                        args.warm_up, args.statistic))
            b, p = min(bare), min(parity)
            ratios = [pi / bi for pi, bi in zip(parity, bare)]
            overheads = [pi - bi for pi, bi in zip(parity, bare)]
            print(f"{function:10} {b:14.4f} {p:18.4f} {p / b:6.3f}x {p - b:12.4f}   {statistics.median(ratios):.3f}x "
                  f"({min(ratios):.3f}x to {max(ratios):.3f}x); {statistics.median(overheads):.4f} ms")


if __name__ == "__main__":
    main()
