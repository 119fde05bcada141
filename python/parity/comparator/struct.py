"""IterationResult, RunResults and AccuracyResult with Polygraphy's behaviour; RunResults files are
Polygraphy's JSON format, read and written by the C++ library."""
import os
from collections import OrderedDict

from parity import _parity
from parity._feeds import native_items


class IterationResult(OrderedDict):
    """One runner's outputs for one iteration: {name: numpy array}, with runner_name and runtime."""

    def __init__(self, outputs=None, runtime=None, runner_name=None):
        super().__init__(outputs or {})
        self.runtime = runtime
        self.runner_name = runner_name if runner_name is not None else "custom_runner"

    def __eq__(self, other):
        import numpy as np

        if not isinstance(other, IterationResult):
            return False
        if self.runner_name != other.runner_name or list(self.keys()) != list(other.keys()):
            return False
        return all(np.array_equal(self[name], other[name]) for name in self)

    __hash__ = None

    def _native(self):
        return (self.runner_name, self.runtime, native_items(self, "output"))


class RunResults(list):
    """Runner names mapped to per-iteration outputs: a list of (runner_name, [IterationResult])
    that also behaves like an ordered dict allowing duplicates (Polygraphy's RunResults)."""

    # Performance mode (Comparator.run(perf=...)): one PerfResult per runner, in run order; None otherwise.
    perf = None

    def items(self):
        for name, iterations in list.__iter__(self):
            yield name, iterations

    def keys(self):
        for name, _ in list.__iter__(self):
            yield name

    def values(self):
        for _, iterations in list.__iter__(self):
            yield iterations

    def update(self, other):
        for name, iterations in other.items():
            self[name] = iterations
        return self

    def add(self, out_list, runtime=None, runner_name=None):
        runner_name = runner_name if runner_name is not None else "custom_runner"
        self[runner_name] = [IterationResult(out, runtime, runner_name) for out in out_list]

    def __getitem__(self, key):
        if isinstance(key, (int, slice)):
            return list.__getitem__(self, key)
        for name, iterations in list.__iter__(self):
            if name == key:
                return iterations
        raise KeyError(
            f"{key:35} does not exist in this RunResults instance. Note: Available runners: {list(self.keys())}"
        )

    def __setitem__(self, key, value):
        if isinstance(key, (int, slice)):
            return list.__setitem__(self, key, value)
        for index, name in enumerate(self.keys()):
            if name == key:
                list.__setitem__(self, index, (key, value))
                return
        self.append((key, value))

    def __contains__(self, value):
        if isinstance(value, (str, bytes)):
            return value in list(self.keys())
        return list.__contains__(self, value)

    def _native(self):
        return [
            (name, [_as_iteration(result, name)._native() for result in iterations])
            for name, iterations in list.__iter__(self)
        ]

    @staticmethod
    def _from_native(entries):
        results = RunResults()
        for name, iterations in entries:
            results.append(
                (name, [IterationResult(outputs, runtime, runner) for runner, runtime, outputs in iterations])
            )
        return results

    def save(self, dest):
        """Writes Polygraphy's RunResults JSON (polygraphy run --load-outputs reads it)."""
        if hasattr(dest, "write"):
            import tempfile

            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "results.json")
                _parity.save_run_results(path, self._native())
                with open(path) as f:
                    dest.write(f.read())
            return
        _parity.save_run_results(os.fspath(dest), self._native())

    @staticmethod
    def load(src):
        """Reads a RunResults file written by Parity or Polygraphy (path or file-like object)."""
        if hasattr(src, "read"):
            import tempfile

            data = src.read()
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "results.json")
                with open(path, "wb" if isinstance(data, bytes) else "w") as f:
                    f.write(data)
                return RunResults._from_native(_parity.load_run_results(path))
        return RunResults._from_native(_parity.load_run_results(os.fspath(src)))


def _as_iteration(result, runner_name):
    if isinstance(result, IterationResult):
        return result
    return IterationResult(result, None, runner_name)


class AccuracyResult(OrderedDict):
    """(runner0, runner1) -> [ {output name: OutputCompareResult} per iteration ]; true when every
    output of every iteration of every pair matched."""

    def __bool__(self):
        return all(
            bool(result) for iterations in self.values() for iteration in iterations for result in iteration.values()
        )

    def _get_runner_pair(self, runner_pair):
        return runner_pair if runner_pair is not None else list(self.keys())[0]

    def percentage(self, runner_pair=None):
        """Percentage (0..1) of iterations that passed for the pair (the first one by default)."""
        if not self:
            return 0.0
        iterations = self[self._get_runner_pair(runner_pair)]
        if not iterations:
            return 0.0
        return sum(all(bool(r) for r in it.values()) for it in iterations) / float(len(iterations))

    def stats(self, runner_pair=None):
        """(passed, failed, total) iteration counts for the pair."""
        iterations = self[self._get_runner_pair(runner_pair)]
        passed = sum(all(bool(r) for r in it.values()) for it in iterations)
        return passed, len(iterations) - passed, len(iterations)
