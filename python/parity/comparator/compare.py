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
    """A comparison function made by parity._parity's `factory` from `arguments`, with, for `simple`, the
    pictures to draw; pickled as them (so it can be sent to Ray actors)."""

    def __init__(self, factory, *arguments, pictures=None):
        self._factory, self._arguments = factory, arguments
        self._native = getattr(_parity, factory)(*arguments)
        self._pictures = pictures  # simple's save_heatmaps=... options (error_pictures.draw's), or None

    def __reduce__(self):
        return (_rebuild_compare_func, (self._factory, self._arguments, self._pictures))

    def __call__(self, iter_result0, iter_result1):
        """{output name: OutputCompareResult} for one iteration of two runners."""
        from parity.comparator.struct import _as_iteration

        iteration0 = _as_iteration(iter_result0, "runner0")
        iteration1 = _as_iteration(iter_result1, "runner1")
        results = self._native(iteration0._native(), iteration1._native())
        if self._pictures:
            self._draw(iteration0, iteration1, results)
        return {fields["output0"]: OutputCompareResult(fields) for fields in results}

    def _draw(self, iteration0, iteration1, results):
        """Polygraphy's heatmaps and error metrics plots of each compared output pair."""
        import numpy as np

        from parity.comparator import error_pictures
        from parity.logger import G_LOGGER

        for fields in results:
            if not fields.get("compared"):
                continue
            out0, out1 = iteration0[fields["output0"]], iteration1[fields["output1"]]
            try:
                out0, out1 = np.asarray(out0), np.asarray(out1)
                if out0.shape != out1.shape and out0.size == out1.size:
                    out1 = out1.reshape(out0.shape)  # check_shapes=False compared them in the first's shape
                messages = error_pictures.draw(out0, out1, iteration0.runner_name, iteration1.runner_name,
                                               fields["output0"], fields["output1"], **self._pictures)
            except Exception as error:  # a picture that cannot be drawn does not end the comparison
                G_LOGGER.warning(f"No pictures of output '{fields['output0']}': drawing them failed: {error}")
                continue
            for severity, message in messages:
                (G_LOGGER.warning if severity == "warning" else G_LOGGER.info)(message)


def _rebuild_compare_func(factory, arguments, pictures):
    return _CompareFunc(factory, *arguments, pictures=pictures)


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
        """save_heatmaps/save_error_metrics_plot: folders for Polygraphy's heatmaps of each output's absolute and
        relative error and its plot of both against the reference's magnitude; show_*: display them (needs a
        display). Drawn with matplotlib (parity.comparator.error_pictures; docs/pictures.md)."""
        _unsupported("simple", find_output_func=find_output_func)
        pictures = None
        if save_heatmaps or show_heatmaps or save_error_metrics_plot or show_error_metrics_plot:
            try:
                import matplotlib  # noqa: F401  (fails here, not at the first comparison)
            except ImportError as error:
                raise ImportError(f"CompareFunc.simple: heatmaps and error metrics plots are drawn with matplotlib, "
                                  f"which cannot be imported ({error}); install the version scripts/requirements.txt "
                                  f"pins") from error
            from parity.comparator import error_pictures
            from parity.logger import G_LOGGER

            no_display = error_pictures.display_available()
            if no_display is not None and (show_heatmaps or show_error_metrics_plot):
                G_LOGGER.warning(f"show_heatmaps/show_error_metrics_plot: cannot open a window: {no_display}; save the "
                                 f"pictures instead (save_heatmaps, save_error_metrics_plot)")
                show_heatmaps = show_error_metrics_plot = False
            pictures = dict(save_heatmaps=save_heatmaps, show_heatmaps=bool(show_heatmaps),
                            save_error_metrics_plot=save_error_metrics_plot,
                            show_error_metrics_plot=bool(show_error_metrics_plot),
                            infinities_compare_equal=bool(infinities_compare_equal))
        return _CompareFunc("compare_simple",
            True if check_shapes is None else check_shapes, rtol, atol, bool(fail_fast), check_error_stat,
            bool(infinities_compare_equal), error_quantile, statistics_style, pictures=pictures)

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
