"""`parity run --dataset`: a whole dataset through the runners, in this process or in worker processes
(--workers), merged into one report (docs/dataset-validation.md). The results must not depend on how the
samples were split: per-sample verdicts identical, exact statistics equal."""

import json
import os
import signal
import subprocess
import sys
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


def validate(parity_bin, model, dataset, folder, *extra, expect=None, name="run"):
    results = folder / f"{name}.jsonl"
    report = folder / f"{name}.json"
    run = run_binary(parity_bin, ["run", model, "--onnxrt", "--ref", "--dataset", dataset, *TOLERANCES,
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
