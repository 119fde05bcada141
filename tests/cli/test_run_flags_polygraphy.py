"""Polygraphy flags that its CLI tests use (tests/peers/test_polygraphy_cli_port.py):
`run --save-onnx` (the model the runners get, with the compared outputs marked), `run --use-subprocess`
(each runner in a child process; a crash is reported, not fatal), `inspect model --ignore-external-data`
and `template onnx-gs` (an onnx-graphsurgeon script skeleton). Each with its bad input: a clear error,
a non-zero exit and no file left behind."""

import subprocess
import sys

import onnx

from conftest import REPO_ROOT
from run_util import single_error_line

POLYGRAPHY_MODELS = REPO_ROOT.parent / "shared" / "polygraphy" / "tests" / "models"
IDENTITY = POLYGRAPHY_MODELS / "identity.onnx"  # x [1,1,2,2] -> Identity -> y
IDENTITY_IDENTITY = POLYGRAPHY_MODELS / "identity_identity.onnx"  # X -> identity_out_0 -> identity_out_2
EXT_WEIGHTS = POLYGRAPHY_MODELS / "ext_weights.onnx"  # weights a, b, d in data/ext_weights.data


def output_names(path):
    return [output.name for output in onnx.load(str(path), load_external_data=False).graph.output]


# ----- run --save-onnx ------------------------------------------------------------------------------

