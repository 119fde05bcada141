"""Parity's comparison layer (src/compare) against Polygraphy's own Comparator, on the same arrays.

For every case below, Polygraphy's `Comparator.compare_accuracy(..., compare_func=CompareFunc.simple(...))`
(or `indices`, `distance_metrics`, `quality_metrics`) runs in this process on a RunResults built from
numpy arrays, and Parity's `parity_compare_tool` runs on the same arrays saved as .npz. The test checks

1. the verdict of every output and iteration is identical;
2. Polygraphy's OutputCompareResult numbers (max/mean/median/quantile of the absolute and relative
   error) equal Parity's report (`--report`), exactly where numpy computes them exactly and within
   float32 rounding where numpy sums in float32;
3. the whole log printed in `--style polygraphy` is Polygraphy's: identical line structure and text,
   numbers equal up to the last printed digit (numpy's pairwise float32 sums can round the 5th
   significant digit differently), histogram rows identical;
4. `--style parity` gives the same verdicts.

The tool under test is $PARITY_COMPARE_TOOL, else build/release/tests/peers/parity_compare_tool (the
CMake target `parity_compare_tool`). Missing tool, numpy or polygraphy: the tests FAIL, never skip.
Run by hand:  .venv/bin/python -m pytest -q tests/peers/test_compare_peer.py
"""

import contextlib
import io
import json
import math
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 300

try:
    import numpy as np
except ImportError as err:  # pragma: no cover - reported as a failure below
    np = None
    NUMPY_ERROR = err
try:
    from polygraphy.comparator import Comparator, CompareFunc
    from polygraphy.comparator.struct import IterationResult, RunResults
    from polygraphy.logger import G_LOGGER
except ImportError as err:  # pragma: no cover - reported as a failure below
    Comparator = None
    POLYGRAPHY_ERROR = err


@pytest.fixture(scope="session")
def peers():
    if np is None:
        pytest.fail(f"numpy is not importable ({NUMPY_ERROR}); install scripts/requirements.txt into the venv", pytrace=False)
    if Comparator is None:
        pytest.fail(f"polygraphy is not importable ({POLYGRAPHY_ERROR}); install scripts/requirements.txt into the venv "
                    f"(or run with {REPO_ROOT / '.venv' / 'bin' / 'python'})", pytrace=False)
    G_LOGGER.module_severity = G_LOGGER.INFO
    return True


@pytest.fixture(scope="session")
def tool() -> Path:
    configured = os.environ.get("PARITY_COMPARE_TOOL")
    candidates = [Path(configured)] if configured else [
        REPO_ROOT / "build" / "release" / "tests" / "peers" / "parity_compare_tool"]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    pytest.fail(f"parity_compare_tool not found at {' or '.join(map(str, candidates))}: build the CMake target "
                f"parity_compare_tool or point PARITY_COMPARE_TOOL at it", pytrace=False)


# ------------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------------
def rng(seed):
    return np.random.default_rng(seed)


def noisy(shape, scale, seed, dtype=np.float32):
    r = rng(seed)
    a = r.standard_normal(shape).astype(dtype)
    b = (a.astype(np.float64) + r.standard_normal(shape) * scale).astype(dtype)
    return a, b


def case(name, out0, out1, func="simple", **kwargs):
    """out0/out1: a dict (one iteration) or a list of dicts (iterations)."""
    if isinstance(out0, dict):
        out0, out1 = [out0], [out1]
    return pytest.param(out0, out1, func, kwargs, id=name)


