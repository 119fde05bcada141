"""Writes docs/openvino-bf16.md: the error of OpenVINO at bf16 against the reference interpreter on
every shared and example model OpenVINO converts (examples/models/*.onnx, ../shared/models/*.onnx
except silero_vad_v5.onnx, which OpenVINO's ONNX frontend cannot convert). Measured, not asserted:
a model whose bf16 error is large is reported, not failed.

    python bench/openvino_bf16_table.py [--build build/release] [-o docs/openvino-bf16.md]
                                        [--atol 1e-2] [--rtol 1e-2]

Per model, with Parity's data loader (seed 1, one iteration; DATA_FLAGS below for some models):
  1. `parity run M --ref --openvino --ov-precision bf16 --report R.json`: per graph output, the
     max and median absolute error of OpenVINO bf16 against ref (from the JSON report);
  2. `parity run M --ref --openvino --ov-precision bf16 --onnx-outputs mark all --ov-outputs mark all
     --atol A --rtol A --report L.json`: the first tensor (topological order) beyond those
     tolerances. Marking every tensor changes what OpenVINO fuses, so this run's kernels are not
     exactly the plain run's; it says where bf16 error first exceeds a bf16-scale tolerance.
"""
import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
OPENVINO_CANNOT_CONVERT = {"silero_vad_v5.onnx": "a Conv inside an If branch whose input rank OpenVINO cannot infer"}
# Data loader flags giving each model meaningful inputs (those of tests/cli/test_run_openvino.py).
DATA_FLAGS = {
    "small_if.onnx": ["--input-shapes", "x:[3,4]"],
    "ppocrv4_det.onnx": ["--input-shapes", "x:[1,3,96,96]"],
    "silero_vad_op18_ifless.onnx": ["--input-shapes", "input:[1,512]", "state:[2,1,128]", "--val-range",
                                    "sr:[16000,16000]", "input:[-1,1]"],
    "magika_standard_v3_3.onnx": ["--val-range", "[0,256]"],
}


def models():
    found = sorted(glob.glob(os.path.join(ROOT, "examples", "models", "*.onnx")))
    found += sorted(glob.glob(os.path.join(SHARED, "models", "*.onnx")))
    return [m for m in found if os.path.basename(m) not in OPENVINO_CANNOT_CONVERT]


def display(path):
    return os.path.relpath(path, ROOT)


def run_report(tool, arguments, report, env):
    done = subprocess.run([tool, *arguments, "--report", report], capture_output=True, text=True, env=env)
    if not os.path.exists(report):
        last = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("[E]")]
        return None, (last[-1] if last else f"exit {done.returncode}, no report")
    with open(report) as file:
        return json.load(file), None


