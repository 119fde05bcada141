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


def _checked_count(size, iterations):
    """How many samples to validate of a dataset of `size`."""
    if iterations is None:
        return size
    if iterations < 1:
        raise InvalidInputError("validate_dataset: iterations must be at least 1")
    if iterations > size:
        raise InvalidInputError(f"the dataset has {size} sample(s), fewer than iterations {iterations}")
    return iterations


def _limited(dataset, iterations):
    """(samples, the Ray Dataset limited to them)."""
    size = dataset.count()
    samples = _checked_count(size, iterations)
    return samples, (dataset.limit(samples) if samples < size else dataset)


def _rows(rows, samples):
    """(index, row) for the first `samples` rows; fewer rows is an error."""
    index = -1
    for index, row in enumerate(rows):
        if index >= samples:
            break
        yield index, row
    if index + 1 < samples:
        raise InvalidInputError(f"the Ray Dataset gave {index + 1} row(s), fewer than its count() of {samples}")


def _rows_at(dataset, samples, indices):
    """{index: row} for the rows of a Ray Dataset at `indices` (of its first `samples`), read in one
    more pass over it."""
    wanted, found = set(indices), {}
    for index, row in _rows(dataset.iter_rows(), samples):
        if index in wanted:
            found[index] = dict(row)
            if len(found) == len(wanted):
                break
    return found


def _loaded_again(load, indices):
    """{index: feed, or the exception loading it raised} for the samples at `indices`."""
    feeds = {}
    for index in indices:
        try:
            feeds[index] = load(index)
        except Exception as error:
            feeds[index] = error
    return feeds


def _samples(dataset, iterations):
    """(number of samples, iterator of (index, feed or None, error or None), feeds_at(indices) ->
    {index: feed or exception}) for the dataset; feeds_at loads samples again."""

    if isinstance(dataset, (str, os.PathLike)):
        # The sources `parity run --dataset` takes, opened by the same C++ code.
        source = _parity.open_dataset(os.fspath(dataset), sys.executable)
        G_LOGGER.info(f"Validating a dataset: {source.describe()}")
        samples = _checked_count(len(source), iterations)

        def load(index):
            try:
                return source.load(index), None
            except ParityError as error:
                return None, str(error)

        return (samples, ((index, *load(index)) for index in range(samples)),
                lambda indices: _loaded_again(source.load, indices))

    if _is_ray_dataset(dataset):
        # A Ray Dataset is streamed from the cluster (read and preprocessed there by Ray Data) into
        # this process; a sample's index is its row's position in the iteration.
        samples, dataset = _limited(dataset, iterations)
        return (samples, ((index, dict(row), None) for index, row in _rows(dataset.iter_rows(), samples)),
                lambda indices: _rows_at(dataset, samples, indices))

    if hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__"):
        samples = _checked_count(len(dataset), iterations)

        def items():
            for index in range(samples):
                try:
                    yield index, dataset[index], None
                except Exception as error:  # a sample that cannot be loaded fails; the run goes on
                    yield index, None, f"sample {index}: {type(error).__name__}: {error}"

        return samples, items(), lambda indices: _loaded_again(dataset.__getitem__, indices)

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


class _RayBatchValidator:
    """One actor of the Ray Data actor pool: builds its runners once, returns each row's record."""

    def __init__(self, make_runners, compare_func, metric, threads):
        _parity.set_compute_threads(threads)  # the driver's, so the records are the driver's
        self._runners = make_runners()  # the native runners live as long as these objects
        self._validation = _parity.SampleValidation(_native_runners(self._runners), compare_func._native,
                                                    None if metric is None else _native_metric(metric))

    def __call__(self, batch):
        import numpy as np

        rows = len(next(iter(batch.values())))
        # Made as sample 0: DatasetValidation.add gives each record its row's position.
        records = [self._validation.validate(0, {name: column[row] for name, column in batch.items()})
                   for row in range(rows)]
        return {"record": np.array(records, dtype=object)}


def _ray_records(make_runners, dataset, iterations, compare_func, metric, actors, batch_size, threads):
    """(samples, iterator of (index, None, record), the Ray Dataset limited to the samples) for the
    rows of the Ray Dataset, validated in a pool of `actors` actors computing with `threads`
    threads."""
    if not callable(make_runners):
        raise InvalidInputError("validate_dataset: with ray_actors, runners must be a function returning the "
                                "runners (each actor makes its own)")
    samples, dataset = _limited(dataset, iterations)
    import ray.data

    validated = dataset.map_batches(_RayBatchValidator,
                                    fn_constructor_args=(make_runners, compare_func, metric, threads),
                                    batch_size=batch_size, batch_format="numpy",
                                    compute=ray.data.ActorPoolStrategy(size=actors))
    return (samples, ((index, None, row["record"]) for index, row in _rows(validated.iter_rows(), samples)),
            dataset)


