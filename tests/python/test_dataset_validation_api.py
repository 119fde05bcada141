"""parity.comparator.validate_dataset: the dataset validation of `parity run --dataset` from Python
(docs/dataset-validation.md), over the CLI's sources, a sequence of feeds and a Ray Dataset. Its
report must be the CLI's report on the same samples: per-sample verdicts identical, the merged
statistics equal."""
import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tests" / "cli"))
from exported_models import build, export  # noqa: E402

from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx  # noqa: E402
from parity.backend.ref import RefRunner  # noqa: E402
from parity.comparator import CompareFunc, DatasetReport, RunResults, validate_dataset  # noqa: E402
from parity.exception import InvalidInputError  # noqa: E402

SAMPLES = 24
# Tight enough that some samples of the tiny ResNet fail between ONNX Runtime and the reference
# interpreter (their largest differences are a few 1e-7), so verdicts are not all the same.
ATOL = 6e-8
PARITY_BIN = os.environ.get("PARITY_BIN", str(REPO_ROOT / "build" / "release" / "tools" / "parity" / "parity"))

METRIC = """import numpy as np
def top1(result0, result1, feed):
    assert result0.runner_name != result1.runner_name and set(feed) == {"x"}
    return float(np.argmax(result0["logits"]) == np.argmax(result1["logits"]))
"""