def build_cases():
    if np is None:  # one placeholder, so the `peers` fixture fails the test instead of pytest skipping it
        return [pytest.param([{}], [{}], "simple", {}, id="numpy-missing")]
    cases = []
    a, b = noisy((3, 4), 1e-3, 1)
    cases.append(case("f32-default-fails", {"y": a}, {"y": b}))
    cases.append(case("f32-atol-passes", {"y": a}, {"y": b}, atol=1e-2))
    cases.append(case("f32-rtol-only", {"y": a}, {"y": a * np.float32(1.001)}, atol=0.0, rtol=2e-3))
    cases.append(case("f32-rtol-only-fails", {"y": a}, {"y": a * np.float32(1.001)}, atol=0.0, rtol=5e-4))
    a, b = noisy((4, 5, 6), 1e-2, 2)
    for stat in ["max", "mean", "median"]:
        for atol in [1e-3, 5e-3, 3e-2]:
            cases.append(case(f"stat-{stat}-atol{atol}", {"y": a}, {"y": b}, atol=atol, rtol=0.0, check_error_stat=stat))
    for q in [0.5, 0.9, 0.99]:
        for atol in [5e-3, 2e-2]:
            cases.append(case(f"quantile{q}-atol{atol}", {"y": a}, {"y": b}, atol=atol, rtol=1e-3,
                              check_error_stat="quantile", error_quantile=q))
    # NaN and Inf
    x, y = noisy((5, 6), 1e-6, 3)
    xn = x.copy(); xn[1, 2] = np.nan
    yn = y.copy(); yn[4, 0] = np.nan
    cases.append(case("nan-in-first", {"y": xn}, {"y": y}, atol=1e-3))
    cases.append(case("nan-in-second", {"y": x}, {"y": yn}, atol=1e-3))
    cases.append(case("nan-both-same-place", {"y": xn}, {"y": np.where(np.isnan(xn), np.nan, y).astype(np.float32)},
                      atol=1e-3, check_error_stat="max"))
    xi = x.copy(); xi[0, 0] = np.inf; xi[2, 2] = -np.inf
    yi = y.copy(); yi[0, 0] = np.inf; yi[2, 2] = -np.inf
    cases.append(case("inf-default", {"y": xi}, {"y": yi}, atol=1e-3))
    cases.append(case("inf-compare-equal", {"y": xi}, {"y": yi}, atol=1e-3, infinities_compare_equal=True))
    cases.append(case("inf-vs-finite", {"y": xi}, {"y": y}, atol=1e-3, infinities_compare_equal=True))
    # Zero references
    z0 = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 1e-7]], np.float32)
    z1 = np.array([[0.0, 1.0, 2.1], [3.0, 1e-6, 0.0]], np.float32)
    cases.append(case("zero-reference", {"y": z0}, {"y": z1}))
    cases.append(case("zero-reference-abs-covers", {"y": z0}, {"y": z1}, atol=0.2))
    cases.append(case("zero-reference-mean", {"y": z0}, {"y": z1}, atol=0.01, check_error_stat="mean"))
    # dtypes
    h0, h1 = noisy((7, 3), 1e-3, 4, np.float16)
    cases.append(case("f16", {"y": h0}, {"y": h1}, atol=1e-3))
    cases.append(case("f16-vs-f32", {"y": h0}, {"y": h0.astype(np.float32) + np.float32(1e-4)}, atol=1e-4))
    d0, d1 = noisy((4, 4), 1e-9, 5, np.float64)
    cases.append(case("f64", {"y": d0}, {"y": d1}, atol=1e-9))
    cases.append(case("f64-vs-f32", {"y": d0}, {"y": d1.astype(np.float32)}, atol=1e-6))
    i0 = rng(6).integers(-50, 50, (6, 5)).astype(np.int32)
    i1 = i0.copy(); i1[2, 3] += 2; i1[0, 0] = 0
    cases.append(case("int32", {"y": i0}, {"y": i1}, atol=1.0))
    cases.append(case("int32-median", {"y": i0}, {"y": i1}, atol=0.5, check_error_stat="median"))
    cases.append(case("int32-vs-f32", {"y": i0}, {"y": i1.astype(np.float32) + np.float32(0.25)}, atol=0.3))
    cases.append(case("int8", {"y": np.array([-128, 5, 3, 127], np.int8)}, {"y": np.array([-127, 5, 3, -128], np.int8)},
                      atol=2.0))
    cases.append(case("uint8", {"y": np.array([0, 255, 7], np.uint8)}, {"y": np.array([255, 0, 7], np.uint8)}))
    cases.append(case("int64", {"y": np.array([10**12, -5, 0], np.int64)}, {"y": np.array([10**12 + 3, -5, 1], np.int64)},
                      atol=2.0))
    cases.append(case("bool", {"y": np.array([True, False, True, True])}, {"y": np.array([True, True, False, True])}))
    cases.append(case("bool-rtol1", {"y": np.array([True, False])}, {"y": np.array([True, True])}, rtol=1.0))
    # Per-output values, name matching, several outputs
    p0, p1 = noisy((3, 3), 1e-2, 7)
    cases.append(case("per-output-atol", {"y": p0, "z": p0}, {"y": p1, "z": p1}, atol={"y": 1.0, "": 1e-6}))
    cases.append(case("per-output-stat", {"y": p0, "z": p0}, {"y": p1, "z": p1}, atol=1e-2,
                      check_error_stat={"y": "max", "": "mean"}))
    cases.append(case("case-insensitive-name", {"y": p0}, {"Y": p1}, atol=1.0))
    cases.append(case("index-fallback", {"a": p0, "b": p1}, {"c": p0, "d": p1}, atol=1.0))
    # Shapes
    cases.append(case("shape-mismatch", {"y": p0[:2]}, {"y": p0[:, :2].T.copy()}))
    t0 = rng(8).standard_normal((2, 3)).astype(np.float32)
    cases.append(case("no-shape-check-transpose", {"y": t0}, {"y": t0.T.copy()}, check_shapes=False))
    cases.append(case("no-shape-check-reshape", {"y": t0.reshape(6)}, {"y": t0}, check_shapes=False))
    cases.append(case("scalar", {"y": np.array(1.5, np.float32)}, {"y": np.array(1.5001, np.float32)}, atol=1e-3))
    # Iterations
    its0 = [{"y": noisy((4,), 1e-3, 20 + k)[0]} for k in range(3)]
    its1 = [{"y": its0[k]["y"] + np.float32(1e-4 if k != 1 else 1e-1)} for k in range(3)]
    cases.append(case("three-iterations", its0, its1, atol=1e-3))
    # Larger tensors (statistics over many elements, no values block, several worker threads)
    big0, big1 = noisy((1500, 1000), 1e-4, 9)
    big1[7, 7] = 0.0
    cases.append(case("large-1.5M", {"y": big0}, {"y": big1}, atol=3e-4))
    cases.append(case("large-1.5M-quantile", {"y": big0}, {"y": big1}, atol=3e-4, rtol=1e-3,
                      check_error_stat="quantile", error_quantile=0.9))
    # numpy's array printing in the "---- Values ----" blocks of failed outputs
    cases.append(case("values-scientific", {"y": np.array([1e-6, 2.5, -3e5], np.float32)},
                      {"y": np.array([1.1e-6, 2.5, -3.1e5], np.float32)}, atol=0.0, rtol=0.0))
    cases.append(case("values-f32-1e6-cutoff", {"y": np.array([1.5e6, 2.0, 3.0], np.float32)},
                      {"y": np.array([1.5e6, 2.0, 3.5], np.float32)}))
    cases.append(case("values-f64-positional", {"y": np.array([150.25, 2.5, -0.125])},
                      {"y": np.array([150.5, 2.5, -0.125])}))
    cases.append(case("values-f64-3-digit-exponent", {"y": np.array([1e-200, 1.0])}, {"y": np.array([2e-200, 1.5])}))
    cases.append(case("values-int32-negative", {"y": np.array([-100, 5, 7], np.int32)},
                      {"y": np.array([-99, 5, 7], np.int32)}, atol=0.0))
    cases.append(case("values-3d", {"y": np.arange(12, dtype=np.float32).reshape(2, 2, 3) / 7},
                      {"y": np.arange(12, dtype=np.float32).reshape(2, 2, 3) / 7 + np.float32(0.01)}))
    cases.append(case("values-nan-inf", {"y": np.array([np.nan, np.inf, 1.5, -2.0], np.float32)},
                      {"y": np.array([1.0, np.inf, 1.5, -2.25], np.float32)}))
    cases.append(case("values-f16", {"y": np.array([0.1, 0.2, 3.0], np.float16)},
                      {"y": np.array([0.1, 0.25, 3.0], np.float16)}))
    cases.append(case("values-long-row-wraps", {"y": np.linspace(-1, 1, 30, dtype=np.float32)},
                      {"y": np.linspace(-1, 1, 30, dtype=np.float32) + np.float32(1e-3)}))
    cases.append(case("int8-quantile-wraps", {"y": np.array([-128, 127, 0], np.int8)},
                      {"y": np.array([-128, 127, 0], np.int8)}))
    # Passing outputs log values and histograms at VERBOSE
    cases.append(case("verbose-pass", {"y": p0}, {"y": p0}, verbosity="verbose"))
    cases.append(case("verbose-fail", {"y": p0}, {"y": p1}, verbosity="verbose"))
    # Other comparison functions
    k0 = np.array([[0, 1, 2, 3], [3, 2, 1, 0]], np.int64)
    k1 = np.array([[1, 0, 2, 3], [3, 2, 0, 1]], np.int64)
    cases.append(case("indices-tol0", {"k": k0}, {"k": k1}, func="indices"))
    cases.append(case("indices-tol1", {"k": k0}, {"k": k1}, func="indices", index_tolerance=1))
    v0, v1 = noisy((8, 8), 1e-3, 10)
    cases.append(case("distance-pass", {"v": v0}, {"v": v1}, func="distance", l2_tolerance=0.1))
    cases.append(case("distance-fail", {"v": v0}, {"v": v1}, func="distance"))
    img0 = rng(11).uniform(0, 1, (2, 3, 8, 8)).astype(np.float32)
    img1 = (img0 + rng(12).standard_normal(img0.shape).astype(np.float32) * 0.01).astype(np.float32)
    cases.append(case("quality-pass", {"img": img0}, {"img": img1}, func="quality"))
    cases.append(case("quality-fail", {"img": img0}, {"img": img1}, func="quality", psnr_tolerance=60.0))
    return cases


