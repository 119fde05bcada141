"""`parity run --gen-script`: the Python script it writes does what the command does, through
Parity's Python API (`import parity`), and gives the same verdict.

The scripts run with this interpreter and the `parity` package built beside the binary under test
(build/<preset>/python), else the one installed in the virtual environment. A missing package
fails the tests."""

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import lines_with_prefix, run_binary
from run_util import accumulation_model, chain_model

SCRIPT_TIMEOUT = 300


def python_env(parity_bin):
    env = dict(os.environ, NO_COLOR="1")
    package = parity_bin.resolve().parents[2] / "python"
    if (package / "parity").is_dir():
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package), env.get("PYTHONPATH")]))
    return env


def run_script(parity_bin, script, cwd):
    completed = subprocess.run([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=cwd, env=python_env(parity_bin), timeout=SCRIPT_TIMEOUT)
    output = completed.stdout.decode(errors="replace") + completed.stderr.decode(errors="replace")
    assert "No module named 'parity'" not in output, f"the parity Python package is not importable:\n{output}"
    return completed.returncode, output


def generate_and_run(parity_bin, tmp_path, args):
    """Runs `parity run <args>` and the script `--gen-script` writes for the same arguments."""
    command = run_binary(parity_bin, ["run", *args], cwd=tmp_path)
    script = tmp_path / "generated.py"
    generated = run_binary(parity_bin, ["run", *args, "--gen-script", script], cwd=tmp_path)
    assert generated.returncode == 0, generated.describe()
    assert "RUNNING" not in generated.output, "--gen-script writes the script instead of running"
    code, output = run_script(parity_bin, script, tmp_path)
    return command, code, output, script.read_text()


def nan_model(path):
    """y = Log(x): NaN for negative inputs."""
    graph = helper.make_graph([helper.make_node("Log", ["x"], ["y"], name="log")], "log",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def test_script_passes_where_the_command_passes(parity_bin, tmp_path, examples_dir):
    args = [examples_dir / "small_cnn.onnx", "--ref", "--onnxrt", "--atol", "1e-4", "--rtol", "1e-4",
            "--val-range", "[0,1]", "--iterations", "2", "--seed", "7", "--validate"]
    command, code, output, text = generate_and_run(parity_bin, tmp_path, args)
    assert command.returncode == 0, command.describe()
    assert code == 0, output
    # The script really compared both runners on both iterations with the given tolerances.
    assert "Passed: 2/2 iterations" in output, output
    assert "abs=0.0001, rel=0.0001" in output, output
    for expected in ("from parity.backend.ref import RefRunner", "DataLoader(seed=7, iterations=2",
                     "val_range={'': (0.0, 1.0)}", "CompareFunc.simple(rtol={'': 0.0001}, atol={'': 0.0001})",
                     "Comparator.validate(results, check_inf=True, check_nan=True)"):
        assert expected in text, text


def test_script_fails_where_the_command_fails(parity_bin, tmp_path, examples_dir):
    model = examples_dir / "small_cnn.onnx"
    saved = run_binary(parity_bin, ["run", model, "--onnxrt", "--seed", "3", "--save-outputs", tmp_path / "other.json"])
    assert saved.returncode == 0, saved.describe()
    # Other inputs (seed 1) against outputs saved for seed 3: the comparison fails.
    command, code, output, text = generate_and_run(parity_bin, tmp_path,
                                                   [model, "--onnxrt", "--load-outputs", tmp_path / "other.json"])
    assert command.returncode == 1, command.describe()
    assert code != 0, output
    assert "ParityException" in output and "FAILED" in output, output
    assert "RunResults.load(load_output)" in text


def test_validation_fails_in_the_script_too(parity_bin, tmp_path):
    nan_model(tmp_path / "log.onnx")
    command, code, output, _ = generate_and_run(parity_bin, tmp_path,
                                                ["log.onnx", "--onnxrt", "--val-range", "[-2,-1]", "--validate"])
    assert command.returncode == 1 and "NaN" in command.output, command.describe()
    assert code != 0 and "FAILED" in output and "NaN" in output, output


def test_script_saves_the_same_inputs_and_outputs(parity_bin, tmp_path, examples_dir):
    model = examples_dir / "small_cnn.onnx"
    command = run_binary(parity_bin, ["run", model, "--onnxrt", "--seed", "5", "--save-inputs", "in_cli.json",
                                      "--save-outputs", "out_cli.json"], cwd=tmp_path)
    assert command.returncode == 0, command.describe()
    script = tmp_path / "save.py"
    generated = run_binary(parity_bin, ["run", model, "--onnxrt", "--seed", "5", "--save-inputs", "in_py.json",
                                        "--save-outputs", "out_py.json", "--gen-script", script], cwd=tmp_path)
    assert generated.returncode == 0, generated.describe()
    code, output = run_script(parity_bin, script, tmp_path)
    assert code == 0, output
    from polygraphy.json import load_json
    cli_inputs, py_inputs = load_json(str(tmp_path / "in_cli.json")), load_json(str(tmp_path / "in_py.json"))
    assert len(cli_inputs) == len(py_inputs) == 1
    for name, value in cli_inputs[0].items():
        assert np.array_equal(value, py_inputs[0][name]), name
    cli_results, py_results = load_json(str(tmp_path / "out_cli.json")), load_json(str(tmp_path / "out_py.json"))
    (_, cli_iterations), = list(cli_results.items())
    (_, py_iterations), = list(py_results.items())
    for name, value in cli_iterations[0].items():
        assert np.array_equal(value, py_iterations[0][name]), name


def test_outputs_marks_compare_to_postprocess_and_indices(parity_bin, tmp_path):
    chain_model(tmp_path / "chain.onnx")
    args = ["chain.onnx", "--ref", "--onnxrt", "--ref", "--onnx-outputs", "mark", "all", "--compare-to", "first",
            "--postprocess", "top-2", "--compare-func", "indices", "--stats-style", "polygraphy"]
    command, code, output, text = generate_and_run(parity_bin, tmp_path, args)
    assert command.returncode == 0, command.describe()
    assert code == 0, output
    for expected in ("outputs=constants.MARK_ALL", "PostprocessFunc.top_k({'': 2})",
                     "CompareFunc.indices(statistics_style='polygraphy')",
                     "comparisons=[(i, 0) for i in range(len(results)) if i != 0]"):
        assert expected in text, text
    # Two comparisons against the first runner, every marked tensor compared in each.
    assert output.count("Accuracy Summary") == 2, output
    assert "Comparing Output: 'add_out'" in output, output


def test_data_loader_from_json_and_warm_up(parity_bin, tmp_path, examples_dir):
    model = examples_dir / "small_cnn.onnx"
    saved = run_binary(parity_bin, ["run", model, "--onnxrt", "--iterations", "2", "--save-inputs", "in.json"],
                       cwd=tmp_path)
    assert saved.returncode == 0, saved.describe()
    command, code, output, text = generate_and_run(parity_bin, tmp_path, [model, "--ref", "--onnxrt", "--atol", "1e-4",
                                                                          "--load-inputs", "in.json", "--warm-up", "1"])
    assert command.returncode == 0 and code == 0, output
    assert "load_json(input_data_path, description='input data')" in text and "warm_up=1" in text
    assert "Passed: 2/2 iterations" in output, output


def model_with_data_elsewhere(tmp_path):
    """y = MatMul(x, w) with w (32x32 floats) in external data kept in another folder than the model's."""
    weight = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], "matmul",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32])],
                              [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    (tmp_path / "model").mkdir()
    (tmp_path / "data").mkdir()
    onnx.save_model(model, tmp_path / "data" / "m.onnx", save_as_external_data=True, location="weights.bin",
                    size_threshold=1024)
    (tmp_path / "data" / "m.onnx").rename(tmp_path / "model" / "m.onnx")
    return "model/m.onnx", weight


@pytest.mark.parametrize("runners", [["--onnxrt"], ["--ref", "--onnxrt"]])
def test_external_data_dir(parity_bin, tmp_path, runners):
    model, weight = model_with_data_elsewhere(tmp_path)
    command, code, output, text = generate_and_run(
        parity_bin, tmp_path, [model, *runners, "--external-data-dir", "data", "--atol", "1e-4", "--seed", "2",
                               "--save-inputs", "in.json", "--save-outputs", "out.json"])
    assert command.returncode == 0, command.describe()
    assert code == 0, output
    assert ("load_onnx = OnnxFromPath(join(dirname(abspath(__file__)), 'model/m.onnx'), "
            "external_data_dir=join(dirname(abspath(__file__)), 'data'))") in text, text
    # The script (which wrote in.json and out.json last) read the weights from data/.
    from polygraphy.json import load_json
    feed = load_json(str(tmp_path / "in.json"))[0]
    results = load_json(str(tmp_path / "out.json"))
    assert len(results) == len(runners)
    for name, iterations in results.items():
        np.testing.assert_allclose(iterations[0]["y"], feed["x"] @ weight, rtol=1e-4, atol=1e-4, err_msg=name)
    # Without the folder, the weights are not found.
    (tmp_path / "script_without.py").write_text(
        text.replace(", external_data_dir=join(dirname(abspath(__file__)), 'data')", ""))
    code, output = run_script(parity_bin, tmp_path / "script_without.py", tmp_path)
    assert code != 0 and "weights.bin" in output, output


@pytest.mark.parametrize("runners", [["--onnxrt"], ["--ref", "--onnxrt"]])
def test_script_runs_from_any_folder(parity_bin, tmp_path, runners):
    """The model's path (given relative to the working folder) is written relative to the script's own
    folder, so the script finds the model wherever it is run from, and after both move together."""
    model, _ = model_with_data_elsewhere(tmp_path)
    script = tmp_path / "scripts" / "check.py"
    script.parent.mkdir()
    generated = run_binary(parity_bin, ["run", model, *runners, "--external-data-dir", "data",
                                        "--gen-script", script.relative_to(tmp_path)], cwd=tmp_path)
    assert generated.returncode == 0, generated.describe()
    assert "join(dirname(abspath(__file__)), '../model/m.onnx')" in script.read_text()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd in (tmp_path, script.parent, elsewhere, "/"):
        code, output = run_script(parity_bin, script, cwd)
        assert code == 0, f"from {cwd}:\n{output}"
    moved = tmp_path / "moved"
    moved.mkdir()
    for folder in ("scripts", "model", "data"):
        (tmp_path / folder).rename(moved / folder)
    code, output = run_script(parity_bin, moved / "scripts" / "check.py", elsewhere)
    assert code == 0, output


def test_every_file_the_script_reads_or_writes_is_found_from_any_folder(parity_bin, tmp_path):
    """Inputs, outputs and a data loader script named relative to the working folder are written relative
    to the script's own folder, as the model is: the script reads the same files and writes where the
    command wrote, whatever folder it runs from."""
    chain_model(tmp_path / "chain.onnx")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "loader.py").write_text(
        "import numpy as np\n"
        "def load_data():\n"
        "    rng = np.random.default_rng(3)\n"
        "    yield {'x': rng.random((2, 8), dtype=np.float32)}\n")
    saved = run_binary(parity_bin, ["run", "chain.onnx", "--onnxrt", "--data-loader-script", "data/loader.py",
                                    "--save-inputs", "data/in.json", "--save-outputs", "data/golden.json"],
                       cwd=tmp_path)
    assert saved.returncode == 0, saved.describe()
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    cases = {
        "from_loader.py": ["--data-loader-script", "data/loader.py", "--save-inputs", "data/in2.json",
                           "--save-outputs", "data/out2.json"],
        "from_files.py": ["--load-inputs", "data/in.json", "--load-outputs", "data/golden.json"],
    }
    for name, args in cases.items():
        generated = run_binary(parity_bin, ["run", "chain.onnx", "--onnxrt", *args, "--gen-script",
                                            f"scripts/{name}"], cwd=tmp_path)
        assert generated.returncode == 0, generated.describe()
        text = (scripts / name).read_text()
        for path in args[1::2]:
            assert f"join(dirname(abspath(__file__)), '../{path}')" in text, text
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, output = run_script(parity_bin, scripts / "from_loader.py", elsewhere)
    assert code == 0, output
    assert (tmp_path / "data" / "in2.json").is_file() and (tmp_path / "data" / "out2.json").is_file(), output
    assert list(elsewhere.iterdir()) == [], "the script wrote into the folder it ran from"
    assert json.loads((tmp_path / "data" / "in2.json").read_text()) == json.loads(
        (tmp_path / "data" / "in.json").read_text()), "the script's loader gave other inputs than the command's"
    code, output = run_script(parity_bin, scripts / "from_files.py", elsewhere)
    assert code == 0, output
    assert "PASSED" in output, output


