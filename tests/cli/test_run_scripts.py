"""`parity run` with Polygraphy's scripts: --data-loader-script and --compare-func-script."""

import json
import sys

import numpy as np

from run_util import RUN_TIMEOUT, polygraphy, load_polygraphy_json, single_error_line

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
                          (str(tmp_path / "nowhere.py"), ["nowhere.py", "no such file"])):
        bad = run_parity("run", small_cnn, "--ref", "--data-loader-script", spec, env=env, timeout=RUN_TIMEOUT)
        assert bad.returncode == 1, bad.describe()
        line = single_error_line(bad)
        for needle in needles:
            assert needle in line, line
    # A feed named after no input is taken by position, as Polygraphy's data loader cache takes it.
    renamed = run_parity("run", small_cnn, "--ref", "--data-loader-script", f"{script}:wrong_name", env=env,
                         timeout=RUN_TIMEOUT)
    assert renamed.returncode == 0, renamed.describe()
    assert "[W] Input tensor: image | Buffer name (imge) does not match expected input name (image)." in renamed.output
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
