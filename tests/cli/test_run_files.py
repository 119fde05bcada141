"""`parity run` files exchanged with Polygraphy both ways (--save-inputs, --save-outputs,
--load-outputs), weights read from the model file, and external data in another folder.

Polygraphy (the `polygraphy` package in .venv) runs as a peer in the same test: its files are
read by Parity and Parity's files are read by Polygraphy."""

import json

import numpy as np
import onnx
import pytest

from conftest import lines_with_prefix
from run_util import SHARED_MODELS, RUN_TIMEOUT, polygraphy, load_polygraphy_json, single_error_line, large_weight_model

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
