"""Comparison functions (Polygraphy's CompareFunc), implemented by Parity's C++ library: same
verdicts, with Parity's statistics block in the log."""
from parity import _parity


class OutputCompareResult:
    """The comparison of one output pair; true when it passed. Attributes as Polygraphy's
    (max_absdiff, max_reldiff, mean_*, median_*, quantile_*), plus Parity's (required_atol,
    required_rtol, mismatch_count, element_count, and the metrics of indices/distance/quality)."""

    def __init__(self, fields):
        self.__dict__.update(fields)

    def __bool__(self):
        return bool(self.passed)

    def __repr__(self):
        return f"OutputCompareResult({self.output0} vs {self.output1}: {'passed' if self.passed else 'FAILED'})"


class _CompareFunc:
    """A comparison function made by parity._parity's `factory` from `arguments`; pickled as them
    (so it can be sent to Ray actors)."""

    def __init__(self, factory, *arguments):
        self._factory, self._arguments = factory, arguments
        self._native = getattr(_parity, factory)(*arguments)

    def __reduce__(self):
        return (_CompareFunc, (self._factory, *self._arguments))

    def __call__(self, iter_result0, iter_result1):
        """{output name: OutputCompareResult} for one iteration of two runners."""
        from parity.comparator.struct import _as_iteration

        results = self._native(_as_iteration(iter_result0, "runner0")._native(),
                               _as_iteration(iter_result1, "runner1")._native())
        return {fields["output0"]: OutputCompareResult(fields) for fields in results}


def _unsupported(function, **options):
    for name, value in options.items():
        if value:
            raise NotImplementedError(f"CompareFunc.{function}: {name} is not supported by Parity")


class CompareFunc:
    """Factories of comparison functions for Comparator.compare_accuracy. Tolerances may be one
    value or {output name: value} with "" as the default."""

    @staticmethod
    def simple(check_shapes=None, rtol=None, atol=None, fail_fast=None, find_output_func=None, check_error_stat=None,
               infinities_compare_equal=None, save_heatmaps=None, show_heatmaps=None, save_error_metrics_plot=None,
               show_error_metrics_plot=None, error_quantile=None, statistics_style="parity"):
        _unsupported("simple", find_output_func=find_output_func, save_heatmaps=save_heatmaps,
                     show_heatmaps=show_heatmaps, save_error_metrics_plot=save_error_metrics_plot,
                     show_error_metrics_plot=show_error_metrics_plot)
        return _CompareFunc("compare_simple",
            True if check_shapes is None else check_shapes, rtol, atol, bool(fail_fast), check_error_stat,
            bool(infinities_compare_equal), error_quantile, statistics_style)

    @staticmethod
    def indices(index_tolerance=None, fail_fast=None, statistics_style="parity"):
        return _CompareFunc("compare_indices", index_tolerance, bool(fail_fast), statistics_style)

    @staticmethod
    def distance(l2_tolerance=None, cosine_similarity_threshold=None, check_shapes=None, fail_fast=None,
                 find_output_func=None, statistics_style="parity"):
        _unsupported("distance", find_output_func=find_output_func)
        return _CompareFunc("compare_distance",
            l2_tolerance, cosine_similarity_threshold, True if check_shapes is None else check_shapes,
            bool(fail_fast), statistics_style)

    @staticmethod
    def quality(psnr_tolerance=None, snr_tolerance=None, check_shapes=None, fail_fast=None, find_output_func=None,
                statistics_style="parity"):
        _unsupported("quality", find_output_func=find_output_func)
        return _CompareFunc("compare_quality",
            psnr_tolerance, snr_tolerance, True, True, True if check_shapes is None else check_shapes,
            bool(fail_fast), statistics_style)

    # Polygraphy's names for the same functions.
    distance_metrics = distance
    quality_metrics = quality