def _save_worst(folder, worst, feeds, validation):
    """Saves each worst sample's inputs and every runner's outputs in `folder`, as
    `parity run --save-worst` does; a sample that cannot be loaded or run again is left out, with a
    warning."""
    os.makedirs(folder, exist_ok=True)
    saved = 0
    for index in worst:
        try:
            feed = feeds.get(index, LookupError("the dataset gave no such row"))
            if isinstance(feed, Exception):
                raise feed
            validation.save_sample(feed, os.path.join(folder, f"sample_{index}_inputs.json"),
                                   os.path.join(folder, f"sample_{index}_outputs.json"))
            saved += 1
        except Exception as error:
            G_LOGGER.warning(f"save_worst: sample {index} is not saved: {type(error).__name__}: {error}")
    G_LOGGER.info(f"Saved the {saved} worst sample(s)' inputs and outputs to {folder}")


def validate_dataset(runners, dataset, compare_func=None, metric=None, iterations=None, worst_samples=5,
                     fail_fast=False, on_sample=None, ray_actors=None, ray_batch_size=8, save_worst=None):
    """Runs every sample of `dataset` (or the first `iterations`) through `runners`, judges each
    with `compare_func` (CompareFunc.simple() by default; any of CompareFunc's functions), pairing
    adjacent runners, and returns the merged DatasetReport.

    dataset: a path (a folder of .npz files or a script defining num_samples() and load(i), as
    `parity run --dataset` takes), a ray.data.Dataset (each row one feed: column name -> array), or
    a sequence of feed dicts (anything with __len__ and __getitem__). A sample that cannot be loaded
    (or a runner that raises on it) fails with its error and the run goes on; `fail_fast` stops at
    the first failed sample. metric: func(result0, result1, feed) -> number or {name: number}, as
    --metric-script's function. on_sample: called with each sample's verdict (a dict, the line
    --sample-results writes) as it is merged.

    The runners run in this process, or, for a Ray Dataset with `ray_actors=N`, in a pool of N
    Ray Data actors (Dataset.map_batches, batches of `ray_batch_size` rows): `runners` is then a
    function returning the runners, which each actor calls once.

    Every executor computes with this process's compute thread count (the reference runner's BLAS
    results can change with it), pinned here and in each actor.

    save_worst: a folder where, for each of the `worst_samples` worst samples `i`,
    sample_<i>_inputs.json (for `parity run --load-inputs`) and sample_<i>_outputs.json (every
    runner's outputs, for --load-outputs) are saved. The samples are loaded and run again in this
    process (a Ray Dataset is read once more; with ray_actors, `runners()` is called here once)."""
    if compare_func is None:
        compare_func = CompareFunc.simple()
    if getattr(compare_func, "_native", None) is None:
        raise InvalidInputError("validate_dataset: compare_func must be one of CompareFunc's functions")
    if worst_samples < 0:
        raise InvalidInputError("validate_dataset: worst_samples must be at least 0")
    if ray_actors is not None and (not _is_ray_dataset(dataset) or ray_actors < 1):
        raise InvalidInputError("validate_dataset: ray_actors (at least 1) runs the samples of a ray.data.Dataset")
    threads = _parity.compute_threads()
    _parity.set_compute_threads(threads)
    local = None
    if ray_actors is not None:
        samples, records, limited = _ray_records(runners, dataset, iterations, compare_func, metric, ray_actors,
                                                 ray_batch_size, threads)

        def feeds_at(indices):
            return _rows_at(limited, samples, indices)
    else:
        samples, feeds, feeds_at = _samples(dataset, iterations)
        local = _parity.SampleValidation(_native_runners(runners), compare_func._native,
                                         None if metric is None else _native_metric(metric))
        records = ((index, error, None if error is not None else local.validate(index, feed))
                   for index, feed, error in feeds)
    merged = _parity.DatasetValidation(samples, worst_samples)
    start = last = time.monotonic()
    done = failed = 0
    try:
        for index, error, record in records:
            verdict = merged.fail(index, error) if error is not None else merged.add(index, record)
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
        merged.log_report()
        report = DatasetReport(merged.report())
        if save_worst is not None and report["worst"]:
            if local is None:
                made = runners()
                local = _parity.SampleValidation(_native_runners(made), compare_func._native, None)
            worst = [entry["sample"] for entry in report["worst"]]
            _save_worst(os.fspath(save_worst), worst, feeds_at(worst), local)
        return report
    finally:
        if local is not None:
            local.close()
