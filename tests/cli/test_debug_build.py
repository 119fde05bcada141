"""`parity debug build --openvino`: each build in a fresh process, saved and checked; OpenVINO's CPU
compilation gives byte-identical compiled models, so the second build says so and stops; the
compiled models sorted into good/bad; a run resumed from its replay; bad input."""

import json

from graph_tools_util import assert_one_error


def test_identical_builds_stop_after_the_second(run_parity, parity_bin, examples_dir, tmp_path):
    model = examples_dir / "small_cnn.onnx"
    result = run_parity("debug", "build", model, "--openvino", "--until", "5", "--artifacts", "parity_debug.ovc",
                        "--check", parity_bin, "run", "parity_debug.ovc", "--openvino", cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.describe()
    assert "Build 2 is byte-identical to build 1" in result.stdout, result.stdout
    assert "Finished 2 build(s), 1 distinct compiled model(s) | Passed: 2/2" in result.stdout
    good = sorted(p.name for p in (tmp_path / "parity_artifacts" / "good").iterdir())
    assert good == ["parity_debug_build1.ovc", "parity_debug_build2.ovc"]
    first, second = ((tmp_path / "parity_artifacts" / "good" / name).read_bytes() for name in good)
    assert first == second
    # The compiled model runs without the ONNX file.
    assert run_parity("run", tmp_path / "parity_artifacts" / "good" / good[0], "--openvino").returncode == 0


def test_replay_resumes_to_the_same_summary(run_parity, parity_bin, examples_dir, tmp_path):
    """One build recorded, then resumed from the replay: build 1 (its hash included) comes from the
    replay, build 2 is compiled, found identical to it, and the summary is the full run's."""
    model = examples_dir / "small_cnn.onnx"
    check = ["--check", parity_bin, "run", "parity_debug.ovc", "--openvino"]
    first = run_parity("debug", "build", model, "--openvino", "--until", "1", "--save-debug-replay", "first.json",
                       *check, cwd=tmp_path, timeout=300)
    assert "Finished 1 build(s), 1 distinct compiled model(s) | Passed: 1/1" in first.stdout, first.describe()
    recorded = json.loads((tmp_path / "first.json").read_text())
    assert recorded["tool"] == "debug build" and [s["key"] for s in recorded["steps"]] == ["build:1"]
    resumed = run_parity("debug", "build", model, "--openvino", "--until", "5", "--load-debug-replay", "first.json",
                         *check, cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.describe()
    assert "PASSED | Build 1 | compiled " + recorded["steps"][0]["hash"] + " | exit code 0 | from the replay" in (
        resumed.stdout), resumed.stdout
    assert "RUNNING | Build 1" not in resumed.stdout and "RUNNING | Build 2" in resumed.stdout
    assert "Build 2 is byte-identical to build 1" in resumed.stdout, resumed.stdout
    assert "Finished 2 build(s) (1 from the replay), 1 distinct compiled model(s) | Passed: 2/2" in resumed.stdout


def test_until_bad_sorts_a_failing_check(run_parity, examples_dir, tmp_path):
    model = examples_dir / "small_cnn.onnx"
    result = run_parity("debug", "build", model, "--openvino", "--until", "bad", "--artifacts", "parity_debug.ovc",
                        "--check", "false", cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.describe()
    assert "Finished 1 build(s), 1 distinct compiled model(s) | Passed: 0/1" in result.stdout
    assert [p.name for p in (tmp_path / "parity_artifacts" / "bad").iterdir()] == ["parity_debug_build1.ovc"]
    assert not (tmp_path / "parity_debug.ovc").exists()


def test_bad_input(run_parity, examples_dir, tmp_path):
    model = examples_dir / "small_cnn.onnx"
    assert_one_error(run_parity("debug", "build", model, "--until", "2", "--check", "true", cwd=tmp_path),
                     "--openvino")
    assert_one_error(run_parity("debug", "build", model, "--openvino", "--until", "2", cwd=tmp_path), "--check")
    bad = run_parity("debug", "build", tmp_path / "missing.onnx", "--openvino", "--until", "2", "--check", "true",
                     cwd=tmp_path)
    assert bad.returncode == 1 and "missing.onnx" in bad.stdout + bad.stderr, bad.describe()
    (tmp_path / "reduce.json").write_text(json.dumps({"tool": "debug reduce", "model_nodes": 3, "steps": []}))
    assert_one_error(run_parity("debug", "build", model, "--openvino", "--until", "2", "--load-debug-replay",
                                "reduce.json", "--check", "true", cwd=tmp_path), "a replay of debug reduce")
    assert not bad.crash_markers(), bad.describe()
