"""Comparator (Polygraphy's polygraphy.comparator.Comparator) over Parity's C++ Comparator."""
import json

from parity import _parity
from parity._feeds import native_items
from parity.backend.base.runner import NativeRunner
from parity.common import TensorMetadata
from parity.comparator.compare import CompareFunc
from parity.comparator.data_loader import DataLoader
from parity.comparator.layerwise import LayerwiseResult
from parity.comparator.perf import PerfResult
from parity.comparator.struct import AccuracyResult, RunResults, _as_iteration
from parity.constants import MARK_ALL


def _native_runners(runners):
    """(runner, display name) pairs for the C++ Comparator: Parity's runners as their native runner,
    runners written in Python as themselves."""
    entries = []
    for runner in runners:
        if isinstance(runner, NativeRunner):
            entries.append((runner._native, runner._user_name))
        elif getattr(runner, "_parity_adapter", None) is not None and runner._parity_adapter.name == runner.name:
            entries.append((runner._parity_adapter, None))
        else:
            entries.append((runner, runner.name))
    return entries


def _native_feeds(data_loader, save_inputs_path):
    """The data loader as the C++ Comparator calls it: with the first runner's input metadata,
    returning every iteration's feed (saved to save_inputs_path first, if given)."""
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

    return feeds


def _sweep_feeds(data_loader, shape_sets):
    """PerfConfig(shapes=...)'s data loaders: per shape set, one feed of random data from the default (or the given)
    DataLoader with the set's shapes over its input_metadata's (`parity run --perf-shapes`)."""
    if not shape_sets:
        return []
    data_loader = data_loader if data_loader is not None else DataLoader()
    if not isinstance(data_loader, DataLoader):
        raise ValueError("Comparator.run: PerfConfig(shapes=...) generates random data of each shape: leave out "
                         "data_loader or give a DataLoader")
    loaders = []
    for shape_set in shape_sets:
        metadata = TensorMetadata()
        for name, (dtype, shape) in data_loader.user_input_metadata.items():
            metadata.add(name, dtype, shape)
        for name, dims in shape_set:
            dtype = data_loader.user_input_metadata[name].dtype if name in data_loader.user_input_metadata else None
            metadata.add(name, dtype, dims)
        loader = DataLoader(seed=data_loader.seed, iterations=1, input_metadata=metadata,
                            int_range=data_loader._int_range, float_range=data_loader._float_range,
                            val_range=data_loader.val_range,
                            data_loader_backend_module=data_loader.data_loader_backend_module)
        loaders.append(_native_feeds(loader, None))
    return loaders


def _top_k_rules(postprocess_func):
    """PostprocessFunc.top_k's rules as (output name or "", k, axis) entries."""
    if postprocess_func is None:
        return []
    rule = getattr(postprocess_func, "_parity_top_k", None)
    if rule is None:
        raise TypeError("Comparator.run_layerwise: postprocess_func must be PostprocessFunc.top_k(...)")
    k, axis = rule
    rules = []
    for name, value in (k.items() if isinstance(k, dict) else [("", k)]):
        if not value:
            continue
        value, value_axis = value if isinstance(value, (tuple, list)) else (value, axis)
        rules.append((name, int(value), int(value_axis)))
    return rules


def _compare_accuracy_with(compare_func, run_results, fail_fast, comparisons):
    """Comparator.compare_accuracy with a comparison function written in Python, called as
    Polygraphy calls it: with each pair's IterationResults, in the order of the comparison's
    indices; what it returns is kept as it is in the AccuracyResult. Logs the lines the C++
    comparator logs for CompareFunc's functions."""
    from parity.exception import InvalidInputError
    from parity.logger import G_LOGGER

    entries = list(list.__iter__(run_results if isinstance(run_results, RunResults) else RunResults(run_results)))
    if comparisons is None:
        comparisons = [(index, index + 1) for index in range(len(entries) - 1)]
    result = AccuracyResult()
    for index0, index1 in comparisons:
        if not (0 <= index0 < len(entries) and 0 <= index1 < len(entries)):
            raise InvalidInputError(
                f"comparison ({index0}, {index1}) names a runner beyond the {len(entries)} runner(s) that ran")
        (name0, iterations0), (name1, iterations1) = entries[index0], entries[index1]
        G_LOGGER.start(f"Accuracy Comparison | {name0} vs. {name1}")
        pair = (name0, name1)
        result[pair] = []
        with G_LOGGER.indent():
            count = min(len(iterations0), len(iterations1))
            for index, (iteration0, iteration1) in enumerate(zip(iterations0, iterations1)):
                if count > 1:
                    G_LOGGER.info(f"Iteration: {index}")
                with G_LOGGER.indent(1 if count > 1 else 0):
                    matches = compare_func(_as_iteration(iteration0, name0), _as_iteration(iteration1, name1))
                result[pair].append(matches)
                if fail_fast and not all(bool(matched) for matched in matches.values()):
                    return result
            G_LOGGER.extra_verbose(f"Finished comparing {name0} with {name1}")
        passed, _, total = result.stats(pair)
        rate = passed / total * 100.0 if total else 100.0
        message = f"Accuracy Summary | {name0} vs. {name1} | Passed: {passed}/{total} iterations | Pass Rate: {rate}%"
        if passed == total:
            G_LOGGER.finish(message)
        else:
            G_LOGGER.error(message)
    return result


def _refuse(**options):
    for name, value in options.items():
        if value:
            raise NotImplementedError(f"Comparator.run: {name} is not supported by Parity")


