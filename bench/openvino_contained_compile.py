"""What compiling a model in a child process first (OpenVINO's runners contain a crash in OpenVINO's
compile, openvino_contained_compile.h) costs a whole command: `parity run MODEL --openvino` and
`parity convert MODEL --openvino` with the contained compile (the default) and with
PARITY_OPENVINO_IN_PROCESS=1 (the peer: the compile in the process only), side by side, alternating,
on bench-size BERT and ResNet-50 and a tiny BERT from tests/cli/exported_models.py. Prints the median
wall time of each and the ratio contained / in-process.

    python bench/openvino_contained_compile.py [--build build/release] [--repeats 7]
"""
import argparse
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


def timed(command, env):
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    parity = os.path.join(args.build, "tools", "parity", "parity")
    contained = dict(os.environ)
    contained.pop("PARITY_OPENVINO_IN_PROCESS", None)
    in_process = dict(contained, PARITY_OPENVINO_IN_PROCESS="1")
    with tempfile.TemporaryDirectory() as folder:
        for kind, size in MODELS:
            model = export(kind, os.path.join(folder, f"{kind}_{size}.onnx"), "torchscript", size=size)
            for name, command in (("run", [parity, "run", str(model), "--openvino"]),
                                  ("convert", [parity, "convert", str(model), "--openvino", "-o",
                                               os.path.join(folder, "model.ovc")])):
                timed(command, in_process)  # warm the page cache
                ours, peer = [], []
                for _ in range(args.repeats):
                    ours.append(timed(command, contained))
                    peer.append(timed(command, in_process))
                ours_s, peer_s = statistics.median(ours), statistics.median(peer)
                print(f"{kind} ({size}) {name} --openvino: contained {ours_s:.3f} s, in-process {peer_s:.3f} s, "
                      f"ratio {ours_s / peer_s:.2f}x", flush=True)


if __name__ == "__main__":
    main()
