"""`parity run --dataset`: a whole dataset through the runners, in this process or in worker processes
(--workers), merged into one report (docs/dataset-validation.md). The results must not depend on how the
samples were split: per-sample verdicts identical, exact statistics equal."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import run_binary
from exported_models import build, export

SAMPLES = 48
# Tight enough that some samples of the tiny ResNet fail between ONNX Runtime and the reference
# interpreter (their largest differences are a few 1e-7), so verdicts are not all the same.
TOLERANCES = ["--atol", "6e-8", "--rtol", "0"]


@pytest.fixture(scope="session")
def resnet(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dataset_resnet")
    path = folder / "resnet.onnx"
    export("resnet", path, "torchscript")
    _, args, _ = build("resnet")
    return path, tuple(args[0].shape)


def write_script(folder, count, shape, body="", extra=""):
    script = folder / "data.py"
    script.write_text(f"""import numpy as np, os
{extra}
def num_samples():
    return {count}

def load(i):
{body}    return {{"x": np.random.default_rng(i).standard_normal({shape}).astype(np.float32)}}
""")
    return script


@pytest.fixture(scope="session")
def dataset(resnet, tmp_path_factory):
    folder = tmp_path_factory.mktemp("dataset_npz")
    _, shape = resnet
    for i in range(SAMPLES):
        np.savez(folder / f"{i:04d}.npz", x=np.random.default_rng(i).standard_normal(shape).astype(np.float32))
    return folder


def validate(parity_bin, model, dataset, folder, *extra, expect=None, name="run", tolerances=TOLERANCES):
    results = folder / f"{name}.jsonl"
    report = folder / f"{name}.json"
    run = run_binary(parity_bin, ["run", model, "--onnxrt", "--ref", "--dataset", dataset, *tolerances,
                                  "--sample-results", results, "--report", report, *extra], cwd=folder)
    if expect is not None:
        assert run.returncode == expect, run.describe()
    assert not run.crash_markers(), run.describe()
    verdicts = sorted((json.loads(line) for line in results.read_text().splitlines()), key=lambda r: r["index"])
    return run, verdicts, json.loads(report.read_text())


def without_runner_names(report):
    """Runner names hold each process's start time; everything else must be equal."""
    report = json.loads(json.dumps(report))
    for entry in report["outputs"] + report["metrics"]:
        entry.pop("pair")
    return report


def test_workers_give_the_single_process_results(parity_bin, resnet, dataset, tmp_path):
    model, _ = resnet
    single, single_verdicts, single_report = validate(parity_bin, model, dataset, tmp_path, name="single")
    two, two_verdicts, two_report = validate(parity_bin, model, dataset, tmp_path, "--workers", "2", name="two")
    assert [v["index"] for v in two_verdicts] == list(range(SAMPLES))
    assert two_verdicts == single_verdicts
    assert without_runner_names(two_report) == without_runner_names(single_report)
    passed = sum(v["passed"] for v in single_verdicts)
    assert 0 < passed < SAMPLES, "the tolerances should fail some samples and pass others"
    assert single_report["passed"] == passed and single_report["failed"] == SAMPLES - passed
    assert single.returncode == two.returncode == 1  # some samples failed
    # The merged maximum is the largest of the samples' maxima, and names its sample.
    absolute = single_report["outputs"][0]["absolute"]
    maxima = [v["outputs"][0]["max_absolute"] for v in single_verdicts]
    assert absolute["max"] == max(maxima)
    assert absolute["max_sample"] == maxima.index(max(maxima))
    assert sum(h["count"] for h in absolute["histogram"]) == absolute["count"] == SAMPLES * 10
    assert "Dataset progress | 48/48 samples" in single.stdout
    assert "Dataset Summary | 48 of 48 samples" in two.stdout


def test_sample_verdicts_match_plain_runs_of_each_sample(parity_bin, resnet, dataset, tmp_path):
    model, _ = resnet
    _, verdicts, _ = validate(parity_bin, model, dataset, tmp_path, "--workers", "2")
    failing = next(v["index"] for v in verdicts if not v["passed"])
    passing = next(v["index"] for v in verdicts if v["passed"])
    for index in (failing, passing):
        plain = run_binary(parity_bin, ["run", model, "--onnxrt", "--ref", *TOLERANCES,
                                        "--load-inputs", dataset / f"{index:04d}.npz"], cwd=tmp_path)
        assert plain.returncode == (0 if verdicts[index]["passed"] else 1), plain.describe()


