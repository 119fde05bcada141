"""Validation over a whole dataset from Python (docs/dataset-validation.md): the samples of a
dataset run through the runners, each judged with a comparison function, and merged into one
report by the same C++ code as `parity run --dataset` (exact counts, extremes, means and decade
histograms; medians and percentiles from a 1% sketch)."""
import os
import sys
import time

from parity import _parity
from parity.comparator.comparator import _native_runners
from parity.comparator.compare import CompareFunc
from parity.comparator.struct import IterationResult
from parity.exception import InvalidInputError, ParityError
from parity.logger import G_LOGGER


class DatasetReport(dict):
    """The report of validate_dataset: the object `parity run --dataset --report FILE` writes
    (samples, passed, failed, errors, pass_rate, outputs, metrics, first_errors, worst); true when
    every sample passed."""

    def __bool__(self):
        return self["samples"] == self["passed"]


def _is_ray_dataset(dataset):
    return type(dataset).__module__.startswith("ray.data") and hasattr(dataset, "iter_rows")


def _samples(dataset, iterations):
    """(number of samples, iterator of (index, feed or None, error or None)) for the dataset."""

    def check(size):
        if iterations is None:
            return size
        if iterations < 1:
            raise InvalidInputError("validate_dataset: iterations must be at least 1")
        if iterations > size:
            raise InvalidInputError(f"the dataset has {size} sample(s), fewer than iterations {iterations}")
        return iterations

    if isinstance(dataset, (str, os.PathLike)):
        # The sources `parity run --dataset` takes, opened by the same C++ code.
        source = _parity.open_dataset(os.fspath(dataset), sys.executable)
        G_LOGGER.info(f"Validating a dataset: {source.describe()}")
        samples = check(len(source))

        def load(index):
            try:
                return source.load(index), None
            except ParityError as error:
                return None, str(error)

        return samples, ((index, *load(index)) for index in range(samples))

    if _is_ray_dataset(dataset):
        # A Ray Dataset is streamed from the cluster (read and preprocessed there by Ray Data) into
        # this process; a sample's index is its row's position in the iteration.
        size = dataset.count()
        samples = check(size)
        if samples < size:
            dataset = dataset.limit(samples)

        def rows():
            index = -1
            for index, row in enumerate(dataset.iter_rows()):
                if index >= samples:
                    break
                yield index, dict(row), None
            if index + 1 < samples:
                raise InvalidInputError(f"the Ray Dataset gave {index + 1} row(s), fewer than its count() of {samples}")

        return samples, rows()

    if hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__"):
        samples = check(len(dataset))

        def items():
            for index in range(samples):
                try:
                    yield index, dataset[index], None
                except Exception as error:  # a sample that cannot be loaded fails; the run goes on
                    yield index, None, f"sample {index}: {type(error).__name__}: {error}"

        return samples, items()

    raise InvalidInputError(
        f"validate_dataset: the dataset must be a folder of .npz files or a script (a path), a ray.data.Dataset, "
        f"or a sequence of feed dicts (with __len__ and __getitem__), not {type(dataset).__name__}")


def _native_metric(metric):
    """The metric as the C++ validator calls it: (runner0, outputs0, runner1, outputs1, feed) ->
    [(name, value)], or the error's message when it raises or returns something else."""
    name = getattr(metric, "__name__", "metric")

    def call(runner0, outputs0, runner1, outputs1, feed):
        try:
            returned = metric(IterationResult(outputs0, None, runner0), IterationResult(outputs1, None, runner1), feed)
            items = returned.items() if hasattr(returned, "items") else [(name, returned)]
            values = []
            for key, value in items:
                try:
                    values.append((str(key), float(value)))
                except (TypeError, ValueError):
                    return f"{name} returned {value!r} for '{key}', expected a number"
            return values
        except Exception as error:
            return f"{name}: {type(error).__name__}: {error}"

    return call


def validate_dataset(runners, dataset, compare_func=None, metric=None, iterations=None, worst_samples=5,
                     fail_fast=False, on_sample=None):
    """Runs every sample of `dataset` (or the first `iterations`) through `runners`, in this process,
    judges each with `compare_func` (CompareFunc.simple() by default; any of CompareFunc's
    functions), pairing adjacent runners, and returns the merged DatasetReport.

    dataset: a path (a folder of .npz files or a script defining num_samples() and load(i), as
    `parity run --dataset` takes), a ray.data.Dataset (each row one feed: column name -> array), or
    a sequence of feed dicts (anything with __len__ and __getitem__). A sample that cannot be loaded
    (or a runner that raises on it) fails with its error and the run goes on; `fail_fast` stops at
    the first failed sample. metric: func(result0, result1, feed) -> number or {name: number}, as
    --metric-script's function. on_sample: called with each sample's verdict (a dict, the line
    --sample-results writes) as it is merged."""
    if compare_func is None:
        compare_func = CompareFunc.simple()
    native_compare = getattr(compare_func, "_native", None)
    if native_compare is None:
        raise InvalidInputError("validate_dataset: compare_func must be one of CompareFunc's functions")
    if worst_samples < 0:
        raise InvalidInputError("validate_dataset: worst_samples must be at least 0")
    samples, feeds = _samples(dataset, iterations)
    validation = _parity.DatasetValidation(_native_runners(runners), native_compare,
                                           None if metric is None else _native_metric(metric), samples, worst_samples)
    start = last = time.monotonic()
    done = failed = 0
    try:
        for index, feed, error in feeds:
            verdict = validation.fail(index, error) if error is not None else validation.validate(index, feed)
            done += 1
            failed += not verdict["passed"]
            if on_sample is not None:
                on_sample(verdict)
            now = time.monotonic()
            if now - last >= 2 or done == samples:
                last = now
                rate = done / (now - start) if now > start else 0.0
                G_LOGGER.info(f"Dataset progress | {done}/{samples} samples | {rate:.1f} samples/s | "
                              f"ETA {(samples - done) / rate if rate else 0:.0f}s | Failed: {failed}")
            if fail_fast and not verdict["passed"]:
                G_LOGGER.error(f"Sample {index} failed: stopping (fail_fast)")
                break
        validation.log_report()
        return DatasetReport(validation.report())
    finally:
        validation.close()
