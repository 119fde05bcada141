"""Parity's Python API against the `polygraphy` package on the same models and data."""
import numpy as np
import pytest
from polygraphy import comparator as pg_comparator
from polygraphy.backend.onnxrt import OnnxrtRunner as PgOnnxrtRunner
from polygraphy.backend.onnxrt import SessionFromOnnx as PgSessionFromOnnx
from polygraphy.common import TensorMetadata as PgTensorMetadata

from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
from parity.common import TensorMetadata
from parity.comparator import Comparator, CompareFunc, DataLoader, IterationResult, PostprocessFunc, RunResults


def _both_metadata(entries):
    ours, theirs = TensorMetadata(), PgTensorMetadata()
    for name, dtype, shape in entries:
        ours.add(name, dtype, shape)
        theirs.add(name, dtype, shape)
    return ours, theirs


def _assert_same_feeds(options, entries, as_numpy=lambda array: array):
    """Both loaders built from `options` over `entries` yield the same names, dtypes, shapes and
    bytes; `as_numpy` turns Polygraphy's arrays (torch tensors for the torch backend) to numpy."""
    ours_meta, theirs_meta = _both_metadata(entries)
    ours, theirs = DataLoader(**options), pg_comparator.DataLoader(**options)
    ours.input_metadata, theirs.input_metadata = ours_meta, theirs_meta
    assert len(list(ours)) == len(list(theirs))
    for mine, peer in zip(ours, theirs):
        assert list(mine.keys()) == list(peer.keys())
        for name in peer:
            expected = as_numpy(peer[name])
            assert mine[name].dtype == expected.dtype, name
            assert mine[name].shape == expected.shape, name
            assert mine[name].tobytes() == expected.tobytes(), name


def test_run_results_load_takes_npz_of_named_outputs(tmp_path, rng):
    """Beyond Polygraphy (whose RunResults.load reads JSON only): an .npz of one iteration's outputs,
    as numpy.savez writes them, loads as one runner named after the file and compares like any other."""
    runs = _sample_runs(rng)
    np.savez(tmp_path / "torch_out.npz", **runs[0][1][0])
    loaded = RunResults.load(str(tmp_path / "torch_out.npz"))
    assert list(loaded.keys()) == ["torch_out.npz"]
    [iteration] = loaded["torch_out.npz"]
    assert list(iteration.keys()) == ["out", "scores"]
    for name, array in runs[0][1][0].items():
        assert np.array_equal(np.asarray(iteration[name]), array)
    together = _results(__import__("parity.comparator", fromlist=["x"]), runs[1:])
    together.append(list.__getitem__(loaded, 0))
    verdict = Comparator.compare_accuracy(together, compare_func=CompareFunc.simple(atol=1e-3))
    assert list(verdict.keys()) == [("runner-b", "torch_out.npz")] and bool(verdict)
    assert not Comparator.compare_accuracy(together, compare_func=CompareFunc.simple(atol=1e-6, rtol=1e-6))


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"seed": 7, "iterations": 3},
        {"val_range": (-5.0, 5.0)},
        {"val_range": {"a": (-1.0, 2.0), "": (10, 20)}},
    ],
)
def test_data_loader_gives_polygraphys_bytes(options):
    entries = [("a", np.float32, (2, 3, 4)), ("b", np.int64, (5,)), ("c", np.float16, (3, 3)),
               ("d", np.bool_, (4,)), ("e", np.int32, (2, 2)), ("f", np.float64, (7,))]
    _assert_same_feeds(options, entries)


@pytest.mark.parametrize("options", [{"seed": 3, "iterations": 2}, {"val_range": {"b": (-5, 2000000000), "e": (-3, 7)}}])
def test_torch_data_loader_gives_torchs_values(options):
    # Polygraphy yields torch tensors; Parity yields numpy arrays holding the same values.
    # (no bool input: Polygraphy's torch.randint call fails on it, and Parity refuses it)
    entries = [("a", np.float32, (2, 3, 40)), ("b", np.int64, (5,)), ("c", np.float16, (30, 40)),
               ("e", np.int32, (2, 2)), ("f", np.float64, (7,)), ("g", np.uint8, (9,))]
    _assert_same_feeds(dict(options, data_loader_backend_module="torch"), entries, lambda tensor: tensor.numpy())