def test_worst_samples_are_saved_and_reproduce(parity_bin, resnet, dataset, tmp_path):
    model, _ = resnet
    worst = tmp_path / "worst"
    _, verdicts, report = validate(parity_bin, model, dataset, tmp_path, "--workers", "2", "--worst-samples", "3",
                                   "--save-worst", worst)
    listed = [entry["sample"] for entry in report["worst"]]
    assert len(listed) == 3
    # Worst first: failed samples before passed ones, then by their largest difference.
    keys = [(not verdicts[i]["passed"], verdicts[i]["outputs"][0]["max_absolute"]) for i in listed]
    assert keys == sorted(keys, reverse=True)
    everything = sorted(((not v["passed"], v["outputs"][0]["max_absolute"]) for v in verdicts), reverse=True)
    assert keys == everything[:3]
    index = listed[0]
    inputs = worst / f"sample_{index}_inputs.json"
    outputs = worst / f"sample_{index}_outputs.json"
    # The saved inputs reproduce the sample's verdict in a plain run, and its saved outputs (both
    # runners') are what that run gives.
    plain_outputs = tmp_path / "plain_outputs.json"
    again = run_binary(parity_bin, ["run", model, "--onnxrt", "--ref", *TOLERANCES, "--load-inputs", inputs,
                                    "--save-outputs", plain_outputs], cwd=tmp_path)
    assert again.returncode == (0 if verdicts[index]["passed"] else 1), again.describe()
    from polygraphy.comparator import RunResults
    saved, plain = RunResults.load(str(outputs)), RunResults.load(str(plain_outputs))
    assert len(saved) == len(plain) == 2
    for (_, saved_iterations), (_, plain_iterations) in zip(saved, plain):
        np.testing.assert_array_equal(saved_iterations[0]["logits"], plain_iterations[0]["logits"])


def test_metric_script_is_aggregated_over_the_dataset(parity_bin, resnet, tmp_path):
    model, shape = resnet
    script = write_script(tmp_path, 30, shape)
    metric = tmp_path / "metric.py"
    metric.write_text("""import numpy as np
def task(result0, result1, feed):
    return {"top1_agreement": float(np.argmax(result0["logits"]) == np.argmax(result1["logits"])),
            "input_mean": float(feed["x"].mean())}
""")
    _, verdicts, report = validate(parity_bin, model, script, tmp_path, "--workers", "2",
                                   "--metric-script", f"{metric}:task")
    metrics = {entry["metric"]: entry for entry in report["metrics"]}
    assert metrics["top1_agreement"]["mean"] == 1.0 and metrics["top1_agreement"]["count"] == 30
    # The mean of a metric the test can compute on its own from the dataset.
    expected = [float(np.random.default_rng(i).standard_normal(shape).astype(np.float32).mean()) for i in range(30)]
    assert metrics["input_mean"]["mean"] == pytest.approx(np.mean(expected), rel=1e-12, abs=1e-15)
    assert [v["metrics"][1]["input_mean"] for v in verdicts] == pytest.approx(expected, rel=1e-6)


def test_iterations_take_the_first_samples(parity_bin, resnet, dataset, tmp_path):
    model, _ = resnet
    run, verdicts, report = validate(parity_bin, model, dataset, tmp_path, "--iterations", "5")
    assert [v["index"] for v in verdicts] == list(range(5))
    assert report["samples"] == 5


# ---- faults ----