def test_standard_output(parity_bin, tmp_path):
    chain_model(tmp_path / "chain.onnx")
    run = run_binary(parity_bin, ["run", "chain.onnx", "--onnxrt", "--gen-script", "-"], cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert run.stdout.startswith("#!/usr/bin/env python3\n# Template auto-generated by parity"), run.stdout
    assert "build_onnxrt_session = SessionFromOnnx('chain.onnx')" in run.stdout
    assert "This script runs chain.onnx using ONNX-Runtime." in run.stdout
    assert list(tmp_path.iterdir()) == [tmp_path / "chain.onnx"]


def test_flags_the_api_cannot_express_are_refused(parity_bin, tmp_path):
    chain_model(tmp_path / "chain.onnx")
    run = run_binary(parity_bin, ["run", "chain.onnx", "--onnxrt", "--onnxrt", "--report", "r.json",
                                  "--ort-layerwise-budget", "8", "--gen-script", "out.py"], cwd=tmp_path)
    assert run.returncode == 1, run.describe()
    errors = lines_with_prefix(run.output, "[E] ")
    assert len(errors) == 1 and "--ort-layerwise-budget, --report" in errors[0], run.describe()
    assert not (tmp_path / "out.py").exists(), "no script is written when a flag cannot be expressed"
    assert not run.crash_markers()


def test_streamed_layerwise_run(parity_bin, tmp_path):
    """Two runners over every tensor: the script streams the comparison (Comparator.run_layerwise)
    as the command does, with its memory budget and summary length."""
    chain_model(tmp_path / "chain.onnx")
    args = ["chain.onnx", "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "1e-5",
            "--layerwise-memory", "1K", "--layerwise-worst", "3", "--validate"]
    command, code, output, text = generate_and_run(parity_bin, tmp_path, args)
    assert command.returncode == 0, command.describe()
    assert code == 0, output
    assert "Comparator.run_layerwise(runners, outputs=constants.MARK_ALL, memory_budget=1024, worst_count=3, " \
           "compare_func=compare_func, validate=True)" in text, text
    assert "ModifyOnnxOutputs" not in text, text  # the runners stream every tensor of the model as it is
    for log in (command.output, output):
        assert "(layerwise, streamed tensor by tensor)" in log, log
        assert "PASSED | All 4 tensor(s) matched" in log, log
        assert "PASSED | Validation (every streamed tensor)" in log, log


def test_streamed_layerwise_script_fails_where_the_command_fails(parity_bin, tmp_path):
    model = accumulation_model(tmp_path / "acc.onnx")
    args = [model.name, "--ref", "--ref-precision", "fp64", "--onnxrt", "--onnx-outputs", "mark", "all",
            "--atol", "0", "--rtol", "0", "--onnx-exclude-outputs", "t"]
    command, code, output, text = generate_and_run(parity_bin, tmp_path, args)
    assert command.returncode == 1, command.describe()
    assert code != 0 and "raise ParityException('FAILED')" in output, output
    assert "exclude_outputs=['t']" in text, text
    assert "First divergence" in command.output and "First divergence" in output, output


def test_bad_flags_fail_before_writing(parity_bin, tmp_path):
    chain_model(tmp_path / "chain.onnx")
    run = run_binary(parity_bin, ["run", "chain.onnx", "--onnxrt", "--seed", "-5", "--gen-script", "out.py"],
                     cwd=tmp_path)
    assert run.returncode == 1 and "--seed" in run.output, run.describe()
    assert not (tmp_path / "out.py").exists()
    unwritable = run_binary(parity_bin, ["run", "chain.onnx", "--onnxrt", "--gen-script", tmp_path / "no" / "x.py"])
    assert unwritable.returncode == 1, unwritable.describe()
    assert "x.py" in lines_with_prefix(unwritable.output, "[E] ")[0]
