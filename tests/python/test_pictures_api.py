"""CompareFunc.simple(save_heatmaps=..., save_error_metrics_plot=..., show_*=...): Polygraphy's pictures
from the Python API, with the file names Polygraphy's own CompareFunc.simple writes for the same arrays."""
import os

import numpy as np
import pytest

from parity.comparator import Comparator, CompareFunc, IterationResult, RunResults


def results_of(module_results, iteration_result):
    """A RunResults of two runners (the given package's classes) with drifted arrays: 4-D, 2-D, rank 1."""
    rng = np.random.default_rng(3)
    reference = {"features": rng.standard_normal((1, 3, 6, 6)).astype(np.float32),
                 "logits": rng.standard_normal((2, 5)).astype(np.float32)}
    drifted = {name: (array * (1 + 1e-3 * rng.standard_normal(array.shape))).astype(np.float32)
               for name, array in reference.items()}
    results = module_results()
    results.append(("runner-a", [iteration_result(outputs=drifted, runner_name="runner-a")]))
    results.append(("runner-b", [iteration_result(outputs=reference, runner_name="runner-b")]))
    return results


def test_same_files_as_polygraphy(tmp_path):
    from polygraphy.comparator import Comparator as PolyComparator
    from polygraphy.comparator import CompareFunc as PolyCompareFunc
    from polygraphy.comparator import RunResults as PolyRunResults
    from polygraphy.comparator.struct import IterationResult as PolyIterationResult

    PolyComparator.compare_accuracy(
        results_of(PolyRunResults, PolyIterationResult),
        compare_func=PolyCompareFunc.simple(save_heatmaps=str(tmp_path / "poly_h"),
                                            save_error_metrics_plot=str(tmp_path / "poly_p")))
    accuracy = Comparator.compare_accuracy(
        results_of(RunResults, IterationResult),
        compare_func=CompareFunc.simple(save_heatmaps=str(tmp_path / "h"), save_error_metrics_plot=str(tmp_path / "p")))
    assert not accuracy  # 0.1% off fails the default tolerance
    assert sorted(os.listdir(tmp_path / "h")) == sorted(os.listdir(tmp_path / "poly_h"))
    assert sorted(os.listdir(tmp_path / "p")) == sorted(os.listdir(tmp_path / "poly_p")) == \
        ["error_metrics_features.png", "error_metrics_logits.png"]


def test_show_without_display_warns(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    compare = CompareFunc.simple(show_heatmaps=True)
    assert "show_heatmaps/show_error_metrics_plot: cannot open a window: no display" in capsys.readouterr().out
    Comparator.compare_accuracy(results_of(RunResults, IterationResult), compare_func=compare)


def test_run_layerwise_refuses_pictures(tmp_path):
    with pytest.raises(ValueError, match="drawn by Comparator.compare_accuracy"):
        Comparator.run_layerwise([], compare_func=CompareFunc.simple(save_heatmaps=str(tmp_path)))