def test_a_killed_worker_is_restarted_and_its_sample_runs_again(parity_bin, resnet, tmp_path):
    model, shape = resnet
    marker = tmp_path / "killed_once"
    # Sample 17's first load kills the worker process running it (the parent of the script's Python),
    # as an out-of-memory kill would.
    kill = (f"    if i == 17 and not os.path.exists({str(marker)!r}):\n"
            f"        open({str(marker)!r}, 'w').close()\n"
            f"        os.kill(os.getppid(), 9)\n")
    clean = write_script(tmp_path, 40, shape)
    _, clean_verdicts, clean_report = validate(parity_bin, model, clean, tmp_path, name="clean")
    (tmp_path / "killing").mkdir()
    killing = write_script(tmp_path / "killing", 40, shape, body=kill)
    run, verdicts, report = validate(parity_bin, model, killing, tmp_path, "--workers", "2", name="killed")
    assert marker.exists(), "the worker was not killed"
    assert "ended (signal 9" in run.stdout and "sample 17" in run.stdout, run.describe()
    # Every sample counted exactly once, with the results of a run nobody killed.
    assert [v["index"] for v in verdicts] == list(range(40))
    assert verdicts == clean_verdicts
    assert without_runner_names(report) == without_runner_names(clean_report)


def test_a_sample_that_kills_every_worker_fails_with_that_error(parity_bin, resnet, tmp_path):
    model, shape = resnet
    script = write_script(tmp_path, 12, shape, body="    if i == 5:\n        os.kill(os.getppid(), 9)\n")
    run, verdicts, report = validate(parity_bin, model, script, tmp_path, "--workers", "2")
    assert [v["index"] for v in verdicts] == list(range(12))
    assert "twice" in verdicts[5]["error"] and not verdicts[5]["passed"]
    assert report["errors"] == 1 and report["first_errors"][0]["sample"] == 5
    assert run.returncode == 1


def hanging_script(folder, count, shape, index, pid_file):
    """A script dataset whose load(index) writes its process's id to pid_file and then hangs (sleeps), alive."""
    body = (f"    if i == {index}:\n"
            f"        open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
            f"        __import__('time').sleep(3600)\n")
    return write_script(folder, count, shape, body=body)


def ended(pid, seconds=20):
    """Whether the process ends (gone, or a zombie nobody reaps) within `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


def test_a_sample_that_hangs_is_failed_by_the_sample_timeout(parity_bin, resnet, tmp_path):
    model, shape = resnet
    clean = write_script(tmp_path, 20, shape)
    _, clean_verdicts, _ = validate(parity_bin, model, clean, tmp_path, name="clean")
    (tmp_path / "hanging").mkdir()
    pid_file = tmp_path / "hung.pid"
    hanging = hanging_script(tmp_path / "hanging", 20, shape, 7, pid_file)
    run, verdicts, report = validate(parity_bin, model, hanging, tmp_path, "--workers", "2", "--sample-timeout", "8",
                                     name="hanging", expect=1)
    # Every sample counted exactly once: sample 7 failed with the timeout, the others as a run without the hang.
    assert [v["index"] for v in verdicts] == list(range(20))
    assert not verdicts[7]["passed"] and "no result within --sample-timeout 8s" in verdicts[7]["error"]
    assert verdicts[:7] + verdicts[8:] == clean_verdicts[:7] + clean_verdicts[8:]
    assert report["errors"] == 1 and report["first_errors"][0]["sample"] == 7
    assert any("sample 7 within --sample-timeout 8s" in line for line in run.lines("[W] ")), run.describe()
    # The hung Python (started by the worker) was killed with its worker, not left behind.
    assert ended(int(pid_file.read_text())), "the hung dataset script's process is still running"


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]], ids=["in-process", "workers"])
def test_a_sample_that_fails_in_a_runner_is_recorded_and_the_run_goes_on(parity_bin, resnet, tmp_path, workers):
    model, shape = resnet
    # Sample 3 has the wrong rank: both runners refuse it.
    script = write_script(tmp_path, 10, shape,
                          body="    if i == 3:\n        return {'x': np.zeros((3, 32, 32), np.float32)}\n")
    run, verdicts, report = validate(parity_bin, model, script, tmp_path, *workers,
                                     tolerances=["--atol", "1", "--rtol", "1"])
    assert run.returncode == 1, run.describe()
    assert [v["index"] for v in verdicts] == list(range(10))
    assert verdicts[3]["error"] and "'x'" in verdicts[3]["error"] and not verdicts[3]["passed"]
    assert all(v["passed"] for i, v in enumerate(verdicts) if i != 3)
    assert report["errors"] == 1 and report["passed"] == 9
    assert any("sample 3:" in line for line in run.lines("[E] ")), run.describe()


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]], ids=["in-process", "workers"])
def test_fail_fast_stops_at_a_failed_sample(parity_bin, resnet, dataset, tmp_path, workers):
    model, _ = resnet
    run, verdicts, report = validate(parity_bin, model, dataset, tmp_path, *workers, "--fail-fast",
                                         tolerances=["--atol", "0", "--rtol", "0"])
    assert run.returncode == 1
    assert report["done"] < SAMPLES and report["failed"] >= 1
    assert "stopping (--fail-fast)" in run.output


def test_a_metric_that_raises_on_one_sample_is_recorded(parity_bin, resnet, tmp_path):
    model, shape = resnet
    script = write_script(tmp_path, 8, shape)
    metric = tmp_path / "metric.py"
    metric.write_text("""def metric(result0, result1, feed):
    if feed["x"].flat[0] == np.float32(__import__("numpy").random.default_rng(4).standard_normal(1)[0]):
        raise ValueError("cannot score this sample")
    return 1.0