@pytest.fixture(scope="session")
def resnet(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dataset_api")
    model = folder / "resnet.onnx"
    export("resnet", model, "torchscript")
    _, args, _ = build("resnet")
    feeds = [{"x": np.random.default_rng(i).standard_normal(tuple(args[0].shape)).astype(np.float32)}
             for i in range(SAMPLES)]
    samples = folder / "samples"
    samples.mkdir()
    for i, feed in enumerate(feeds):
        np.savez(samples / f"{i:04d}.npz", **feed)
    # A script whose load(5) raises: that sample fails with its error, the run goes on.
    script = folder / "data.py"
    script.write_text(f"""import numpy as np
def num_samples():
    return {SAMPLES}
def load(i):
    if i == 5:
        raise ValueError("sample five is unreadable")
    return dict(np.load("{samples}/%04d.npz" % i))
""")
    metric = folder / "metric.py"
    metric.write_text(METRIC)
    return model, feeds, samples, script, metric


def cli_report(resnet, source, tmp_path, *extra):
    model = resnet[0]
    assert os.path.exists(PARITY_BIN), f"the parity binary is not built at {PARITY_BIN} (set PARITY_BIN)"
    report, results = tmp_path / "report.json", tmp_path / "verdicts.jsonl"
    run = subprocess.run([PARITY_BIN, "run", str(model), "--onnxrt", "--ref", "--dataset", str(source),
                          "--atol", str(ATOL), "--rtol", "0", "--report", str(report), "--sample-results",
                          str(results), *map(str, extra)], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode in (0, 1) and report.exists(), run.stdout + run.stderr
    verdicts = sorted((json.loads(line) for line in results.read_text().splitlines()), key=lambda v: v["index"])
    return json.loads(report.read_text()), verdicts


def make_runners(model):
    return [OnnxrtRunner(SessionFromOnnx(model)), RefRunner(model)]


def api_report(resnet, dataset, metric=None, **options):
    model = resnet[0]
    verdicts = []
    report = validate_dataset(make_runners(str(model)), dataset,
                              CompareFunc.simple(atol=ATOL, rtol=0), metric=metric, on_sample=verdicts.append,
                              **options)
    assert isinstance(report, DatasetReport)
    return report, sorted(verdicts, key=lambda v: v["index"])


def without_runner_names(report):
    """Runner names hold each process's start time; everything else must be equal."""
    report = json.loads(json.dumps(report))
    for entry in report["outputs"] + report["metrics"]:
        entry.pop("pair")
    return report


def test_a_folder_gives_the_cli_report(resnet, tmp_path):
    samples = resnet[2]
    cli, cli_verdicts = cli_report(resnet, samples, tmp_path)
    report, verdicts = api_report(resnet, samples)
    assert verdicts == cli_verdicts
    assert without_runner_names(report) == without_runner_names(cli)
    assert 0 < report["passed"] < SAMPLES, "the tolerances should fail some samples and pass others"
    assert bool(report) is False and report["samples"] == SAMPLES
    assert sum(h["count"] for h in report["outputs"][0]["absolute"]["histogram"]) == SAMPLES * 10


def test_a_script_with_a_metric_and_a_bad_sample_gives_the_cli_report(resnet, tmp_path):
    _, _, _, script, metric_path = resnet
    cli, cli_verdicts = cli_report(resnet, script, tmp_path, "--metric-script", f"{metric_path}:top1",
                                   "--iterations", 20)
    namespace = {}
    exec(METRIC, namespace)
    report, verdicts = api_report(resnet, str(script), metric=namespace["top1"], iterations=20)
    assert verdicts == cli_verdicts and len(verdicts) == 20
    assert without_runner_names(report) == without_runner_names(cli)
    assert report["errors"] == 1 and report["first_errors"][0]["sample"] == 5
    assert "sample five is unreadable" in report["first_errors"][0]["error"]
    assert report["metrics"][0]["metric"] == "top1" and report["metrics"][0]["count"] == 19


def test_a_sequence_of_feeds_gives_the_folders_report(resnet, tmp_path):
    folder_report, folder_verdicts = api_report(resnet, resnet[2])
    report, verdicts = api_report(resnet, resnet[1])
    assert verdicts == folder_verdicts
    assert without_runner_names(report) == without_runner_names(folder_report)


def saved_outputs(folder, index):
    """{output name: [array per runner]} of a sample's saved RunResults (runner names hold each process's start
    time)."""
    results = RunResults.load(str(folder / f"sample_{index}_outputs.json"))
    return {name: [iterations[0][name] for _, iterations in results] for name in results[0][1][0].keys()}


def test_save_worst_saves_what_the_cli_saves(resnet, tmp_path):
    model, _, samples, _, _ = resnet
    cli, _ = cli_report(resnet, samples, tmp_path, "--worst-samples", 3, "--save-worst", tmp_path / "cli")
    report, verdicts = api_report(resnet, samples, worst_samples=3, save_worst=tmp_path / "api")
    worst = [entry["sample"] for entry in report["worst"]]
    assert worst == [entry["sample"] for entry in cli["worst"]] and len(worst) == 3
    assert sorted(os.listdir(tmp_path / "api")) == sorted(os.listdir(tmp_path / "cli")) == sorted(
        f"sample_{i}_{kind}.json" for i in worst for kind in ("inputs", "outputs"))
    for index in worst:
        inputs = f"sample_{index}_inputs.json"
        assert (tmp_path / "api" / inputs).read_bytes() == (tmp_path / "cli" / inputs).read_bytes()
        api_outputs, cli_outputs = saved_outputs(tmp_path / "api", index), saved_outputs(tmp_path / "cli", index)
        assert api_outputs.keys() == cli_outputs.keys() == {"logits"}
        for name in api_outputs:
            assert len(api_outputs[name]) == 2
            for api_array, cli_array in zip(api_outputs[name], cli_outputs[name]):
                np.testing.assert_array_equal(api_array, cli_array)
        # --load-inputs reproduces the sample: the same verdict in a plain run.
        run = subprocess.run([PARITY_BIN, "run", str(model), "--onnxrt", "--ref", "--load-inputs",
                              str(tmp_path / "api" / inputs), "--atol", str(ATOL), "--rtol", "0"],
                             capture_output=True, text=True, cwd=tmp_path)
        assert run.returncode == (0 if verdicts[index]["passed"] else 1), run.stdout + run.stderr


def test_save_worst_leaves_out_a_sample_that_cannot_be_loaded_again(resnet, tmp_path, caplog):
    feeds = resnet[1]

    class LoadsOnce:
        """Sample 2 is its worst sample (its input scaled up) and cannot be loaded a second time."""

        def __init__(self):
            self.loaded = set()

        def __len__(self):
            return 6

        def __getitem__(self, index):
            if index in self.loaded and index == 2:
                raise OSError("the camera is gone")
            self.loaded.add(index)
            return {"x": feeds[index]["x"] * (1000 if index == 2 else 1)}

    report, _ = api_report(resnet, LoadsOnce(), worst_samples=2, save_worst=tmp_path / "worst")
    worst = [entry["sample"] for entry in report["worst"]]
    assert worst[0] == 2 and len(worst) == 2
    assert sorted(os.listdir(tmp_path / "worst")) == [f"sample_{worst[1]}_inputs.json",
                                                      f"sample_{worst[1]}_outputs.json"]


# Under OpenBLAS kernels such as Haswell's the reference runner's results change by an ulp with the BLAS
# thread count, and Ray starts its actors with OMP_NUM_THREADS=1: the actors must compute with this process's
# thread count (validate_dataset gives it to them) for the reports to be equal.
def test_a_ray_dataset_gives_the_folders_report(resnet, tmp_path):
    try:
        import ray
        import ray.data
    except ImportError as error:  # scripts/requirements.txt pins ray, pyarrow and pandas
        print(f"skipped: Ray Data cannot be imported here: {error}")
        pytest.skip(f"Ray Data cannot be imported here: {error}")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        ray.data.DataContext.get_current().execution_options.preserve_order = True
        dataset = ray.data.from_items(resnet[1])
        folder_report, folder_verdicts = api_report(resnet, resnet[2])
        report, verdicts = api_report(resnet, dataset)
        assert verdicts == folder_verdicts
        assert without_runner_names(report) == without_runner_names(folder_report)
        # The first `iterations` rows only.
        report, verdicts = api_report(resnet, dataset, iterations=7)
        assert [v["index"] for v in verdicts] == list(range(7)) and verdicts == folder_verdicts[:7]
        # The runners in a pool of two Ray Data actors, each making its own.
        import ray.cloudpickle

        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        verdicts = []
        report = validate_dataset(functools.partial(make_runners, str(resnet[0])), dataset,
                                  CompareFunc.simple(atol=ATOL, rtol=0), on_sample=verdicts.append, ray_actors=2,
                                  ray_batch_size=5)
        assert sorted(verdicts, key=lambda v: v["index"]) == folder_verdicts
        assert without_runner_names(report) == without_runner_names(folder_report)
        # save_worst reads the Ray Dataset's worst rows once more and runs them in this process.
        api_report(resnet, resnet[2], worst_samples=2, save_worst=tmp_path / "folder_worst")
        validate_dataset(functools.partial(make_runners, str(resnet[0])), dataset,
                         CompareFunc.simple(atol=ATOL, rtol=0), worst_samples=2, ray_actors=2,
                         save_worst=tmp_path / "ray_worst")
        saved = sorted(os.listdir(tmp_path / "folder_worst"))
        assert len(saved) == 4 and sorted(os.listdir(tmp_path / "ray_worst")) == saved
        for name in saved:
            if name.endswith("_inputs.json"):
                assert (tmp_path / "ray_worst" / name).read_bytes() == (tmp_path / "folder_worst" / name).read_bytes()

        # An actor killed mid-batch (its process ends in the metric, once) is restarted by Ray Data
        # and its batch run again: every sample counted once, the same report as in one process.
        marker = tmp_path / "killed"
        victim = float(resnet[1][10]["x"].ravel()[0])

        def metric(result0, result1, feed):
            if float(feed["x"].ravel()[0]) == victim and not marker.exists():
                marker.touch()
                os._exit(9)
            return 1.0

        marker.touch()
        local_report, local_verdicts = api_report(resnet, resnet[1], metric=metric)
        marker.unlink()
        verdicts = []
        report = validate_dataset(functools.partial(make_runners, str(resnet[0])), dataset,
                                  CompareFunc.simple(atol=ATOL, rtol=0), metric=metric, on_sample=verdicts.append,
                                  ray_actors=2, ray_batch_size=4)
        assert marker.exists(), "the metric should have ended an actor"
        assert sorted(verdicts, key=lambda v: v["index"]) == local_verdicts
        assert without_runner_names(report) == without_runner_names(local_report)
        assert report["metrics"][0]["count"] == SAMPLES
    finally:
        ray.shutdown()


def test_a_metric_that_raises_records_the_samples_metric_error(resnet):
    def metric(result0, result1, feed):
        if float(feed["x"].ravel()[0]) > 0:
            raise RuntimeError("no label for this one")
        return {"agree": 1.0}

    report, verdicts = api_report(resnet, resnet[1], metric=metric)
    raising = [i for i, feed in enumerate(resnet[1]) if float(feed["x"].ravel()[0]) > 0]
    assert 0 < len(raising) < SAMPLES
    folder_report, folder_verdicts = api_report(resnet, resnet[2])
    assert [v["passed"] for v in verdicts] == [v["passed"] for v in folder_verdicts]  # verdicts stand
    assert report["metrics"][0]["count"] == SAMPLES - len(raising)
    assert report["metric_errors"] == len(raising)
    assert [v["index"] for v in verdicts if v["metric_error"]] == raising
    assert "RuntimeError: no label for this one" in verdicts[raising[0]]["metric_error"]


def test_bad_datasets_are_one_clear_error(resnet, tmp_path):
    with pytest.raises(InvalidInputError, match="fewer than iterations 30"):
        api_report(resnet, resnet[1], iterations=30)
    with pytest.raises(InvalidInputError, match="not int"):
        api_report(resnet, 42)
    with pytest.raises(InvalidInputError, match="ray_actors"):
        api_report(resnet, resnet[1], ray_actors=2)
    with pytest.raises(Exception, match="no_such_folder"):
        api_report(resnet, str(tmp_path / "no_such_folder"))
