"""What running OpenVINO's calls in child processes (openvino_containment.h: the first compile in a child
kept for the first inference, query_model in a child) costs, side by side with
PARITY_OPENVINO_IN_PROCESS=1 (the peer: everything in the process only), alternating, on bench-size BERT
and ResNet-50 and a tiny BERT from tests/cli/exported_models.py. Prints the median of each and the ratio
contained / in-process for:

- whole commands: `parity run MODEL --openvino` (compile and first inference contained), `parity convert
  MODEL --openvino` (compile contained) and `parity inspect capability MODEL --openvino` (query_model);
- the Python API's first infer() alone (the child infers the feeds before the process does), timed in a
  fresh interpreter per sample, dynamic dimensions fed as 1.

    python bench/openvino_contained_compile.py [--build build/release] [--repeats 7]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from exported_models import export  # noqa: E402  (tests/cli is on the path from here)

MODELS = (("bert", "bench"), ("resnet", "bench"), ("bert", "tiny"))

# Times activate() and the first infer() of an OpenVINORunner in this interpreter; prints them as JSON.
FIRST_INFERENCE = r"""
import json, sys, time
import numpy as np
from parity.backend.openvino import OpenVINORunner
runner = OpenVINORunner(sys.argv[1])
start = time.perf_counter()
runner.activate()
activated = time.perf_counter()
feeds = {}
for name, meta in runner.get_input_metadata().items():
    shape = [dim if isinstance(dim, int) and dim >= 0 else 1 for dim in meta.shape]
    feeds[name] = np.ones(shape, dtype=meta.dtype)
before = time.perf_counter()
runner.infer(feeds)
inferred = time.perf_counter()
runner.infer(feeds)
second = time.perf_counter()
runner.deactivate()
print(json.dumps({"activate": activated - start, "first": inferred - before, "second": second - inferred}))
"""


def timed(command, env):
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def first_inference(model, env):
    out = subprocess.run([sys.executable, "-c", FIRST_INFERENCE, str(model)], check=True, capture_output=True,
                         text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    parity = os.path.join(args.build, "tools", "parity", "parity")
    contained = dict(os.environ)
    contained.pop("PARITY_OPENVINO_IN_PROCESS", None)
    contained["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(args.build, "python"),
                                                            contained.get("PYTHONPATH")]))
    in_process = dict(contained, PARITY_OPENVINO_IN_PROCESS="1")
    with tempfile.TemporaryDirectory() as folder:
        for kind, size in MODELS:
            model = export(kind, os.path.join(folder, f"{kind}_{size}.onnx"), "torchscript", size=size)
            for name, command in (("run", [parity, "run", str(model), "--openvino"]),
                                  ("convert", [parity, "convert", str(model), "--openvino", "-o",
                                               os.path.join(folder, "model.ovc")]),
                                  ("inspect capability", [parity, "inspect", "capability", str(model), "--openvino",
                                                          "-o", os.path.join(folder, "capability")])):
                timed(command, in_process)  # warm the page cache
                ours, peer = [], []
                for _ in range(args.repeats):
                    ours.append(timed(command, contained))
                    peer.append(timed(command, in_process))
                ours_s, peer_s = statistics.median(ours), statistics.median(peer)
                print(f"{kind} ({size}) {name} --openvino: contained {ours_s:.3f} s, in-process {peer_s:.3f} s, "
                      f"ratio {ours_s / peer_s:.2f}x", flush=True)
            ours, peer = [], []
            for _ in range(args.repeats):
                ours.append(first_inference(model, contained))
                peer.append(first_inference(model, in_process))
            for step in ("activate", "first", "second"):
                ours_s = statistics.median(sample[step] for sample in ours)
                peer_s = statistics.median(sample[step] for sample in peer)
                label = {"activate": "activate()", "first": "first infer()", "second": "second infer()"}[step]
                print(f"{kind} ({size}) Python {label}: contained {ours_s * 1000:.1f} ms, in-process "
                      f"{peer_s * 1000:.1f} ms, ratio {ours_s / peer_s:.2f}x", flush=True)


if __name__ == "__main__":
    main()