def _results(module, runner_arrays):
    results = module.RunResults()
    for runner_name, iterations in runner_arrays:
        results.append((runner_name, [module.IterationResult(outputs, 0.5, runner_name) for outputs in iterations]))
    return results


def _sample_runs(rng):
    base = rng.standard_normal((3, 4)).astype(np.float32)
    other = base + rng.uniform(-1e-3, 1e-3, base.shape).astype(np.float32)
    scores = rng.standard_normal((2, 5)).astype(np.float32)
    return [
        ("runner-a", [{"out": base, "scores": scores}]),
        ("runner-b", [{"out": other, "scores": scores + np.float32(2e-4)}]),
    ]


def test_run_results_files_load_both_ways(tmp_path, rng):
    runs = _sample_runs(rng)
    ours = _results(pg_comparator, runs)  # the same layout in both packages
    _results(__import__("parity.comparator", fromlist=["x"]), runs).save(str(tmp_path / "parity.json"))
    ours.save(str(tmp_path / "polygraphy.json"))

    from_parity = pg_comparator.RunResults.load(str(tmp_path / "parity.json"))
    from_polygraphy = RunResults.load(str(tmp_path / "polygraphy.json"))
    for loaded in (from_parity, from_polygraphy):
        assert list(loaded.keys()) == ["runner-a", "runner-b"]
        for (name, iterations), (_, expected) in zip(loaded.items(), runs):
            assert len(iterations) == 1 and iterations[0].runner_name == name
            for output, array in expected[0].items():
                assert np.array_equal(np.asarray(iterations[0][output]), array)
    # Byte-identical files: both write json.dumps(indent=4) with the same .npy encoding.
    assert (tmp_path / "parity.json").read_text() == (tmp_path / "polygraphy.json").read_text()


@pytest.mark.parametrize(
    "options",
    [
        {"atol": 1e-5, "rtol": 1e-5},
        {"atol": {"out": 2e-3, "": 1e-6}, "rtol": 0.0},
        {"atol": 1e-6, "rtol": {"scores": 1e-2, "": 0.0}},
        {"atol": 1e-4, "rtol": 1e-4, "check_error_stat": "mean"},
        {"atol": {"out": 5e-4, "scores": 1e-4}, "check_error_stat": {"out": "median", "": "max"}},
    ],
)
def test_compare_simple_verdicts_and_statistics(rng, options):
    runs = _sample_runs(rng)
    ours = Comparator.compare_accuracy(_results(__import__("parity.comparator", fromlist=["x"]), runs),
                                       compare_func=CompareFunc.simple(**options))
    theirs = pg_comparator.Comparator.compare_accuracy(_results(pg_comparator, runs),
                                                       compare_func=pg_comparator.CompareFunc.simple(**options))
    assert bool(ours) == bool(theirs)
    [(pair, [iteration])] = ours.items()
    [(peer_pair, [peer_iteration])] = theirs.items()
    assert pair == peer_pair
    for name, result in iteration.items():
        peer = peer_iteration[name]
        assert bool(result) == bool(peer), name
        for stat in ("max_absdiff", "max_reldiff", "mean_absdiff", "mean_reldiff", "median_absdiff", "median_reldiff"):
            assert getattr(result, stat) == pytest.approx(float(getattr(peer, stat)), rel=1e-6, abs=0), (name, stat)


def _strict_on_scores(calls):
    """A comparison function written by a user: "out" within 1e-2, "scores" exactly equal (so the
    sample runs fail it); records every call's runner names and output names."""

    def compare(result0, result1):
        calls.append((result0.runner_name, result1.runner_name, list(result0.keys()), list(result1.keys())))
        return {
            "out": bool(np.allclose(result0["out"], result1["out"], atol=1e-2)),
            "scores": np.array_equal(result0["scores"], result1["scores"]),  # a numpy bool: bool-like
        }

    return compare


