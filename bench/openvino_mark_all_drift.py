"""Writes docs/openvino-layerwise.md: how far OpenVINO's final outputs move when every tensor is
marked as an output (`--ov-outputs mark all`), and that the fusion-preserving mode
(`--ov-outputs mark fused`) leaves them bit-identical, per shared and example model, at f32 and bf16.

    python bench/openvino_mark_all_drift.py [--build build/release] [-o docs/openvino-layerwise.md]

Per model and precision, on the inputs of the peer tests (tests/peers/test_onnxrt_peer.py's
make_inputs, seed 1), with 2 threads, through tests/peers' parity_run_backend:
  plain:      parity_run_backend M --openvino --ov-precision P
  mark fused: the same with --mark-fused (--ov-outputs mark fused)
  mark all:   the same with --mark-all   (--ov-outputs mark all)
The graph outputs of each marked run are compared with the plain run's: max absolute difference and
max relative difference (|a - b| / |b|, over elements where b != 0), the worst over the outputs.
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "peers"))
from test_onnxrt_peer import PEER_MODELS, make_inputs, tool_env  # noqa: E402

OPENVINO_CANNOT_CONVERT = {"silero_vad_v5.onnx"}
THREADS = 2


def run(backend: Path, model: Path, inputs: Path, out: Path, precision: str, *flags) -> dict:
    module = backend.parent.parent.parent / "tools" / "parity" / "libparity_openvino.so"
    command = [str(backend), str(model), "--openvino", "--inputs", str(inputs), "--outputs", str(out),
               "--ov-precision", precision, "--threads", str(THREADS), *flags]
    done = subprocess.run(command, capture_output=True, text=True, env=tool_env(PARITY_OPENVINO_MODULE=str(module)))
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    with np.load(out) as data:
        return {name: data[name] for name in data.files}


def drift(plain: dict, marked: dict) -> tuple:
    worst_abs, worst_rel, identical = 0.0, 0.0, True
    for name, expected in plain.items():
        got = marked[name]
        identical = identical and got.tobytes() == expected.tobytes()
        if not np.issubdtype(expected.dtype, np.floating):
            continue
        a, b = got.astype(np.float64), expected.astype(np.float64)
        difference = np.abs(a - b)
        worst_abs = max(worst_abs, float(np.nanmax(difference)) if difference.size else 0.0)
        nonzero = b != 0
        if nonzero.any():
            worst_rel = max(worst_rel, float(np.nanmax(difference[nonzero] / np.abs(b[nonzero]))))
    return identical, worst_abs, worst_rel


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build" / "release"))
    parser.add_argument("-o", "--output", default=str(ROOT / "docs" / "openvino-layerwise.md"))
    args = parser.parse_args()
    backend = Path(args.build).resolve() / "tests" / "peers" / "parity_run_backend"
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for model in PEER_MODELS:
            if model.name in OPENVINO_CANNOT_CONVERT:
                continue
            inputs = folder / "in.npz"
            np.savez(inputs, **make_inputs(model))
            for precision in ("f32", "bf16"):
                plain = run(backend, model, inputs, folder / "plain.npz", precision)
                fused = run(backend, model, inputs, folder / "fused.npz", precision, "--mark-fused")
                every = run(backend, model, inputs, folder / "all.npz", precision, "--mark-all")
                fused_identical, _, _ = drift(plain, {name: fused[name] for name in plain})
                all_identical, all_abs, all_rel = drift(plain, {name: every[name] for name in plain})
                rows.append((model.name, precision, len(fused) - len(plain), len(every) - len(plain),
                             fused_identical, all_identical, all_abs, all_rel))
                print(rows[-1], flush=True)
    lines = [
        "# OpenVINO layerwise: what marking tensors does to the final outputs",
        "",
        "Written by `python bench/openvino_mark_all_drift.py` (the command regenerates it; measured on "
        f"{platform.machine()}, {THREADS} threads, OpenVINO through `parity_run_backend`).",
        "",
        "`--ov-outputs mark all` makes every ONNX tensor a model output. OpenVINO then cannot fuse a marked",
        "tensor into its consumer, and a layer whose output feeds a float32 Result writes float32 where the",
        "plain model writes bfloat16, so the layers after it read unrounded values and may run in float32:",
        "the marked model computes differently from the one deployed. `--ov-outputs mark fused` compiles the",
        "plain model first and marks only the tensors its executed layers write out, each returned in the type",
        "its layer writes (bfloat16 at bf16, widened to float32 exactly), so the marked model executes the",
        "same layers, kernels and precisions (the reduced type through a Convert before the tensor's Result:",
        "OpenVINO's PrePostProcessor, building, transforms the whole model, so a ViT's patch convolution",
        "fused its bias only once anything was marked). Parity checks that after compiling (layers matched",
        "by name, then by name without OpenVINO's numbers: type, kernel, runtime and output precisions,",
        "fused ops). Marks known to change their layer are left out before the first marked compile: those",
        "of layers computing integers (shape arithmetic: int64 in ONNX, i32 in OpenVINO, whose Result makes",
        "OpenVINO run a copy of the layer and convert), and, where OpenVINO moved a Multiply of its own (an",
        "attention scale) into a layer or next to it, the marks of the two layers after it, which keep it",
        "from moving. Should a layer still change, each round drops the marks around every layer that changed",
        "itself (not those next to marks the round already drops: they may have changed through them) and",
        "compiles again until none changes; a layer that lost fused ops (a convolution that no longer fuses",
        "the residual Add reading a marked tensor) first loses only the marks of the tensors those ops read",
        "and write, and the marks around it only if it stays changed, so a convolution's own input stays",
        "marked. On BERT, GPT-2 and ViT from both of torch's exporters that is two",
        "compiles, three for GPT-2's TorchScript export (`python bench/openvino_mark_fused_cost.py` gives the",
        "cost against `mark all`); one info line sums it up: the compile, the tensors marked and compared,",
        "and how many compiles it took. Marks dropped on these models: the residuals and outputs of the",
        "Add/Relu that blazeface's convolutions fuse, the K projection of attention and the reshape/transpose after it",
        "(small_transformer: OpenVINO moves the attention scale into the K FullyConnected), some of magika's",
        "(its decomposed LayerNorms and final Power/Divide fuse differently once marked) and silero_vad's one",
        "candidate. The activation log lists every tensor of the plain",
        "model's layers, marked or not and why.",
        "",
        "Per model and precision: how many tensors each mode marks, whether the final (graph) outputs are",
        "bit-identical to the plain run's, and for `mark all` the largest absolute and relative difference",
        "of the graph outputs against the plain run (inputs of the peer tests, seed 1).",
        "",
        "| model | precision | tensors marked (fused) | tensors marked (all) | mark fused: outputs bit-identical |"
        " mark all: bit-identical | mark all: max abs difference | mark all: max rel difference |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, precision, fused_count, all_count, fused_identical, all_identical, all_abs, all_rel in rows:
        lines.append(f"| {name} | {precision} | {fused_count} | {all_count} | {'yes' if fused_identical else 'NO'} | "
                     f"{'yes' if all_identical else 'no'} | {all_abs:.3g} | {all_rel:.3g} |")
    lines += ["", "The bit-identity of `mark fused` is asserted by tests/peers/test_openvino_peer.py "
              "(`test_mark_fused_keeps_final_outputs_bit_identical`); the `mark all` differences are measured, "
              "not asserted.", ""]
    Path(args.output).write_text("\n".join(lines))
    print(f"wrote {args.output}")
    return 0 if all(row[4] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