class Comparator:
    @staticmethod
    def run(runners, data_loader=None, warm_up=None, use_subprocess=None, subprocess_timeout=None,
            subprocess_polling_interval=None, save_inputs_path=None, perf=None):
        """Runs each runner (activate, every feed of the data loader, deactivate) and returns their
        RunResults. data_loader: a DataLoader (the default), or any iterable of {name: array}
        (its input_metadata attribute, if any, is set first). The feeds are made once, from the
        first runner's input metadata, and given to every runner. Runners may be Parity's or any
        BaseRunner subclass written in Python.

        perf: a PerfConfig for performance mode (`parity run --perf`, docs/perf.md): each runner's
        outputs of one untimed inference per feed, then warm_up and the timed inferences; the
        returned RunResults' `perf` holds a PerfResult per runner, in order."""
        _refuse(use_subprocess=use_subprocess, subprocess_timeout=subprocess_timeout,
                subprocess_polling_interval=subprocess_polling_interval)
        if perf is not None:
            entries, report = _parity.comparator_run_perf(
                _native_runners(runners), _native_feeds(data_loader, save_inputs_path), int(warm_up or 0),
                int(perf.iterations), None if perf.duration is None else float(perf.duration),
                int(perf.layer_iterations) if perf.layers else 0, int(perf.layers),
                None if perf.requests is None else int(perf.requests), _sweep_feeds(data_loader, perf.shapes))
            results = RunResults._from_native(entries)
            results.perf = [PerfResult(entry) for entry in json.loads(report)]
            return results
        return RunResults._from_native(_parity.comparator_run(_native_runners(runners),
                                                              _native_feeds(data_loader, save_inputs_path),
                                                              int(warm_up or 0)))

    @staticmethod
    def run_layerwise(runners, data_loader=None, warm_up=None, save_inputs_path=None, outputs=MARK_ALL,
                      exclude_outputs=None, compare_func=None, postprocess_func=None, fail_fast=False,
                      validate=False, memory_budget=None, worst_count=10, attribute=False):
        """Runs two runners and compares every tensor they produce, streamed tensor by tensor as
        `parity run --onnx-outputs mark all` does with two runners: the first runner's tensors wait
        (in memory up to memory_budget bytes, default 1 GiB, the rest in a temporary file) and the
        second's are compared one by one as they are produced, so memory stays bounded whatever the
        model's size. The runners' models need no marked outputs: they stream every tensor.

        outputs: constants.MARK_ALL (every tensor) or a list of tensor names; exclude_outputs: names
        never compared. compare_func: CompareFunc.simple(...) (the default; the only function a
        streamed comparison takes). postprocess_func: PostprocessFunc.top_k(...), applied to each
        tensor. validate: also check every tensor for NaN and Inf. worst_count: how many of the
        worst tensors the summary lists. attribute: also attribute each tensor's error (`parity run
        --attribute`, docs/attribution.md): every entry then carries local_error, inherited_error
        ({"abs", "rel"}; local_error None where its node could not run alone), amplification and
        flipped, and the result's `attribution` the whole report. The other arguments are
        Comparator.run's.

        Returns a LayerwiseResult (true when everything matched and, with validate, no tensor held
        NaN or Inf): the entries, the first divergence, the worst tensors and the runners' graph
        outputs (RunResults)."""
        if getattr(compare_func, "_pictures", None):
            raise ValueError("Comparator.run_layerwise: heatmaps and error metrics plots (save_heatmaps=...) are drawn "
                             "by Comparator.compare_accuracy; run with Comparator.run and compare its results, or use "
                             "`parity run --save-heatmaps`, which draws streamed comparisons too")
        if len(runners) != 2:
            raise ValueError(f"Comparator.run_layerwise compares two runners, got {len(runners)}")
        compare_func = compare_func if compare_func is not None else CompareFunc.simple()
        if getattr(getattr(compare_func, "_native", None), "kind", None) != "simple":
            raise TypeError("Comparator.run_layerwise: compare_func must be CompareFunc.simple(...)")
        if outputs != MARK_ALL and (isinstance(outputs, str) or not all(isinstance(n, str) for n in outputs)):
            raise TypeError("Comparator.run_layerwise: outputs must be constants.MARK_ALL or a list of tensor names")
        verdict = _parity.comparator_run_layerwise(
            _native_runners(runners), _native_feeds(data_loader, save_inputs_path), int(warm_up or 0),
            None if outputs == MARK_ALL else list(outputs), list(exclude_outputs or []), compare_func._native,
            _top_k_rules(postprocess_func), bool(fail_fast), bool(validate),
            int(memory_budget) if memory_budget is not None else 1 << 30, int(worst_count), bool(attribute))
        return LayerwiseResult._from_native(verdict)

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
        and logs Polygraphy's comparison blocks. compare_func: CompareFunc.simple() (the default)
        or another CompareFunc, or as in Polygraphy any callable(IterationResult, IterationResult)
        returning {output name: result} where bool(result) says whether the output matched."""
        compare_func = compare_func if compare_func is not None else CompareFunc.simple()
        if getattr(compare_func, "_pictures", None):
            # CompareFunc.simple(save_heatmaps=...) draws each pair's pictures in Python, after comparing it.
            return _compare_accuracy_with(compare_func, run_results, fail_fast, comparisons)
        if not hasattr(compare_func, "_native"):
            if not callable(compare_func):
                raise TypeError("compare_func must be a CompareFunc or a callable(iteration_result0, "
                                f"iteration_result1) -> {{output name: bool-like result}}, got {type(compare_func)}")
            return _compare_accuracy_with(compare_func, run_results, fail_fast, comparisons)
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