CASES = build_cases()


# ------------------------------------------------------------------------------------------------
# Running both
# ------------------------------------------------------------------------------------------------
def polygraphy_compare_func(func, kwargs):
    if func == "simple":
        return CompareFunc.simple(**kwargs)
    if func == "indices":
        return CompareFunc.indices(**kwargs)
    if func == "distance":
        return CompareFunc.distance_metrics(**kwargs)
    return CompareFunc.quality_metrics(**kwargs)


def run_polygraphy(out0, out1, func, kwargs):
    kwargs = {k: v for k, v in kwargs.items() if k != "verbosity"}
    results = RunResults()
    results.append(("runner0", [IterationResult(dict(it), runner_name="runner0") for it in out0]))
    results.append(("runner1", [IterationResult(dict(it), runner_name="runner1") for it in out1]))
    G_LOGGER.once_logged.clear()
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        accuracy = Comparator.compare_accuracy(results, compare_func=polygraphy_compare_func(func, kwargs))
    return accuracy[("runner0", "runner1")], buffer.getvalue()


@contextlib.contextmanager
def polygraphy_verbosity(name):
    severity = {"info": G_LOGGER.INFO, "verbose": G_LOGGER.VERBOSE}[name]
    G_LOGGER.module_severity = severity
    try:
        yield
    finally:
        G_LOGGER.module_severity = G_LOGGER.INFO