import numpy as np
""")
    run, verdicts, report = validate(parity_bin, model, script, tmp_path, "--workers", "2", "--metric-script",
                                     metric, tolerances=["--atol", "1", "--rtol", "1"])
    assert run.returncode == 0, run.describe()  # a metric's error does not fail the sample
    assert all(v["passed"] for v in verdicts)
    assert "cannot score this sample" in verdicts[4]["metric_error"]
    assert report["metric_errors"] == 1
    assert report["metrics"][0]["count"] == 7 and report["metrics"][0]["mean"] == 1.0
    assert any("sample 4" in line for line in run.lines("[W] ")), run.describe()


def test_a_dataset_shorter_than_iterations_is_an_error(parity_bin, resnet, dataset, tmp_path):
    model, _ = resnet
    run = run_binary(parity_bin, ["run", model, "--onnxrt", "--dataset", dataset, "--iterations", "100",
                                  "--workers", "2"], cwd=tmp_path)
    assert run.returncode == 1
    errors = run.lines("[E] ")
    assert len(errors) == 1 and "48 sample(s), fewer than --iterations 100" in errors[0], run.describe()
    assert "Validating" not in run.output


@pytest.mark.parametrize("case", ["no_load", "empty_folder", "missing", "with_load_inputs", "workers_alone",
                                  "bad_model_in_workers", "timeout_in_process", "timeout_zero"])
def test_bad_dataset_input_is_one_clear_error(parity_bin, resnet, dataset, tmp_path, case):
    model, _ = resnet
    if case == "bad_model_in_workers":
        # Only the workers load the model: their error is the driver's one [E] line.
        model = tmp_path / "broken.onnx"
        model.write_bytes(b"not a model")
        args, expected = ["--dataset", dataset, "--workers", "2"], "broken.onnx: cannot parse the file"
    elif case == "no_load":
        (tmp_path / "data.py").write_text("def num_samples():\n    return 3\n")
        args, expected = ["--dataset", tmp_path / "data.py"], "defines no load"
    elif case == "empty_folder":
        (tmp_path / "empty").mkdir()
        args, expected = ["--dataset", tmp_path / "empty"], "holds no .npz files"
    elif case == "missing":
        args, expected = ["--dataset", tmp_path / "nothing"], "no such file or folder"
    elif case == "with_load_inputs":
        args, expected = ["--dataset", dataset, "--load-inputs", dataset / "0000.npz"], "--load-inputs cannot be used"
    elif case == "timeout_in_process":
        args, expected = ["--dataset", dataset, "--sample-timeout", "5"], "--sample-timeout stops a worker"
    elif case == "timeout_zero":
        args = ["--dataset", dataset, "--workers", "2", "--sample-timeout", "0"]
        expected = "above 0 and at most 1e7, got 0"
    else:
        args, expected = ["--workers", "2"], "give --dataset"
    run = run_binary(parity_bin, ["run", model, "--onnxrt", *args], cwd=tmp_path)
    assert run.returncode == 1
    errors = run.lines("[E] ")
    assert len(errors) == 1 and expected in errors[0], run.describe()
    assert not run.crash_markers()