def test_save_onnx_writes_the_model_the_runners_get(run_parity, tmp_path):
    run = run_parity("run", IDENTITY, "--onnxrt", "--save-onnx", "out.onnx", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert "Saving ONNX model to: out.onnx" in run.output
    saved = onnx.load(str(tmp_path / "out.onnx"))
    onnx.checker.check_model(saved)
    assert [node.op_type for node in saved.graph.node] == ["Identity"]
    assert output_names(tmp_path / "out.onnx") == output_names(IDENTITY)


def test_save_onnx_marks_the_compared_outputs(run_parity, tmp_path):
    run = run_parity("run", IDENTITY_IDENTITY, "--onnxrt", "--onnx-outputs", "mark", "all", "--save-onnx",
                     "all.onnx", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert output_names(tmp_path / "all.onnx") == ["identity_out_0", "identity_out_2"]  # node order
    run = run_parity("run", IDENTITY_IDENTITY, "--onnxrt", "--onnx-outputs", "identity_out_0", "--save-onnx",
                     "listed.onnx", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert output_names(tmp_path / "listed.onnx") == ["identity_out_2", "identity_out_0"]  # graph outputs first
    run = run_parity("run", IDENTITY_IDENTITY, "--onnxrt", "--onnx-outputs", "mark", "all",
                     "--onnx-exclude-outputs", "identity_out_2", "--save-onnx", "some.onnx", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert output_names(tmp_path / "some.onnx") == ["identity_out_0"]


def test_save_onnx_with_external_data(run_parity, tmp_path):
    run = run_parity("run", EXT_WEIGHTS, "--ext", POLYGRAPHY_MODELS / "data", "--onnxrt", "--save-onnx", "out.onnx",
                     "--save-external-data", "weights.bin", "--external-data-size-threshold", "0", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert (tmp_path / "weights.bin").stat().st_size > 0
    onnx.checker.check_model(onnx.load(str(tmp_path / "out.onnx")))


def test_save_onnx_bad_input(run_parity, tmp_path):
    # A marked tensor no node produces: refused before anything is written.
    run = run_parity("run", IDENTITY, "--onnxrt", "--onnx-outputs", "nope", "--save-onnx", "out.onnx", cwd=tmp_path)
    assert run.returncode != 0
    assert "nope" in single_error_line(run)
    # A model-saving flag without --save-onnx has nothing to apply to.
    run = run_parity("run", IDENTITY, "--onnxrt", "--save-external-data", cwd=tmp_path)
    assert run.returncode != 0
    assert "--save-onnx" in single_error_line(run)
    # A bad threshold fails before the model is saved or run.
    run = run_parity("run", IDENTITY, "--onnxrt", "--save-onnx", "out.onnx", "--save-external-data",
                     "--external-data-size-threshold", "lots", cwd=tmp_path)
    assert run.returncode != 0
    assert "--external-data-size-threshold" in single_error_line(run)
    # No model to save.
    run = run_parity("run", "--save-onnx", "out.onnx", cwd=tmp_path)
    assert run.returncode != 0
    assert "no model" in single_error_line(run)
    # A folder that does not exist: the error names the path.
    run = run_parity("run", IDENTITY, "--onnxrt", "--save-onnx", "missing/out.onnx", cwd=tmp_path)
    assert run.returncode != 0
    assert "missing/out.onnx" in single_error_line(run)
    assert sorted(path.name for path in tmp_path.iterdir()) == []


# ----- run --use-subprocess ---------------------------------------------------------------------------

def test_use_subprocess_gives_the_same_results(run_parity, tmp_path):
    run = run_parity("run", IDENTITY_IDENTITY, "--onnxrt", "--ref", "--use-subprocess", "--onnx-outputs", "mark",
                     "all", "--save-outputs", "sub.json", "--save-inputs", "in.json", "--seed", "3", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert "PASSED" in run.output
    direct = run_parity("run", IDENTITY_IDENTITY, "--onnxrt", "--ref", "--onnx-outputs", "mark", "all",
                        "--save-outputs", "direct.json", "--seed", "3", cwd=tmp_path)
    assert direct.returncode == 0, direct.describe()
    from polygraphy.json import load_json

    sub, plain = load_json(str(tmp_path / "sub.json")), load_json(str(tmp_path / "direct.json"))
    assert [name.split("-")[0] for name, _ in sub.lst] == [name.split("-")[0] for name, _ in plain.lst]
    for (_, sub_iterations), (_, plain_iterations) in zip(sub.lst, plain.lst):
        for sub_iteration, plain_iteration in zip(sub_iterations, plain_iterations):
            assert sorted(sub_iteration.keys()) == sorted(plain_iteration.keys()) == ["identity_out_0",
                                                                                     "identity_out_2"]
            for name in sub_iteration.keys():
                assert (sub_iteration[name] == plain_iteration[name]).all()
    assert len(load_json(str(tmp_path / "in.json"))) == 1


def test_use_subprocess_reports_a_crashing_runner(run_parity, tmp_path):
    # The data loader script runs in the first runner's process and kills it as a crashing backend would.
    (tmp_path / "crash.py").write_text("import os, signal\n\ndef load_data():\n"
                                       "    os.kill(os.getppid(), signal.SIGSEGV)\n")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    run = run_parity("run", IDENTITY, "--onnxrt", "--use-subprocess", "--data-loader-script", "crash.py",
                     cwd=tmp_path, env={"TMPDIR": str(temporary)})
    assert run.returncode > 0, run.describe()
    error = single_error_line(run)
    assert "onnxrt-runner" in error and "signal 11 (SIGSEGV)" in error, error
    # The crashed child's temporary folders (the data loader script's) went with the parent's.
    assert list(temporary.iterdir()) == [], list(temporary.iterdir())
    # Without it, parity itself is what dies.
    run = run_parity("run", IDENTITY, "--onnxrt", "--data-loader-script", "crash.py", cwd=tmp_path)
    assert run.returncode == -11, run.describe()


def test_use_subprocess_passes_errors_back(run_parity, tmp_path):
    # An error inside the runner's process is reported as it would be without a subprocess.
    run = run_parity("run", IDENTITY, "--onnxrt", "--use-subprocess", "--input-shapes", "x:[1,1,3,3]", cwd=tmp_path)
    direct = run_parity("run", IDENTITY, "--onnxrt", "--input-shapes", "x:[1,1,3,3]", cwd=tmp_path)
    assert run.returncode == direct.returncode != 0
    assert single_error_line(run) == single_error_line(direct)


# ----- inspect model --ignore-external-data -----------------------------------------------------------

def test_ignore_external_data_shows_structure(run_parity, tmp_path):
    run = run_parity("inspect", "model", EXT_WEIGHTS, "--ignore-external-data", "--show", "layers", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert "Initializer | a [dtype=float32, shape=(1, 3)]" in run.output
    # Without it, the missing data file (it is in data/) is an error naming the tensor.
    run = run_parity("inspect", "model", EXT_WEIGHTS, "--show", "layers", cwd=tmp_path)
    assert run.returncode != 0
    assert "ext_weights.data" in single_error_line(run)


def test_ignore_external_data_does_not_read_values(run_parity, tmp_path):
    run = run_parity("inspect", "model", EXT_WEIGHTS, "--ignore-external-data", "--show", "weights", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert run.output.count("<error: failed to load weights>") == 3
    assert "tensor 'a' keeps its values in external data (ext_weights.data)" in run.output


def test_ignore_external_data_bad_input(run_parity, tmp_path):
    run = run_parity("inspect", "model", EXT_WEIGHTS, "--ignore-external-data", "--ext", POLYGRAPHY_MODELS / "data",
                     cwd=tmp_path)
    assert run.returncode != 0
    assert "--ignore-external-data" in single_error_line(run)


# ----- template onnx-gs ---------------------------------------------------------------------------------

def test_template_onnx_gs_script_runs(run_parity, tmp_path):
    model = tmp_path / "identity.onnx"
    model.write_bytes(IDENTITY.read_bytes())
    run = run_parity("template", "onnx-gs", model, "-o", "template.py", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert "Writing script to: template.py" in run.output
    script = (tmp_path / "template.py").read_text()
    assert "import onnx_graphsurgeon as gs" in script and "polygraphy" not in script
    done = subprocess.run([sys.executable, "template.py"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    updated = onnx.load(str(tmp_path / "identity_updated.onnx"))
    assert [node.op_type for node in updated.graph.node] == ["Identity"]


def test_template_onnx_gs_loading_options(run_parity, tmp_path):
    run = run_parity("template", "onnx-gs", EXT_WEIGHTS, "--ext", POLYGRAPHY_MODELS / "data", "--shape-inference",
                     "-o", "-", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert f"onnx.load_external_data_for_model(model, '{POLYGRAPHY_MODELS / 'data'}')" in run.stdout
    assert "model = onnx.shape_inference.infer_shapes(model)" in run.stdout
    run = run_parity("template", "onnx-gs", EXT_WEIGHTS, "--ignore-external-data", "-o", "-", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert "load_external_data=False" in run.stdout


def test_template_onnx_gs_bad_input(run_parity, tmp_path):
    run = run_parity("template", "onnx-gs", tmp_path / "missing.onnx", "-o", "template.py", cwd=tmp_path)
    assert run.returncode != 0
    assert "missing.onnx" in single_error_line(run)
    (tmp_path / "notes.onnx").write_text("not a model")
    run = run_parity("template", "onnx-gs", tmp_path / "notes.onnx", "-o", "template.py", cwd=tmp_path)
    assert run.returncode != 0
    assert "notes.onnx" in single_error_line(run)
    run = run_parity("template", "onnx-gs", EXT_WEIGHTS, "--ignore-external-data", "--ext", ".", "-o", "template.py",
                     cwd=tmp_path)
    assert run.returncode != 0
    assert "--ignore-external-data" in single_error_line(run)
    run = run_parity("template", "onnx-gs", IDENTITY, cwd=tmp_path)
    assert run.returncode != 0
    assert not (tmp_path / "template.py").exists()