def per_output_args(flag, value):
    if isinstance(value, dict):
        args = []
        for name, v in value.items():
            text = repr(v) if not isinstance(v, str) else v
            args += [flag, f"{name}:{text}" if name else text]
        return args
    return [flag, repr(value) if not isinstance(value, str) else value]


def tool_args(func, kwargs):
    args = ["--compare", func, "--verbosity", kwargs.get("verbosity", "info")]
    for key, flag in [("atol", "--atol"), ("rtol", "--rtol"), ("check_error_stat", "--check-error-stat"),
                      ("error_quantile", "--error-quantile"), ("index_tolerance", "--index-tolerance")]:
        if key in kwargs:
            args += per_output_args(flag, kwargs[key])
    if kwargs.get("infinities_compare_equal"):
        args.append("--infinities-compare-equal")
    if kwargs.get("check_shapes") is False:
        args.append("--no-shape-check")
    for key, flag in [("l2_tolerance", "--l2-tolerance"), ("cosine_similarity_threshold", "--cosine-threshold"),
                      ("psnr_tolerance", "--psnr"), ("snr_tolerance", "--snr")]:
        if key in kwargs:
            args += [flag, repr(kwargs[key])]
    return args


def run_parity(tool, out0, out1, func, kwargs, style, workdir):
    files0, files1 = [], []
    for k, (it0, it1) in enumerate(zip(out0, out1)):
        f0, f1 = workdir / f"out0_{k}.npz", workdir / f"out1_{k}.npz"
        np.savez(f0, **it0)
        np.savez(f1, **it1)
        files0 += ["--out0", str(f0)]
        files1 += ["--out1", str(f1)]
    report = workdir / f"report_{style}.json"
    cmd = [str(tool), *files0, *files1, "--runner0", "runner0", "--runner1", "runner1", "--style", style,
           "--report", str(report), *tool_args(func, kwargs)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode in (0, 1), f"{' '.join(cmd)}\nexit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads(report.read_text()), proc.stdout, proc.returncode


# ------------------------------------------------------------------------------------------------
# Comparing
# ------------------------------------------------------------------------------------------------
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)(?![\w])")
HISTOGRAM_ROW = re.compile(r"^\[.\]\s+\(.*\) \|\s+\d+ \| #*$")


