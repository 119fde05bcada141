"""`parity run` on bad input: unknown or misspelled input names, malformed --load-inputs and
--load-outputs files, invalid base64, unknown runner flags; each one clear [E] line."""

import json

import numpy as np
import pytest

from conftest import lines_with_prefix
from run_util import SHARED_MODELS, RUN_TIMEOUT, polygraphy, single_error_line

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


def test_float64_load_inputs_are_cast_as_polygraphy_casts_them(run_parity, small_cnn, tmp_path):
    # Polygraphy's data loader cache warns and casts (numpy's astype) a buffer of another dtype.
    values = np.random.RandomState(3).standard_normal((1, 3, 32, 32)) * 1e-3 + 0.1
    npz = tmp_path / "inputs.npz"
    np.savez(npz, image=values)
    saved_in = tmp_path / "saved.json"
    run = run_parity("run", small_cnn, "--ref", "--load-inputs", npz, "--save-inputs", saved_in, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert ("Input tensor: image | Buffer dtype (float64) does not match expected input dtype (float32), "
            "attempting to cast.") in run.stdout
    assert "out of range" not in run.stdout
    from polygraphy.json import load_json
    saved = load_json(str(saved_in))[0]["image"]
    assert saved.dtype == np.float32
    assert np.array_equal(saved, values.astype(np.float32))


def test_out_of_range_cast_warns_and_uncastable_dtype_is_refused(run_parity, small_cnn, tmp_path):
    npz = tmp_path / "inputs.npz"
    np.savez(npz, image=np.full((1, 3, 32, 32), 1e39, np.float64))
    run = run_parity("run", small_cnn, "--ref", "--load-inputs", npz, timeout=RUN_TIMEOUT)
    assert "Some values in this input are out of range of float32. Unexpected behavior may ensue!" in run.stdout, \
        run.describe()
    np.savez(npz, image=np.zeros((1, 3, 32, 32), np.complex128))
    saved_in = tmp_path / "saved.json"
    run = run_parity("run", small_cnn, "--ref", "--load-inputs", npz, "--save-inputs", saved_in, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    line = single_error_line(run)
    assert "image" in line and "complex128" in line and "float32" in line
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
]


@pytest.mark.parametrize("case", MISSPELLED_INPUTS, ids=[c[0] for c in MISSPELLED_INPUTS])
def test_misspelled_input_name_suggests_the_real_one(run_parity, small_cnn, tmp_path, case):
    _, model_name, flags, bad, real = case
    model = small_cnn if model_name == "small_cnn" else SHARED_MODELS / f"{model_name}.onnx"
    saved_in, saved_out = tmp_path / "saved_in.json", tmp_path / "saved_out.json"
    run = run_parity("run", model, "--onnxrt", *flags, "--save-inputs", saved_in, "--save-outputs", saved_out,
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    line = single_error_line(run)
    assert f"'{bad}'" in line and f"did you mean '{real}'?" in line, run.describe()
    assert not saved_in.exists() and not saved_out.exists()


@pytest.mark.parametrize("kind,bad", [("npz", "imgae"), ("json", "imag")])
def test_loaded_input_of_another_name_is_taken_as_polygraphy_takes_it(run_parity, small_cnn, tmp_path, kind, bad):
    # Polygraphy's data loader cache matches names exactly, then by substring ignoring case, then by
    # position ('imag' is in 'image'; 'imgae' is the model's only input), with its warning.
    data = np.full((1, 3, 32, 32), 0.5, np.float32)
    path = tmp_path / f"inputs.{kind}"
    if kind == "npz":
        np.savez(path, **{bad: data})
    else:
        from polygraphy.json import save_json
        save_json([{bad: data}], str(path))
    saved_in = tmp_path / "saved_in.json"
    run = run_parity("run", small_cnn, "--onnxrt", "--load-inputs", path, "--save-inputs", saved_in,
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert f"[W] Input tensor: image | Buffer name ({bad}) does not match expected input name (image)." in run.output
    from polygraphy.json import load_json
    (feed,) = load_json(str(saved_in))
    assert list(feed) == ["image"] and np.array_equal(feed["image"], data)


def test_unknown_input_name_far_from_any_lists_the_inputs(run_parity, small_cnn):
    run = run_parity("run", small_cnn, "--onnxrt", "--val-range", "completely_different:[0,1]", timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    line = single_error_line(run)
    assert "--val-range" in line and "'completely_different'" in line and "(inputs: image)" in line, run.describe()
    assert "did you mean" not in line, run.describe()
