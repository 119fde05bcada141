"""`parity run` end to end: exit codes, runner order, files exchanged with Polygraphy both ways
(--save-inputs, --save-outputs, --load-outputs), the JSON report, layerwise first divergence and
bad input.

Polygraphy (the `polygraphy` package in .venv) runs as a peer in the same test: its files are
read by Parity and Parity's files are read by Polygraphy.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import REPO_ROOT, lines_with_prefix

SHARED_MODELS = (REPO_ROOT / ".." / "shared" / "models").resolve()
RUN_TIMEOUT = 180


def polygraphy_exe() -> str:
    exe = Path(sys.executable).parent / "polygraphy"
    if exe.is_file():
        return str(exe)
    found = shutil.which("polygraphy")
    if not found:
        pytest.fail("the polygraphy command is not installed (scripts/setup.sh installs it into .venv)",
                    pytrace=False)
    return found


def polygraphy(*args, cwd=None, expect=0):
    completed = subprocess.run([polygraphy_exe(), *[str(a) for a in args]], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT, cwd=cwd,
                               env=dict(os.environ, NO_COLOR="1"))
    output = completed.stdout.decode(errors="replace")
    if expect is not None:
        assert completed.returncode == expect, f"polygraphy {' '.join(map(str, args))}\n{output[-4000:]}"
    return completed.returncode, output


def load_polygraphy_json(path):
    """Reads a file with Polygraphy's own JSON loader (RunResults, input lists)."""
    from polygraphy.json import load_json
    return load_json(str(path))


def single_error_line(run):
    errors = lines_with_prefix(run.output, "[E] ")
    assert len(errors) == 1, f"expected exactly one [E] line\n{run.describe()}"
    assert not run.crash_markers(), run.describe()
    return errors[0]


# ---- models built here ----