def close(a, b, rel):
    if isinstance(a, str) or isinstance(b, str):
        a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-300


def polygraphy_lines(text):
    return [line for line in text.splitlines() if "'colored' module is not installed" not in line]


def compare_logs(poly_text, parity_text):
    poly, ours = polygraphy_lines(poly_text), parity_text.splitlines()
    assert len(poly) == len(ours), "line counts differ:\n--- polygraphy\n" + "\n".join(poly) + "\n--- parity\n" + "\n".join(ours)
    for p, o in zip(poly, ours):
        if p == o:
            continue
        context = f"\npolygraphy: {p!r}\nparity:     {o!r}"
        assert not HISTOGRAM_ROW.match(p), "histogram rows differ" + context
        assert NUMBER.sub("#", p) == NUMBER.sub("#", o), "line text differs" + context
        for x, y in zip(NUMBER.findall(p), NUMBER.findall(o)):
            # .5g prints 5 significant digits: a different last digit is 2e-4 relative at most.
            assert close(x, y, 2.5e-4), f"number {x} vs {y}" + context


def as_float(v):
    if v is None:
        return None
    if isinstance(v, str):
        return float(v)
    return float(v)


def compare_simple_numbers(poly_result, ours):
    s = ours["simple"]
    exact = ["max_absdiff", "max_reldiff", "median_absdiff", "median_reldiff", "quantile_absdiff", "quantile_reldiff"]
    for field in exact + ["mean_absdiff", "mean_reldiff"]:
        theirs = getattr(poly_result, field)
        mine = s[field]
        if theirs is None:
            assert mine is None, field
            continue
        # numpy's float32 pairwise sum vs Parity's double sum rounded to float32: last-bit differences.
        rel = 1e-6 if field in exact else 2e-6
        assert close(float(theirs), as_float(mine), rel), f"{field}: polygraphy {theirs} parity {mine}"


@pytest.mark.parametrize("out0,out1,func,kwargs", CASES)
def test_against_polygraphy(peers, tool, out0, out1, func, kwargs):
    with polygraphy_verbosity(kwargs.get("verbosity", "info")):
        poly_iterations, poly_log = run_polygraphy(out0, out1, func, kwargs)
    with tempfile.TemporaryDirectory() as tmp:
        report, parity_log, rc = run_parity(tool, out0, out1, func, kwargs, "polygraphy", Path(tmp))
        parity_report, parity_style_log, parity_rc = run_parity(tool, out0, out1, func, kwargs, "parity", Path(tmp))

    pair = report["accuracy"]["pairs"][0]
    assert len(pair["iterations"]) == len(poly_iterations)
    for poly_it, our_it in zip(poly_iterations, pair["iterations"]):
        assert list(poly_it.keys()) == [o["output0"] for o in our_it["outputs"]]
        for (name, poly_out), ours in zip(poly_it.items(), our_it["outputs"]):
            assert bool(poly_out) == ours["passed"], f"verdict for '{name}': polygraphy {bool(poly_out)}, parity {ours['passed']}"
            if func == "simple" and not isinstance(poly_out, bool):
                compare_simple_numbers(poly_out, ours)
            if func == "distance":
                d = ours["distance"]
                assert close(float(poly_out.l2_norm), as_float(d["l2_norm"]), 1e-5)
                assert close(float(poly_out.cosine_similarity), as_float(d["cosine_similarity"]), 1e-5)
            if func == "quality":
                q = ours["quality"]
                assert close(float(poly_out.psnr), as_float(q["psnr"]), 1e-4)
                assert close(float(poly_out.snr), as_float(q["snr"]), 1e-4)
    poly_passed = all(bool(v) for it in poly_iterations for v in it.values())
    assert (rc == 0) == poly_passed
    assert report["passed"] == poly_passed
    compare_logs(poly_log, parity_log)

    # Parity's own style: same verdicts; on clean data (all finite, no zero reference) the same text
    # too, apart from the mismatch count Parity appends to an elemwise FAILED line and the empty
    # line Polygraphy logs where numpy refuses a histogram (Parity logs nothing there).
    assert parity_report["passed"] == poly_passed
    arrays = [np.asarray(v) for it in out0 + out1 for v in it.values()]
    clean = func == "simple" and all(a.dtype != bool for a in arrays) and \
        all(np.all(np.isfinite(a.astype(np.float64))) for a in arrays) and \
        all(np.all(np.asarray(v) != 0) for it in out1 for v in it.values())
    if clean:
        poly_without_empty = "\n".join(line for line in poly_log.splitlines() if not re.fullmatch(r"\[.\] *", line))
        compare_logs(poly_without_empty,
                     re.sub(r" \| \d+ of \d+ element\(s\) \([^)]*\) exceed both", "", parity_style_log))
    assert (parity_rc == 0) == poly_passed
    for poly_it, our_it in zip(poly_iterations, parity_report["accuracy"]["pairs"][0]["iterations"]):
        assert [bool(v) for v in poly_it.values()] == [o["passed"] for o in our_it["outputs"]]