@pytest.mark.parametrize("fail_fast", [False, True])
def test_compare_accuracy_takes_any_callable_as_polygraphy_does(rng, capsys, fail_fast):
    runs = _sample_runs(rng)
    runs.append(("runner-c", [dict(runs[0][1][0])]))  # a copy of runner-a: passes against it
    parity_comparator = __import__("parity.comparator", fromlist=["x"])
    comparisons = [(0, 1), (2, 0)]
    ours_calls, theirs_calls = [], []
    ours = Comparator.compare_accuracy(_results(parity_comparator, runs), fail_fast=fail_fast, comparisons=comparisons,
                                       compare_func=_strict_on_scores(ours_calls))
    ours_log = capsys.readouterr().out
    theirs = pg_comparator.Comparator.compare_accuracy(_results(pg_comparator, runs), fail_fast=fail_fast,
                                                       comparisons=comparisons,
                                                       compare_func=_strict_on_scores(theirs_calls))
    theirs_log = capsys.readouterr().out
    # Called once per iteration of each pair, with the IterationResults in the comparison's order.
    assert ours_calls == theirs_calls
    assert [call[:2] for call in ours_calls] == ([("runner-a", "runner-b")] if fail_fast else
                                                 [("runner-a", "runner-b"), ("runner-c", "runner-a")])
    assert bool(ours) is bool(theirs) is False
    assert list(ours.keys()) == list(theirs.keys())
    for pair, iterations in ours.items():
        assert [{name: bool(v) for name, v in it.items()} for it in iterations] == \
               [{name: bool(v) for name, v in it.items()} for it in theirs[pair]]
    assert dict(ours[("runner-a", "runner-b")][0]) == {"out": True, "scores": False}
    assert ours.stats(("runner-a", "runner-b")) == theirs.stats(("runner-a", "runner-b")) == (0, 1, 1)
    summaries = [line[line.index("Accuracy Summary"):] for line in theirs_log.splitlines() if "Accuracy Summary" in line]
    assert summaries == [line[line.index("Accuracy Summary"):] for line in ours_log.splitlines()
                         if "Accuracy Summary" in line]
    assert len(summaries) == (0 if fail_fast else 2)


def test_compare_accuracy_refuses_what_is_not_callable(rng):
    results = _results(__import__("parity.comparator", fromlist=["x"]), _sample_runs(rng))
    with pytest.raises(TypeError, match="callable"):
        Comparator.compare_accuracy(results, compare_func=1e-3)


def test_validate_matches_polygraphy(rng):
    clean = [("r", [{"out": rng.standard_normal((4, 4)).astype(np.float32)}])]
    with_nan = [("r", [{"out": np.array([1.0, np.nan], np.float32)}])]
    with_inf = [("r", [{"out": np.array([1.0, np.inf], np.float32)}])]
    parity_comparator = __import__("parity.comparator", fromlist=["x"])
    for runs in (clean, with_nan, with_inf):
        for check_inf in (False, True):
            ours = Comparator.validate(_results(parity_comparator, runs), check_inf=check_inf)
            theirs = pg_comparator.Comparator.validate(_results(pg_comparator, runs), check_inf=check_inf)
            assert ours == bool(theirs)


@pytest.mark.parametrize("k", [3, 10, (2, 0), {"scores": 4, "": 1}, {"scores": (1, 0)}])
def test_postprocess_top_k_matches_polygraphy(rng, k):
    values = rng.standard_normal((3, 6)).astype(np.float32)
    values[0, 1] = values[0, 4]  # a tie: numpy's stable order decides
    outputs = {"scores": values, "other": rng.standard_normal((2, 8)).astype(np.float32)}
    ours = PostprocessFunc.top_k(k)(IterationResult(dict(outputs)))
    theirs = pg_comparator.PostprocessFunc.top_k(k)(pg_comparator.IterationResult(dict(outputs)))
    for name in outputs:
        assert np.array_equal(np.asarray(ours[name]), np.asarray(theirs[name])), name


def test_onnxrt_runner_outputs_equal_polygraphys(models):
    feed = {"x": np.linspace(-3, 3, 48, dtype=np.float32).reshape(1, 3, 4, 4), "n": np.arange(4, dtype=np.int64)}
    with OnnxrtRunner(SessionFromOnnx(models["mixed"])) as ours, \
            PgOnnxrtRunner(PgSessionFromOnnx(models["mixed"])) as theirs:
        mine, peer = ours.infer(feed), theirs.infer(feed)
        assert list(ours.get_input_metadata().keys()) == list(theirs.get_input_metadata().keys())
    assert list(mine.keys()) == list(peer.keys())
    for name in peer:
        assert np.array_equal(mine[name], peer[name])