def number(value):
    return "n/a" if value is None else f"{value:.3g}"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as file:
            text = file.read()
    except OSError:
        return "unknown"
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "?")
    flags = set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))
    bf16 = [flag for flag in ("avx512_bf16", "amx_bf16", "amx_tile") if flag in flags]
    return f"{model} ({', '.join(bf16) if bf16 else 'no bf16 instructions'})"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("-o", "--output", default=os.path.join(ROOT, "docs", "openvino-bf16.md"))
    parser.add_argument("--atol", default="1e-2", help="absolute tolerance of the layerwise run")
    parser.add_argument("--rtol", default="1e-2", help="relative tolerance of the layerwise run")
    args = parser.parse_args()
    tool = os.path.join(args.build, "tools", "parity", "parity")
    env = dict(os.environ)
    env.setdefault("PARITY_PYTHON", sys.executable)
    import openvino
    sections, summary = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for model in models():
            name = os.path.basename(model)
            print(f"{name} ...", flush=True)
            plain_args = ["run", display(model), "--ref", "--openvino", "--ov-precision", "bf16",
                          *DATA_FLAGS.get(name, [])]
            layer_args = plain_args + ["--onnx-outputs", "mark", "all", "--ov-outputs", "mark", "all", "--atol",
                                       args.atol, "--rtol", args.rtol]
            absolute = {display(model): model}
            plain, plain_error = run_report(tool, [absolute.get(a, a) for a in plain_args],
                                            os.path.join(tmp, name + ".json"), env)
            layers, layer_error = run_report(tool, [absolute.get(a, a) for a in layer_args],
                                             os.path.join(tmp, name + ".l.json"), env)
            lines = [f"### {name}", "", "```", "parity " + " ".join(plain_args), "parity " + " ".join(layer_args),
                     "```", ""]
            worst = None
            if plain is None:
                lines.append(f"Plain run failed: `{plain_error}`")
            else:
                lines += ["| output | dtype | shape | max abs error | median abs error | max rel error |",
                          "|---|---|---|---|---|---|"]
                for output in plain["accuracy"]["pairs"][0]["iterations"][0]["outputs"]:
                    simple = output.get("simple") or {}
                    lines.append(f"| {output['output0']} | {output.get('dtype0', '?')} | {output.get('shape0', '?')} | "
                                 f"{number(simple.get('max_absdiff'))} | {number(simple.get('median_absdiff'))} | "
                                 f"{number(simple.get('max_reldiff'))} |")
                    if simple.get("max_absdiff") is not None:
                        worst = max(worst or 0.0, simple["max_absdiff"])
            lines.append("")
            first_label = "-"
            if layers is None:
                divergence = f"layerwise run failed: `{layer_error}`"
            elif not layers.get("layerwise"):
                divergence = "layerwise run compared no tensors"
            else:
                pair = layers["layerwise"][0]
                first = pair.get("first_divergence")
                if first:
                    first_label = f"{first['tensor']} [{first['op']}]"
                    divergence = (f"`{first['tensor']}` from node `{first['node']}` [{first['op']}], order "
                                  f"{first['order']}: max abs error {number(first['max_absdiff'])}, "
                                  f"{first['mismatch_count']} of {first['element_count']} element(s) beyond atol="
                                  f"{args.atol}, rtol={args.rtol}")
                else:
                    divergence = f"none: every tensor within atol={args.atol}, rtol={args.rtol}"
                divergence += f" ({pair['compared']} tensor(s) compared, {pair['failing']} beyond)"
            lines += [f"First divergent tensor (layerwise, mark all): {divergence}", ""]
            sections.append("\n".join(lines))
            summary.append(f"| {name} | {number(worst) if plain else 'run failed'} | "
                           f"{first_label} |")
    header = f"""# OpenVINO at bf16: error against the reference interpreter

Measured, not asserted: `bench/openvino_bf16_table.py` ran every shared and example model that
OpenVINO converts through `parity run M --ref --openvino --ov-precision bf16` and wrote this page.
No test fails on these numbers; they say how far OpenVINO's bf16 inference moves each model's
outputs from the float32 reference, and where a layerwise run first exceeds a bf16-scale
tolerance. Regenerate with

```
python bench/openvino_bf16_table.py --build build/release
```

Measured with OpenVINO {openvino.get_version()} on {cpu_flags()}, {platform.machine()},
Parity's data loader (seed 1, one iteration, the shapes and value ranges shown in each model's
commands). `silero_vad_v5.onnx` is left out: OpenVINO's ONNX frontend cannot convert it ({OPENVINO_CANNOT_CONVERT['silero_vad_v5.onnx']}).

- **max / median abs error**: per graph output, from the plain run's `--report` (no tensors marked,
  so OpenVINO fuses as it would in deployment).
- **first divergent tensor**: from the layerwise run (`--onnx-outputs mark all --ov-outputs mark
  all`, atol={args.atol}, rtol={args.rtol}), the first tensor in topological order beyond both
  tolerances. Marking every tensor keeps OpenVINO from fusing them away, so that run's kernels
  differ from the plain run's. At run's default tolerances (1e-5) a bf16 run diverges at once
  (`small_cnn`: its first Conv, 8161 of 8192 elements), hence the bf16-scale tolerance.
- **plain vs marked**: how far `--ov-outputs mark all` moves the final outputs against the plain run
  (per model, f32 and bf16), and the fusion-preserving `--ov-outputs mark fused` that leaves them
  bit-identical, are in [openvino-layerwise.md](openvino-layerwise.md)
  (`python bench/openvino_mark_all_drift.py`).

## Summary

| model | worst max abs error over outputs | first divergent tensor (layerwise) |
|---|---|---|
""" + "\n".join(summary) + "\n\n## Per model\n\n"
    with open(args.output, "w") as file:
        file.write(header + "\n".join(sections))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
