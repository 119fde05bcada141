"""Comparator (Polygraphy's polygraphy.comparator.Comparator) over Parity's C++ Comparator."""
from parity import _parity
from parity._feeds import native_items
from parity.backend.base.runner import NativeRunner
from parity.common import TensorMetadata
from parity.comparator.compare import CompareFunc
from parity.comparator.data_loader import DataLoader
from parity.comparator.struct import AccuracyResult, RunResults


def _refuse(**options):
    for name, value in options.items():
        if value:
            raise NotImplementedError(f"Comparator.run: {name} is not supported by Parity")


class Comparator:
    @staticmethod
    def run(runners, data_loader=None, warm_up=None, use_subprocess=None, subprocess_timeout=None,
            subprocess_polling_interval=None, save_inputs_path=None):
        """Runs each runner (activate, every feed of the data loader, deactivate) and returns their
        RunResults. data_loader: a DataLoader (the default), or any iterable of {name: array}
        (its input_metadata attribute, if any, is set first). The feeds are made once, from the
        first runner's input metadata, and given to every runner. Runners may be Parity's or any
        BaseRunner subclass written in Python."""
        _refuse(use_subprocess=use_subprocess, subprocess_timeout=subprocess_timeout,
                subprocess_polling_interval=subprocess_polling_interval)
        data_loader = data_loader if data_loader is not None else DataLoader()

        def feeds(entries):
            if isinstance(data_loader, DataLoader):
                iterations = data_loader._generate_all(data_loader._entries(TensorMetadata._from_entries(entries)))
            else:
                if hasattr(data_loader, "input_metadata"):
                    data_loader.input_metadata = TensorMetadata._from_entries(entries)
                iterations = list(data_loader)
            if save_inputs_path is not None:
                from parity.json import save_json

                save_json(iterations, save_inputs_path, "inference input data")
            return [native_items(feed, "input") for feed in iterations]

        entries = []
        for runner in runners:
            if isinstance(runner, NativeRunner):
                entries.append((runner._native, runner._user_name))
            elif getattr(runner, "_parity_adapter", None) is not None and runner._parity_adapter.name == runner.name:
                entries.append((runner._parity_adapter, None))
            else:
                entries.append((runner, runner.name))
        return RunResults._from_native(_parity.comparator_run(entries, feeds, int(warm_up or 0)))

    @staticmethod
    def postprocess(run_results, postprocess_func):
        """Applies postprocess_func (e.g. PostprocessFunc.top_k()) to every IterationResult."""
        for _, iterations in run_results.items():
            for index, result in enumerate(iterations):
                iterations[index] = postprocess_func(result)
        return run_results

    @staticmethod
    def compare_accuracy(run_results, fail_fast=False, comparisons=None, compare_func=None):
        """Compares each runner with the next (or the given (i, j) index pairs) with compare_func
        (CompareFunc.simple() by default); logs Polygraphy's comparison blocks."""
        compare_func = compare_func if compare_func is not None else CompareFunc.simple()
        if not hasattr(compare_func, "_native"):
            raise TypeError("compare_func must come from parity.comparator.CompareFunc")
        from parity.comparator.compare import OutputCompareResult

        pairs = _parity.compare_accuracy(
            run_results._native() if isinstance(run_results, RunResults) else RunResults(run_results)._native(),
            compare_func._native, bool(fail_fast), [tuple(c) for c in comparisons] if comparisons is not None else None)
        result = AccuracyResult()
        for runner0, runner1, iterations in pairs:
            result[(runner0, runner1)] = [
                {fields["output0"]: OutputCompareResult(fields) for fields in iteration} for iteration in iterations
            ]
        return result

    @staticmethod
    def validate(run_results, check_inf=None, check_nan=None, fail_fast=None):
        """Checks every output for NaN (and Inf with check_inf); True when none was found."""
        return _parity.validate(run_results._native(), bool(check_inf), True if check_nan is None else bool(check_nan),
                                bool(fail_fast))