def chain_model(path):
    """x -> Add(+1) 'add' -> Mul(*2) 'mul' -> Tanh 'tanh' -> Sigmoid 'sig' -> y."""
    nodes = [
        helper.make_node("Add", ["x", "one"], ["add_out"], name="add"),
        helper.make_node("Mul", ["add_out", "two"], ["mul_out"], name="mul"),
        helper.make_node("Tanh", ["mul_out"], ["tanh_out"], name="tanh"),
        helper.make_node("Sigmoid", ["tanh_out"], ["y"], name="sig"),
    ]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        initializer=[numpy_helper.from_array(np.array(1.0, np.float32), "one"),
                     numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return Path(path)


def accumulation_model(path):
    """y = ReduceSum(Tanh(x @ w)) over 1024-long dot products: float32 and float64 accumulation
    disagree in the last bits, so fp64 reference vs ONNX Runtime fails at zero tolerance."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
        helper.make_node("Tanh", ["mm"], ["t"], name="tanh"),
        helper.make_node("ReduceSum", ["t"], ["y"], name="reduce", keepdims=1),
    ]
    graph = helper.make_graph(
        nodes, "accumulate", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array((rng.standard_normal((1024, 8)) * 0.1).astype(np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return Path(path)


@pytest.fixture(scope="module")
def small_cnn(examples_dir):
    return examples_dir / "small_cnn.onnx"


# ---- exit codes, order, log ----

def test_ref_vs_onnxrt_passes_with_polygraphy_style_log(run_parity, small_cnn):
    run = run_parity("run", small_cnn, "--ref", "--onnxrt", "--atol", "1e-4", "--rtol", "1e-3", timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    info = lines_with_prefix(run.output, "[I] ")
    activations = [line for line in info if "| Activating and starting inference" in line]
    assert len(activations) == 2 and activations[0].startswith("[I] ref-runner-N0-") \
        and activations[1].startswith("[I] onnxrt-runner-N0-"), run.describe()
    assert any("| Completed 1 iteration(s) in" in line and "Average inference time:" in line
               and line.startswith("[I] ref-runner-N0-") for line in info), run.describe()
    assert "---- Inference Input(s) ----" in run.output and "{image [dtype=float32, shape=(1, 3, 32, 32)]}" in run.output
    assert any(line.startswith("[I] Accuracy Comparison | ref-runner-N0-") and "vs. onnxrt-runner-N0-" in line
               for line in info), run.describe()
    assert any("Accuracy Summary |" in line and "Passed: 1/1 iterations | Pass Rate: 100.0%" in line
               for line in info), run.describe()
    assert info[-1].startswith("[I] PASSED | Runtime: ") and "| Command: " in info[-1], run.describe()
    assert not lines_with_prefix(run.output, "[E] ")


def test_runners_run_in_command_line_order(run_parity, small_cnn):
    run = run_parity("run", small_cnn, "--onnxrt", "--ref", "--onnxrt", "--atol", "1e-4", "--rtol", "1e-3",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    starts = [line.split()[1] for line in lines_with_prefix(run.output, "[I] ")
              if "| Activating and starting inference" in line]
    assert [s.split("-N")[0] for s in starts] == ["onnxrt-runner", "ref-runner", "onnxrt-runner"], starts
    assert starts[2].startswith("onnxrt-runner-N1-")
    pairs = [line for line in lines_with_prefix(run.output, "[I] ") if line.startswith("[I] Accuracy Comparison |")]
    assert len(pairs) == 2 and "onnxrt-runner-N0" in pairs[0] and "vs. ref-runner-N0" in pairs[0] \
        and "ref-runner-N0" in pairs[1] and "vs. onnxrt-runner-N1" in pairs[1], pairs


def test_compare_to_first_compares_every_runner_with_it(run_parity, small_cnn):
    run = run_parity("run", small_cnn, "--ref", "--onnxrt", "--onnxrt", "--compare-to", "first",
                     "--atol", "1e-4", "--rtol", "1e-3", timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    pairs = [line for line in lines_with_prefix(run.output, "[I] ") if line.startswith("[I] Accuracy Comparison |")]
    assert len(pairs) == 2 and all(line.rstrip().split(" vs. ")[1].startswith("ref-runner-N0") for line in pairs), pairs


def test_fp64_reference_vs_onnxrt_fails_at_zero_tolerance(run_parity, tmp_path):
    model = accumulation_model(tmp_path / "accumulate.onnx")
    run = run_parity("run", model, "--ref", "--ref-precision", "fp64", "--onnxrt", "--atol", "0", "--rtol", "0",
                     "--val-range", "[0,1]", timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    errors = lines_with_prefix(run.output, "[E] ")
    assert any("FAILED | Output: 'y'" in line for line in errors), run.describe()
    assert errors[-1].startswith("[E] FAILED | Runtime: "), run.describe()
    assert not run.crash_markers()
    # The same two runners agree once the tolerance covers float32 accumulation error.
    ok = run_parity("run", model, "--ref", "--ref-precision", "fp64", "--onnxrt", "--atol", "1e-4", timeout=RUN_TIMEOUT)
    assert ok.returncode == 0, ok.describe()


# ---- inputs: same seed, same bytes as Polygraphy ----

SAVE_INPUT_CASES = [
    ("small_cnn", "examples", "small_cnn.onnx", ["--seed", "7", "--iterations", "2"]),
    ("small_transformer", "examples", "small_transformer.onnx", ["--val-range", "[-2,2]"]),
    ("small_if", "examples", "small_if.onnx", ["--input-shapes", "x:[3,4]", "--seed", "11"]),
    ("silero_vad_v5", "shared", "silero_vad_v5.onnx",
     ["--input-shapes", "input:[1,512]", "--val-range", "sr:[16000,16000]", "input:[-1,1]"]),
    ("magika", "shared", "magika_standard_v3_3.onnx", ["--val-range", "[0,256]", "--seed", "3"]),
]


@pytest.mark.parametrize("case", SAVE_INPUT_CASES, ids=[c[0] for c in SAVE_INPUT_CASES])
def test_save_inputs_matches_polygraphy_byte_for_byte(run_parity, examples_dir, tmp_path, case):
    _, where, filename, flags = case
    model = (examples_dir if where == "examples" else SHARED_MODELS) / filename
    ours, theirs = tmp_path / "parity_inputs.json", tmp_path / "polygraphy_inputs.json"
    run = run_parity("run", model, "--onnxrt", "--save-inputs", ours, *flags, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    polygraphy("run", model, "--onnxrt", "--save-inputs", theirs, *flags)
    assert ours.read_bytes() == theirs.read_bytes()
    loaded = load_polygraphy_json(ours)
    assert isinstance(loaded, list) and len(loaded) == (2 if "--iterations" in flags else 1)


# ---- outputs: both ways ----

def test_parity_outputs_load_in_polygraphy(run_parity, small_cnn, tmp_path):
    inputs, ours = tmp_path / "inputs.json", tmp_path / "parity_outputs.json"
    run = run_parity("run", small_cnn, "--ref", "--onnxrt", "--atol", "1e-4", "--rtol", "1e-3", "--save-inputs", inputs,
                     "--save-outputs", ours, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    # Python's json.dumps(indent=4) layout, byte for byte, as Polygraphy writes it.
    assert json.dumps(json.loads(ours.read_text()), indent=4) == ours.read_text()
    results = load_polygraphy_json(ours)
    assert type(results).__name__ == "RunResults"
    _, shown = polygraphy("inspect", "data", ours)
    assert "==== Run Results (2 runners) ====" in shown and "probabilities [dtype=float32, shape=(1, 10)]" in shown
    names = list(results.keys())
    assert len(names) == 2 and names[0].startswith("ref-runner-N0-") and names[1].startswith("onnxrt-runner-N0-")
    iteration = results[names[1]][0]
    assert list(iteration.keys()) == ["probabilities"]
    assert iteration.runtime > 0 and iteration.runner_name == names[1]
    # Polygraphy's ONNX Runtime on the same inputs gives the same numbers as Parity's.
    import onnxruntime as ort
    feed = load_polygraphy_json(inputs)[0]
    session = ort.InferenceSession(str(small_cnn), providers=["CPUExecutionProvider"])
    expected = session.run(None, feed)
    for index, output in enumerate(session.get_outputs()):
        np.testing.assert_allclose(iteration[output.name], expected[index], rtol=1e-6, atol=1e-7)
    # Polygraphy compares its own run against Parity's saved results and passes.
    polygraphy("run", small_cnn, "--onnxrt", "--load-inputs", inputs, "--load-outputs", ours,
               "--atol", "1e-4", "--rtol", "1e-3")


def large_weight_model(path):
    """y = Relu(x @ w1 + b) @ w2 with w1, w2 of 512 KB and 256 KB (above the 64 KiB from which runners
    read weights straight from the model file) and a small b, so the large ones sit at unaligned
    offsets in the protobuf."""
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("Add", ["h", "b"], ["hb"], name="bias"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2"),
    ]
    graph = helper.make_graph(
        nodes, "large_weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 128])],
        initializer=[numpy_helper.from_array(np.array([0.25, -0.5, 1.0], np.float32)[:1].repeat(512), "b"),
                     numpy_helper.from_array((rng.standard_normal((256, 512)) * 0.05).astype(np.float32), "w1"),
                     numpy_helper.from_array((rng.standard_normal((512, 128)) * 0.05).astype(np.float32), "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return Path(path)


@pytest.mark.parametrize("case", ["large_weights", "ppocrv4_det", "magika_standard_v3_3", "blazeface_front_128"])
def test_weights_read_from_the_model_file_give_the_same_outputs(run_parity, tmp_path, case):
    """Runners leave large weights in the model file and read them when needed: outputs must equal
    ONNX Runtime's Python package on the same inputs (same library), and ref must agree with it."""
    import onnxruntime as ort
    if case == "large_weights":
        model, extra = large_weight_model(tmp_path / "large.onnx"), []
    else:
        model = SHARED_MODELS / f"{case}.onnx"
        extra = ["--input-shapes", "x:[1,3,96,96]"] if case == "ppocrv4_det" else []
    inputs, outputs = tmp_path / "inputs.json", tmp_path / "outputs.json"
    # magika's random inputs put ref and ONNX Runtime 2e-3 apart (the same with the weights parsed
    # whole); wrong weight bytes would be far off.
    run = run_parity("run", model, "--ref", "--onnxrt", "--atol", "1e-2", "--rtol", "1e-2", *extra,
                     "--save-inputs", inputs, "--save-outputs", outputs, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    results = load_polygraphy_json(outputs)
    ref_name, ort_name = list(results.keys())
    feed = load_polygraphy_json(inputs)[0]
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    expected = dict(zip([o.name for o in session.get_outputs()], session.run(None, feed)))
    assert set(results[ort_name][0].keys()) == set(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(results[ort_name][0][name], value, rtol=1e-6, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(results[ref_name][0][name], value, rtol=1e-2, atol=5e-3, err_msg=name)


def test_polygraphy_outputs_load_in_parity_and_tampering_fails(run_parity, small_cnn, tmp_path):
    inputs, theirs = tmp_path / "inputs.json", tmp_path / "polygraphy_outputs.json"
    polygraphy("run", small_cnn, "--onnxrt", "--save-inputs", inputs, "--save-outputs", theirs)
    same = run_parity("run", small_cnn, "--onnxrt", "--load-inputs", inputs, "--load-outputs", theirs,
                      "--atol", "1e-6", "--rtol", "1e-6", timeout=RUN_TIMEOUT)
    assert same.returncode == 0, same.describe()
    assert any("vs. onnxrt-runner-N0-" in line and line.startswith("[I] Accuracy Comparison | onnxrt-runner-N0-")
               for line in lines_with_prefix(same.output, "[I] ")), same.describe()
    ref = run_parity("run", small_cnn, "--ref", "--load-inputs", inputs, "--load-outputs", theirs,
                     "--atol", "1e-4", "--rtol", "1e-3", timeout=RUN_TIMEOUT)
    assert ref.returncode == 0, ref.describe()

    from polygraphy.comparator import RunResults
    results = RunResults.load(str(theirs))
    name = list(results.keys())[0]
    output = list(results[name][0].keys())[0]
    results[name][0][output] = results[name][0][output] * 1.5 + 0.25
    tampered = tmp_path / "tampered.json"
    results.save(str(tampered))
    bad = run_parity("run", small_cnn, "--onnxrt", "--load-inputs", inputs, "--load-outputs", tampered,
                     timeout=RUN_TIMEOUT)
    assert bad.returncode == 1, bad.describe()
    assert any(f"FAILED | Output: '{output}'" in line for line in lines_with_prefix(bad.output, "[E] ")), bad.describe()
    assert lines_with_prefix(bad.output, "[E] ")[-1].startswith("[E] FAILED | Runtime: ")


def test_saved_outputs_round_trip_through_parity(run_parity, small_cnn, tmp_path):
    saved = tmp_path / "out.json"
    first = run_parity("run", small_cnn, "--onnxrt", "--save-outputs", saved, "--seed", "5", timeout=RUN_TIMEOUT)
    assert first.returncode == 0, first.describe()
    again = run_parity("run", small_cnn, "--onnxrt", "--seed", "5", "--load-outputs", saved, "--atol", "0",
                       "--rtol", "0", timeout=RUN_TIMEOUT)
    assert again.returncode == 0, again.describe()


# ---- report ----

def test_report_describes_the_comparison(run_parity, tmp_path):
    model = accumulation_model(tmp_path / "accumulate.onnx")
    report = tmp_path / "report.json"
    run = run_parity("run", model, "--ref", "--ref-precision", "fp64", "--onnxrt", "--atol", "0", "--rtol", "0",
                     "--report", report, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    data = json.loads(report.read_text())
    assert data["passed"] is False
    text = json.dumps(data)
    assert "ref-runner-N0-" in text and "onnxrt-runner-N0-" in text and '"y"' in text
    saved = tmp_path / "out.json"
    ok = run_parity("run", model, "--ref", "--ref-precision", "fp64", "--onnxrt", "--atol", "1e-4",
                    "--report", report, "--save-outputs", saved, timeout=RUN_TIMEOUT)
    assert ok.returncode == 0, ok.describe()
    data = json.loads(report.read_text())
    assert data["passed"] is True
    # The report's largest error is the one in the saved outputs.
    results = load_polygraphy_json(saved)
    a, b = (results[name][0]["y"].astype(np.float64) for name in results.keys())
    max_abs = float(np.max(np.abs(a - b)))
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "max_absdiff" and isinstance(value, (int, float)):
                    found.append(value)
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(data)
    assert found and any(abs(v - max_abs) <= 1e-9 * max(1.0, max_abs) for v in found), (found, max_abs)


# ---- layerwise ----

def test_layerwise_names_first_divergent_node(run_parity, tmp_path):
    model = chain_model(tmp_path / "chain.onnx")
    inputs, golden = tmp_path / "inputs.json", tmp_path / "golden.json"
    polygraphy("run", model, "--onnxrt", "--onnx-outputs", "mark", "all", "--save-inputs", inputs,
               "--save-outputs", golden)
    clean = run_parity("run", model, "--ref", "--onnx-outputs", "mark", "all", "--load-inputs", inputs,
                       "--load-outputs", golden, "--atol", "1e-5", "--rtol", "1e-4", timeout=RUN_TIMEOUT)
    assert clean.returncode == 0, clean.describe()

    from polygraphy.comparator import RunResults
    results = RunResults.load(str(golden))
    name = list(results.keys())[0]
    assert {"add_out", "mul_out", "tanh_out", "y"} <= set(results[name][0].keys())
    # Perturb the Mul's output and, later in the graph, the final output: the first divergence
    # in topological order is the Mul.
    results[name][0]["mul_out"] = results[name][0]["mul_out"] + 0.5
    results[name][0]["y"] = results[name][0]["y"] * 0.5
    perturbed = tmp_path / "perturbed.json"
    results.save(str(perturbed))
    report = tmp_path / "report.json"
    run = run_parity("run", model, "--ref", "--onnx-outputs", "mark", "all", "--load-inputs", inputs,
                     "--load-outputs", perturbed, "--report", report, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    first = [line for line in lines_with_prefix(run.output, "[E] ") if "First divergence" in line]
    assert len(first) == 1 and "tensor 'mul_out' produced by node 'mul' [Op: Mul]" in first[0], run.describe()
    data = json.loads(report.read_text())
    layerwise = data["layerwise"][0]
    assert layerwise["first_divergence"]["tensor"] == "mul_out"
    assert layerwise["first_divergence"]["node"] == "mul" and layerwise["first_divergence"]["op"] == "Mul"
    assert {e["tensor"] for e in layerwise["worst"] if not e["passed"]} == {"mul_out", "y"}
    assert layerwise["failing"] == 2 and layerwise["compared"] == 4


def test_layerwise_streamed_and_held_agree(run_parity, tmp_path):
    """Two live runners compared tensor by tensor (streamed through the spill file) give the same
    first divergence as the whole-output comparison that --save-outputs forces."""
    model = accumulation_model(tmp_path / "accumulate.onnx")
    flags = ["--ref", "--ref-precision", "fp64", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "0",
             "--rtol", "0"]
    streamed_report, held_report = tmp_path / "streamed.json", tmp_path / "held.json"
    streamed = run_parity("run", model, *flags, "--report", streamed_report, timeout=RUN_TIMEOUT)
    held = run_parity("run", model, *flags, "--report", held_report, "--save-outputs", tmp_path / "out.json",
                      timeout=RUN_TIMEOUT)
    assert streamed.returncode == 1 and held.returncode == 1, streamed.describe() + held.describe()
    assert "streamed tensor by tensor" in streamed.output and "streamed tensor by tensor" not in held.output
    s, h = (json.loads(p.read_text())["layerwise"][0] for p in (streamed_report, held_report))
    assert s["first_divergence"]["tensor"] == h["first_divergence"]["tensor"]
    assert s["first_divergence"]["node"] == h["first_divergence"]["node"] == "matmul"
    assert s["first_divergence"]["op"] == h["first_divergence"]["op"] == "MatMul"
    assert s["compared"] == h["compared"] == 3
    assert s["spilled_bytes"] > 0
    # With the tolerance loosened, every tensor matches.
    ok = run_parity("run", model, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "1e-4",
                    timeout=RUN_TIMEOUT)
    assert ok.returncode == 0, ok.describe()
    assert any("PASSED | Every tensor is within tolerance" in line for line in lines_with_prefix(ok.output, "[I] "))


def test_layerwise_named_outputs_from_file(run_parity, tmp_path):
    model = chain_model(tmp_path / "chain.onnx")
    names = tmp_path / "names.txt"
    names.write_text("mul_out\n# a comment\ntanh_out\n")
    report = tmp_path / "report.json"
    run = run_parity("run", model, "--ref", "--onnxrt", "--onnx-outputs", f"@{names}", "--report", report,
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    layerwise = json.loads(report.read_text())["layerwise"][0]
    assert layerwise["compared"] == 3  # mul_out, tanh_out and the graph output y


# ---- bad input ----

def test_unknown_input_in_input_shapes(run_parity, small_cnn, tmp_path):
    saved_in, saved_out = tmp_path / "in.json", tmp_path / "out.json"
    run = run_parity("run", small_cnn, "--onnxrt", "--input-shapes", "imgae:[1,3,32,32]", "--save-inputs", saved_in,
                     "--save-outputs", saved_out, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    line = single_error_line(run)
    assert "imgae" in line and "image" in line
    assert not saved_in.exists() and not saved_out.exists()
    assert not list(tmp_path.iterdir())


def test_malformed_load_inputs(run_parity, small_cnn, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"image": {"array": "k05VTVBZ", "polygraphy_class": "ndarray"}')
    saved = tmp_path / "out.json"
    run = run_parity("run", small_cnn, "--onnxrt", "--load-inputs", bad, "--save-outputs", saved, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    line = single_error_line(run)
    assert str(bad) in line and "JSON" in line
    assert not saved.exists()


def test_wrong_dtype_in_load_inputs(run_parity, small_cnn, tmp_path):
    npz = tmp_path / "inputs.npz"
    np.savez(npz, image=np.zeros((1, 3, 32, 32), np.float64))
    saved_in = tmp_path / "saved.json"
    run = run_parity("run", small_cnn, "--ref", "--load-inputs", npz, "--save-inputs", saved_in, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    line = single_error_line(run)
    assert "image" in line and "float64" in line and "float32" in line
    assert not saved_in.exists()


def test_malformed_load_outputs_and_bad_flags(run_parity, small_cnn, tmp_path):
    bad = tmp_path / "results.json"
    bad.write_text('{"lst": [["r", [{"outputs": {}}]]], "polygraphy_class": "RunResults"}')
    run = run_parity("run", small_cnn, "--onnxrt", "--load-outputs", bad, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    line = single_error_line(run)
    assert str(bad) in line
    for flags, needle in ((["--atol", "abc"], "--atol"), (["--onnx-outputs", "no_such_tensor"], "no_such_tensor"), (["--val-range", "image:[1]"], "--val-range"),
                          (["--check-error-stat", "worst"], "worst"), (["--compare-to", "trt"], "--compare-to"),
                          (["--postprocess", "top-x"], "--postprocess")):
        run = run_parity("run", small_cnn, "--onnxrt", "--ref", *flags, timeout=RUN_TIMEOUT)
        assert run.returncode == 1, run.describe()
        assert needle in single_error_line(run)


@pytest.fixture(scope="module")
def polygraphy_outputs(small_cnn, tmp_path_factory):
    """small_cnn run by Polygraphy (inputs and outputs), and a copy of the outputs 0.1% off."""
    from polygraphy.comparator import RunResults
    folder = tmp_path_factory.mktemp("polygraphy_outputs")
    inputs, outputs, drifted = folder / "inputs.json", folder / "outputs.json", folder / "drifted.json"
    polygraphy("run", small_cnn, "--onnxrt", "--save-inputs", inputs, "--save-outputs", outputs)
    results = RunResults.load(str(outputs))
    name = list(results.keys())[0]
    results[name][0]["probabilities"] = results[name][0]["probabilities"] * np.float32(1.001)
    results[name][0].runner_name = "drifted-runner"
    renamed = RunResults()
    renamed.append(("drifted-runner", results[name]))
    renamed.save(str(drifted))
    return {"inputs": inputs, "outputs": outputs, "drifted": drifted}


INVALID_BASE64 = [
    ("bad-character", "k05VTVBZ!!!!"),       # '!' is not in the base64 alphabet
    ("bad-padding", "k05VTVBZAQB"),          # 11 characters: not a whole number of quanta
    ("padding-inside", "k05V=TVBZAQB"),      # '=' before the end
]


@pytest.mark.parametrize("array", [a for _, a in INVALID_BASE64], ids=[i for i, _ in INVALID_BASE64])
def test_load_outputs_with_invalid_base64_array(run_parity, small_cnn, polygraphy_outputs, tmp_path, array):
    """One [E] line naming the file and the output; exit 1; nothing run and no file written, even
    with --save-inputs/--save-outputs/--report (the loaded files are read before anything runs)."""
    data = json.loads(polygraphy_outputs["drifted"].read_text())
    data["lst"][0][1][0]["outputs"]["probabilities"]["values"]["array"] = array
    bad = tmp_path / "bad_results.json"
    bad.write_text(json.dumps(data, indent=4))
    written = {name: tmp_path / f"{name}.json" for name in ("saved_inputs", "saved_outputs", "report")}
    run = run_parity("run", small_cnn, "--onnxrt", "--load-outputs", polygraphy_outputs["outputs"], bad,
                     "--save-inputs", written["saved_inputs"], "--save-outputs", written["saved_outputs"],
                     "--report", written["report"], timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    line = single_error_line(run)
    assert str(bad) in line and "'probabilities'" in line and "base64" in line.lower(), run.describe()
    assert str(polygraphy_outputs["outputs"]) not in line, run.describe()  # the good file is not blamed
    assert "Activating and starting inference" not in run.output, run.describe()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad_results.json"], run.describe()


def test_tolerances_for_unknown_outputs_warn_like_polygraphy(run_parity, small_cnn, polygraphy_outputs):
    """--atol/--rtol/--check-error-stat/--error-quantile naming no output: Polygraphy warns
    ("Extra items in the ... dictionary") and compares with the defaults; so does Parity."""
    flags = ["--load-outputs", polygraphy_outputs["outputs"], polygraphy_outputs["drifted"],
             "--atol", "probs:1", "--rtol", "probs:1", "--check-error-stat", "probs:mean",
             "--error-quantile", "probs:0.5"]
    code, theirs = polygraphy("run", small_cnn, *flags, expect=None)
    run = run_parity("run", small_cnn, *flags, timeout=RUN_TIMEOUT)
    assert code == 1 and run.returncode == 1, run.describe() + "\n--- Polygraphy ---\n" + theirs
    their_warnings = [line.strip() for line in lines_with_prefix(theirs, "[W] ") if "Extra items" in line]
    our_warnings = [line.strip() for line in lines_with_prefix(run.output, "[W] ") if "Extra items" in line]
    assert len(their_warnings) == 4 and all("{'probs'}" in line for line in their_warnings), theirs
    assert our_warnings == their_warnings, run.describe()
    # The comparison still ran, with the default tolerances: the 0.1% drift fails them.
    default = "Tolerance: [abs=1e-05, rel=1e-05] | Checking elemwise error"
    assert default in theirs and default in run.output, run.describe()
    assert any("FAILED | Output: 'probabilities'" in line for line in lines_with_prefix(run.output, "[E] "))
    assert not run.crash_markers(), run.describe()
    # The same tolerance under the output's real name is used (and the drift passes it).
    ok = run_parity("run", small_cnn, "--load-outputs", polygraphy_outputs["outputs"], polygraphy_outputs["drifted"],
                    "--atol", "probabilities:1", timeout=RUN_TIMEOUT)
    assert ok.returncode == 0 and "Extra items" not in ok.output, ok.describe()


@pytest.mark.parametrize("flag", ["--trt", "--tensorrt-typo", "--onnxrtt", "--tf", "--pluginref"])
def test_unknown_runner_flag(run_parity, small_cnn, tmp_path, flag):
    """Runners Parity does not have (TensorRT, TensorFlow, Polygraphy's plugin reference) and typos:
    a clear error naming the flag, exit 1, nothing run, no crash."""
    saved = tmp_path / "out.json"
    run = run_parity("run", small_cnn, "--onnxrt", flag, "--save-outputs", saved, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    errors = lines_with_prefix(run.output, "[E] ")
    assert errors and flag in errors[0], run.describe()
    assert not run.crash_markers() and "RUNNING" not in run.output, run.describe()
    assert len(run.output.strip().splitlines()) <= 3, run.describe()
    assert not saved.exists()


MISSPELLED_INPUTS = [
    # (id, model, flags, bad name, suggestion)
    ("input-shapes", "small_cnn", ["--input-shapes", "imgae:[1,3,32,32]"], "imgae", "image"),
    ("val-range", "small_cnn", ["--val-range", "Image:[0,1]"], "Image", "image"),
    ("val-range-multi-input", "silero_vad_v5",
     ["--input-shapes", "input:[1,512]", "state:[2,1,128]", "--val-range", "sr:[16000,16000]", "stat:[-1,1]"],
     "stat", "state"),
    ("load-inputs-npz", "small_cnn", ["npz"], "imgae", "image"),
    ("load-inputs-json", "small_cnn", ["json"], "imag", "image"),
]


@pytest.mark.parametrize("case", MISSPELLED_INPUTS, ids=[c[0] for c in MISSPELLED_INPUTS])
def test_misspelled_input_name_suggests_the_real_one(run_parity, small_cnn, tmp_path, case):
    _, model_name, flags, bad, real = case
    model = small_cnn if model_name == "small_cnn" else SHARED_MODELS / f"{model_name}.onnx"
    if flags == ["npz"]:
        path = tmp_path / "inputs.npz"
        np.savez(path, **{bad: np.zeros((1, 3, 32, 32), np.float32)})
        flags = ["--load-inputs", path]
    elif flags == ["json"]:
        from polygraphy.json import save_json
        path = tmp_path / "inputs.json"
        save_json([{bad: np.zeros((1, 3, 32, 32), np.float32)}], str(path))
        flags = ["--load-inputs", path]
    saved_in, saved_out = tmp_path / "saved_in.json", tmp_path / "saved_out.json"
    run = run_parity("run", model, "--onnxrt", *flags, "--save-inputs", saved_in, "--save-outputs", saved_out,
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    line = single_error_line(run)
    assert f"'{bad}'" in line and f"did you mean '{real}'?" in line, run.describe()
    assert not saved_in.exists() and not saved_out.exists()


def test_unknown_input_name_far_from_any_lists_the_inputs(run_parity, small_cnn):
    run = run_parity("run", small_cnn, "--onnxrt", "--val-range", "completely_different:[0,1]", timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    line = single_error_line(run)
    assert "--val-range" in line and "'completely_different'" in line and "(inputs: image)" in line, run.describe()
    assert "did you mean" not in line, run.describe()


def test_postprocess_top_k_and_indices(run_parity, small_cnn):
    run = run_parity("run", small_cnn, "--ref", "--onnxrt", "--postprocess", "top-3", "--compare", "indices",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "Applying post-processing to outputs" in run.output
    assert "Difference is within index tolerance" in run.output


def test_validate_reports_infinities(run_parity, tmp_path):
    """Log(x) with x drawn from [0, 0] is -inf everywhere: --validate fails, and passes on [1, 2]."""
    graph = helper.make_graph(
        [helper.make_node("Log", ["x"], ["y"], name="log")], "log",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "log.onnx"
    onnx.save(model, path)
    bad = run_parity("run", path, "--ref", "--validate", "--val-range", "[0,0]", timeout=RUN_TIMEOUT)
    assert bad.returncode == 1, bad.describe()
    errors = lines_with_prefix(bad.output, "[E] ")
    assert any("Inf Detected" in line for line in errors) and any("FAILED | Output Validation" in line
                                                                  for line in errors), bad.describe()
    good = run_parity("run", path, "--ref", "--onnxrt", "--validate", "--val-range", "[1,2]", timeout=RUN_TIMEOUT)
    assert good.returncode == 0, good.describe()
    assert any("PASSED | Output Validation" in line for line in lines_with_prefix(good.output, "[I] "))


def test_distance_and_quality_tolerances_on_the_command_line(run_parity, small_cnn):
    """--l2-tolerance/--cosine-similarity-threshold (distance) and --psnr-tolerance/--snr-tolerance
    (quality), global or per output: the verdict follows the measured value against the given one."""
    import re

    def metric(output, label):
        """The measured value on the '<label>: value (...) | PASSED/FAILED' line."""
        found = re.search(rf"\] +{re.escape(label)}: (\S+) ", output)
        assert found, f"no '{label}:' line in\n{output}"
        return float(found.group(1))

    base = ("run", small_cnn, "--ref", "--onnxrt")
    measured = run_parity(*base, "--compare", "distance", timeout=RUN_TIMEOUT)
    l2 = metric(measured.output, "L2 Norm")
    assert 0 < l2 < 1e-3, measured.describe()
    for value, expect in ((l2 / 2, 1), (l2 * 2, 0)):
        run = run_parity(*base, "--compare", "distance", "--l2-tolerance", f"probabilities:{value!r}", timeout=RUN_TIMEOUT)
        assert run.returncode == expect, run.describe()
        shown = float(run.output.split("Tolerance: [L2=")[1].split(",")[0])
        assert shown == pytest.approx(value, rel=1e-4), run.describe()
    run = run_parity(*base, "--compare", "distance", "--l2-tolerance", "1", "--cosine-similarity-threshold", "1.0",
                     timeout=RUN_TIMEOUT)
    cosine = metric(run.output, "Cosine Similarity")
    assert run.returncode == (0 if cosine >= 1.0 else 1), run.describe()

    measured = run_parity(*base, "--compare", "quality", timeout=RUN_TIMEOUT)
    psnr, snr = metric(measured.output, "PSNR"), metric(measured.output, "SNR")
    assert measured.returncode == 0 and psnr > 30 and snr > 20, measured.describe()
    for flags, expect in ((("--psnr-tolerance", f"{psnr + 1}"), 1), (("--psnr-tolerance", f"{psnr - 1}"), 0),
                          (("--snr-tolerance", f"probabilities:{snr + 1}"), 1), (("--snr-tolerance", f"{snr - 1}"), 0)):
        run = run_parity(*base, "--compare", "quality", *flags, timeout=RUN_TIMEOUT)
        assert run.returncode == expect, run.describe()

    bad = run_parity(*base, "--compare", "distance", "--cosine-similarity-threshold", "2", timeout=RUN_TIMEOUT)
    assert bad.returncode == 1 and "--cosine-similarity-threshold must be in [-1, 1]" in single_error_line(bad)
    ignored = run_parity(*base, "--psnr-tolerance", "3", timeout=RUN_TIMEOUT)
    assert ignored.returncode == 0
    assert "--psnr-tolerance applies to --compare quality only" in ignored.output


def test_exclude_outputs_and_warm_up(run_parity, tmp_path):
    """--onnx-exclude-outputs leaves tensors out of the comparison and the saved results (streamed or
    held); a misspelled name is an error with a hint; --warm-up runs untimed inferences first."""
    model = accumulation_model(tmp_path / "accumulate.onnx")
    flags = ["--ref", "--ref-precision", "fp64", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "0",
             "--rtol", "0"]
    baseline_report = tmp_path / "all.json"
    baseline = run_parity("run", model, *flags, "--report", baseline_report, timeout=RUN_TIMEOUT)
    assert baseline.returncode == 1
    first = json.loads(baseline_report.read_text())["layerwise"][0]["first_divergence"]["tensor"]
    assert first == "mm"
    # Streamed: the excluded tensor is not compared, so the first divergence moves downstream.
    report = tmp_path / "streamed.json"
    run = run_parity("run", model, *flags, "--onnx-exclude-outputs", "mm", "--report", report, timeout=RUN_TIMEOUT)
    layerwise = json.loads(report.read_text())["layerwise"][0]
    assert layerwise["compared"] == 2 and layerwise["first_divergence"]["tensor"] == "t", run.describe()
    assert "'mm'" not in run.output
    # Held (--save-outputs): the saved results lack it too, graph output included when asked.
    saved = tmp_path / "out.json"
    run = run_parity("run", model, *flags, "--onnx-exclude-outputs", "mm", "y", "--save-outputs", saved,
                     timeout=RUN_TIMEOUT)
    results = load_polygraphy_json(saved)
    for name in results.keys():
        assert list(results[name][0].keys()) == ["t"], run.describe()
    # A name no node produces.
    bad = run_parity("run", model, *flags, "--onnx-exclude-outputs", "mn", timeout=RUN_TIMEOUT)
    assert bad.returncode == 1
    line = single_error_line(bad)
    assert "--onnx-exclude-outputs" in line and "'mn'" in line and "did you mean 'mm'?" in line, line
    # --warm-up: untimed runs, then the one timed iteration.
    warm = run_parity("run", model, "--ref", "--onnxrt", "--atol", "1e-4", "--warm-up", "3", timeout=RUN_TIMEOUT)
    assert warm.returncode == 0, warm.describe()
    assert warm.output.count("Running 3 warm-up inference(s)") == 2
    assert warm.output.count("Completed 1 iteration(s)") == 2
    negative = run_parity("run", model, "--ref", "--warm-up", "-1", timeout=RUN_TIMEOUT)
    assert negative.returncode == 1 and "--warm-up" in single_error_line(negative)


def test_validate_checks_every_streamed_tensor(run_parity, tmp_path):
    """A NaN made and then removed inside the graph: the graph output is finite, but --validate on a
    streamed layerwise run checks every tensor and names the first one holding NaN."""
    nodes = [
        helper.make_node("Sub", ["x", "two"], ["shifted"], name="shift"),
        helper.make_node("Log", ["shifted"], ["logged"], name="log"),       # NaN: x - 2 < 0
        helper.make_node("IsNaN", ["logged"], ["is_nan"], name="isnan"),
        helper.make_node("Where", ["is_nan", "zero", "logged"], ["y"], name="clean"),
    ]
    graph = helper.make_graph(
        nodes, "hidden_nan", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(np.array(2.0, np.float32), "two"),
                     numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "hidden_nan.onnx"
    onnx.save(model, path)
    report = tmp_path / "report.json"
    plain = run_parity("run", path, "--ref", "--onnxrt", "--validate", timeout=RUN_TIMEOUT)
    assert plain.returncode == 0, plain.describe()  # the graph output alone is clean
    bad = run_parity("run", path, "--ref", "--onnxrt", "--validate", "--onnx-outputs", "mark", "all",
                     "--report", report, timeout=RUN_TIMEOUT)
    assert bad.returncode == 1, bad.describe()
    failures = [line for line in lines_with_prefix(bad.output, "[E] ") if "Validation (every streamed tensor)" in line]
    assert len(failures) == 2, bad.describe()  # one per runner
    for line in failures:
        assert "1 of 4 tensor(s) hold NaN or Inf" in line and "'logged'" in line and "node 'log', op Log" in line
        assert "NaN: 6, Inf: 0" in line, line
    streamed = json.loads(report.read_text())["streamed_validation"]
    assert [entry["passed"] for entry in streamed] == [False, False]
    assert streamed[0]["nonfinite_tensors"] == [{"tensor": "logged", "iteration": 0, "node": "log", "op": "Log",
                                                  "nan": 6, "inf": 0, "neg_inf": 0}]
    good = run_parity("run", path, "--ref", "--onnxrt", "--validate", "--onnx-outputs", "mark", "all",
                      "--val-range", "[3,4]", timeout=RUN_TIMEOUT)
    assert good.returncode == 0, good.describe()
    assert good.output.count("no NaN or Inf in 4 tensor(s)") == 2


def test_external_data_in_another_folder(run_parity, tmp_path):
    """--external-data-dir: the model's external data lives in another folder; runners (and the
    layerwise bookkeeping, which loads the model again) find it there, and not without the flag."""
    import onnxruntime as ort
    model = onnx.load(large_weight_model(tmp_path / "large.onnx"))
    model_dir, data_dir = tmp_path / "model", tmp_path / "data"
    model_dir.mkdir()
    data_dir.mkdir()
    onnx.save_model(model, data_dir / "m.onnx", save_as_external_data=True, location="weights.bin",
                    size_threshold=1024)
    (data_dir / "m.onnx").rename(model_dir / "m.onnx")
    path = model_dir / "m.onnx"
    missing = run_parity("run", path, "--ref", timeout=RUN_TIMEOUT)
    assert missing.returncode == 1 and "weights.bin" in single_error_line(missing)
    outputs = tmp_path / "out.json"
    run = run_parity("run", path, "--ref", "--onnxrt", "--external-data-dir", data_dir, "--atol", "1e-4",
                     "--save-inputs", tmp_path / "in.json", "--save-outputs", outputs, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    feed = load_polygraphy_json(tmp_path / "in.json")[0]
    expected = ort.InferenceSession(str(tmp_path / "large.onnx"), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    for name, iterations in load_polygraphy_json(outputs).items():
        np.testing.assert_allclose(iterations[0]["y"], expected, rtol=1e-4, atol=1e-5, err_msg=name)
    layerwise = run_parity("run", path, "--ref", "--onnxrt", "--external-data-dir", data_dir, "--onnx-outputs", "mark",
                           "all", "--atol", "1e-4", timeout=RUN_TIMEOUT)
    assert layerwise.returncode == 0, layerwise.describe()
    inspected = run_parity("inspect", "model", path, "--external-data-dir", data_dir, "--show", "weights",
                           timeout=RUN_TIMEOUT)
    assert inspected.returncode == 0, inspected.describe()


def test_data_loader_script(run_parity, small_cnn, tmp_path):
    """--data-loader-script file.py[:func], as Polygraphy's: the feeds it yields are the inputs (the
    same file works for `polygraphy run`, and both tools see the same inputs); its errors come back
    as one [E] line naming the script."""
    script = tmp_path / "loader.py"
    script.write_text(
        "import numpy as np\n"
        "def load_data():\n"
        "    rng = np.random.default_rng(7)\n"
        "    for _ in range(3):\n"
        "        yield {'image': rng.standard_normal((1, 3, 32, 32), dtype=np.float32)}\n"
        "def constant():\n"
        "    return [{'image': np.full((2, 3, 32, 32), 0.5, np.float32)}]\n"
        "def broken():\n"
        "    raise RuntimeError('no data today')\n"
        "def wrong_name():\n"
        "    return [{'imge': np.zeros((1, 3, 32, 32), np.float32)}]\n")
    env = {"PARITY_PYTHON": sys.executable}
    ours, theirs = tmp_path / "parity_inputs.json", tmp_path / "polygraphy_inputs.json"
    run = run_parity("run", small_cnn, "--ref", "--onnxrt", "--atol", "1e-4", "--rtol", "1e-3",
                     "--data-loader-script", script, "--save-inputs", ours, env=env, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "Completed 3 iteration(s)" in run.output
    polygraphy("run", small_cnn, "--onnxrt", "--data-loader-script", script, "--save-inputs", theirs)
    parity_feeds, polygraphy_feeds = load_polygraphy_json(ours), load_polygraphy_json(theirs)
    assert len(parity_feeds) == len(polygraphy_feeds) == 3
    for a, b in zip(parity_feeds, polygraphy_feeds):
        np.testing.assert_array_equal(a["image"], b["image"])
    # script:function, batch 2 from the script's own shapes.
    run = run_parity("run", small_cnn, "--ref", "--data-loader-script", f"{script}:constant", "--save-inputs", ours,
                     env=env, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    (feed,) = load_polygraphy_json(ours)
    assert feed["image"].shape == (2, 3, 32, 32) and np.all(feed["image"] == 0.5)
    # Failures: the script's exception, a missing function, a wrong input name, both input flags.
    for spec, needles in ((f"{script}:broken", ["loader.py", "RuntimeError: no data today"]),
                          (f"{script}:missing", ["defines no 'missing'"]),
                          (f"{script}:wrong_name", ["'imge'", "did you mean 'image'"]),
                          (str(tmp_path / "nowhere.py"), ["nowhere.py", "no such file"])):
        bad = run_parity("run", small_cnn, "--ref", "--data-loader-script", spec, env=env, timeout=RUN_TIMEOUT)
        assert bad.returncode == 1, bad.describe()
        line = single_error_line(bad)
        for needle in needles:
            assert needle in line, line
    both = run_parity("run", small_cnn, "--ref", "--data-loader-script", script, "--load-inputs", ours, env=env,
                      timeout=RUN_TIMEOUT)
    assert both.returncode != 0 and "excludes" in both.output


def test_compare_func_script(run_parity, small_cnn, tmp_path):
    """--compare-func-script file.py[:func], as Polygraphy's: called with two iteration results
    (dicts with runner_name), its {output: result} decides; the same script gives the same verdict
    in `polygraphy run`. It also takes over layerwise runs (held, not streamed)."""
    script = tmp_path / "compare.py"
    script.write_text(
        "import numpy as np\n"
        "def compare_outputs(a, b):\n"
        "    assert a.runner_name != b.runner_name\n"
        "    return {name: np.allclose(a[name], b[name], atol=1e-3) for name in a}\n"
        "def exact(a, b):\n"
        "    return {name: bool(np.array_equal(a[name], b[name])) for name in a}\n"
        "def broken(a, b):\n"
        "    return [True]\n")
    env = {"PARITY_PYTHON": sys.executable}
    report = tmp_path / "report.json"
    close = run_parity("run", small_cnn, "--ref", "--ref-precision", "fp64", "--onnxrt", "--compare-func-script",
                       script, "--report", report, env=env, timeout=RUN_TIMEOUT)
    exact = run_parity("run", small_cnn, "--ref", "--ref-precision", "fp64", "--onnxrt", "--compare-func-script",
                       f"{script}:exact", env=env, timeout=RUN_TIMEOUT)
    assert close.returncode == 0 and exact.returncode == 1, close.describe() + exact.describe()
    assert "PASSED | Output: 'probabilities' | compare_outputs returned True" in close.output
    assert "FAILED | Output: 'probabilities' | exact returned False" in exact.output
    compared = json.loads(report.read_text())
    assert compared["passed"] is True
    # Polygraphy with the same script on the same inputs agrees.
    inputs = tmp_path / "inputs.json"
    run_parity("run", small_cnn, "--ref", "--save-inputs", inputs, env=env, timeout=RUN_TIMEOUT)
    code, _ = polygraphy("run", small_cnn, "--onnxrt", "--onnxrt", "--load-inputs", inputs, "--compare-func-script",
                         script, expect=None)
    assert code == 0
    layerwise = run_parity("run", small_cnn, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all",
                           "--compare-func-script", script, env=env, timeout=RUN_TIMEOUT)
    assert layerwise.returncode == 0, layerwise.describe()
    assert layerwise.output.count("compare_outputs returned True") > 3  # every marked tensor
    bad = run_parity("run", small_cnn, "--ref", "--onnxrt", "--compare-func-script", f"{script}:broken", env=env,
                     timeout=RUN_TIMEOUT)
    assert bad.returncode == 1
    assert "'broken' returned a list" in single_error_line(bad)