@pytest.mark.parametrize("verbosity", ["info", "verbose"])
def test_validate_against_polygraphy(peers, tool, verbosity):
    """Comparator.validate(check_inf=True, check_nan=True), as `--validate` runs it."""
    outputs = {"ok": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32),
               "nan": np.array([1.0, np.nan, 3.0], np.float32),
               "inf": np.array([-np.inf, 0.5], np.float32),
               "ints": np.array([3, -7], np.int32)}
    results = RunResults()
    results.append(("runner0", [IterationResult(outputs, runner_name="runner0")]))
    G_LOGGER.once_logged.clear()
    buffer = io.StringIO()
    with polygraphy_verbosity(verbosity), contextlib.redirect_stdout(buffer):
        poly_valid = Comparator.validate(results, check_inf=True, check_nan=True)
    with tempfile.TemporaryDirectory() as tmp:
        f0 = Path(tmp) / "out0.npz"
        np.savez(f0, **outputs)
        report = Path(tmp) / "report.json"
        cmd = [str(tool), "--out0", str(f0), "--runner0", "runner0", "--validate", "--style", "polygraphy",
               "--verbosity", verbosity, "--report", str(report)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
        assert proc.returncode in (0, 1), proc.stderr
        ours = json.loads(report.read_text())
    assert ours["validation"]["passed"] == bool(poly_valid) == (proc.returncode == 0)
    assert [o["valid"] for o in ours["validation"]["outputs"]] == [True, False, False, True]
    compare_logs(buffer.getvalue(), proc.stdout)


def test_parity_style_counts_nan_and_zero_reference(peers, tool):
    """The improvements over Polygraphy's report, on a case where Polygraphy's numbers are nan/1e16."""
    a = np.array([1.0, 2.0, np.nan, 4.0], np.float32)
    b = np.array([1.0, 0.0, 3.0, 4.5], np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        report, log, rc = run_parity(tool, [{"y": a}], [{"y": b}], "simple", {"atol": 0.1}, "parity", Path(tmp))
    assert rc == 1
    out = report["accuracy"]["pairs"][0]["iterations"][0]["outputs"][0]["simple"]
    assert out["max_absdiff"] == "nan"  # Polygraphy's poisoned number is still reported
    assert out["zero_reference"] == 1
    assert out["nonfinite_errors"] == 1
    assert out["statistics"]["absdiff"]["finite"]["max"] == 2.0
    assert out["statistics"]["reldiff"]["finite"]["max"] == pytest.approx(0.5 / 4.5, rel=1e-6)
    assert "| NaN: 1, Inf: 0" in log
    assert "1 element(s) with zero reference (excluded)" in log
    assert "rel=inf" not in log and "rel=nan" not in log
