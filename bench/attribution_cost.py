"""Cost of `run --attribute` (issue 36) as a multiple of the plain layerwise run it follows:
`parity run MODEL --ref --onnxrt --onnx-outputs mark all` with and without --attribute, side by side
in the same process tree, best of --repeat wall times each, on ppocrv4_det at 640x640 (../shared
models) and the BERT encoder exported by tests/cli/exported_models.py (size "bench", sequence 128).
Target: <= 3x. Also prints each model's top introducers (for docs/attribution.md).

    python bench/attribution_cost.py [--build build/release] [--repeat 3] [--runners "--ref --onnxrt"]
                                     [--models ppocrv4_det,bert,blazeface,magika,silero_vad]
    (other runners: "--ref --openvino --ov-precision bf16", "--ref --onnxrt --fp-to-fp16", "--ref --onnxrt --int8")
The other shared models (--models): blazeface_front_128 (1x128x128x3), magika_standard_v3_3 (1x2048 bytes in
0..255), silero_vad_op18_ifless (a 512-sample chunk at 16 kHz, a zero state).
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from exported_models import export  # noqa: E402  (tests/cli is on the path from here)

SHARED = os.path.join(os.path.dirname(ROOT), "shared", "models")


def input_shapes(path, sequence=128):
    """--input-shapes for every input with a dynamic dim: the batch 1, other dynamic dims `sequence`."""
    model = onnx.load(path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    shapes = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = value.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            continue
        fixed = [d.dim_value if d.HasField("dim_value") else (1 if i == 0 else sequence) for i, d in enumerate(dims)]
        shapes.append(f"{value.name}:[{','.join(map(str, fixed))}]")
    return ["--input-shapes", *shapes] if shapes else []


def number(value):
    """A report's error: a number, "inf"/"-inf", or null (NaN)."""
    return f"{value:.3g}" if isinstance(value, (int, float)) else str(value)


def timed(parity, args):
    start = time.perf_counter()
    out = subprocess.run([parity, *args], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode not in (0, 1) or "[E] " in out.stdout and "FAILED" not in out.stdout:
        raise SystemExit(f"parity {' '.join(args)} failed:\n{out.stdout[-3000:]}{out.stderr[-3000:]}")
    return wall


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runners", default="--ref --onnxrt")
    parser.add_argument("--models", default="ppocrv4_det,bert",
                        help="comma-separated: ppocrv4_det, bert, blazeface, magika, silero_vad")
    args = parser.parse_args()
    parity = os.path.join(args.build, "tools", "parity", "parity")
    runners = shlex.split(args.runners)
    chosen = args.models.split(",")
    with tempfile.TemporaryDirectory() as folder:
        models = {}
        if "ppocrv4_det" in chosen:
            models["ppocrv4_det 640x640"] = (os.path.join(SHARED, "ppocrv4_det.onnx"),
                                             ["--input-shapes", "x:[1,3,640,640]"])
        if "bert" in chosen:
            bert = os.path.join(folder, "bert.onnx")
            export("bert", bert, "torchscript", size="bench")
            models["BERT encoder (bench, seq 128)"] = (bert, input_shapes(bert))
        if "blazeface" in chosen:
            models["blazeface_front_128"] = (os.path.join(SHARED, "blazeface_front_128.onnx"), [])
        if "magika" in chosen:
            models["magika_standard_v3_3"] = (os.path.join(SHARED, "magika_standard_v3_3.onnx"),
                                              ["--input-shapes", "bytes:[1,2048]", "--val-range", "bytes:[0,255]"])
        if "silero_vad" in chosen:
            models["silero_vad_op18_ifless"] = (os.path.join(SHARED, "silero_vad_op18_ifless.onnx"),
                                                ["--input-shapes", "input:[1,512]", "state:[2,1,128]",
                                                 "--val-range", "sr:[16000,16000]", "state:[0,0]"])
        for label, (path, shapes) in models.items():
            base = ["run", path, *runners, "--onnx-outputs", "mark", "all", *shapes]
            plain, attributed = [], []
            report = os.path.join(folder, "report.json")
            for _ in range(args.repeat):  # interleaved, so drift hits both alike
                plain.append(timed(parity, base))
                attributed.append(timed(parity, [*base, "--attribute", "--report", report]))
            ratio = min(attributed) / min(plain)
            print(f"{label}: plain mark all {min(plain):.2f} s, with --attribute {min(attributed):.2f} s: "
                  f"x{ratio:.2f} (target <= 3)", flush=True)
            data = json.load(open(report))["attribution"]
            first = data["first_local_failure"]
            print(f"  first local failure: {first['node'] + ' [' + first['op'] + ']' if first else 'none'}; "
                  f"flips: {', '.join(f['node'] + ' (' + str(f['flipped']) + ')' for f in data['flips']) or 'none'}")
            for t in data["top"][:5]:
                print(f"  {t['node']} [{t['op']}] local abs {number(t['local']['abs'])} inherited abs "
                      f"{number(t['inherited']['abs'])} total abs {number(t['total']['abs'])}")


if __name__ == "__main__":
    main()
