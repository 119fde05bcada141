"""`parity run --load-outputs a.json b.json` against `polygraphy run --load-outputs a.json b.json`:
the same verdicts and the same statistics, for every model in examples/models and ../shared/models.

For each model, Polygraphy runs it once with ONNX Runtime and saves its outputs (a.json); the test
writes a second RunResults file (b.json) with Polygraphy's own RunResults API, from a perturbed
copy of the arrays: a hair's breadth away (passes at the default tolerance), a drift of 1e-3
relative (fails), a mix per output, a NaN and an Inf, zeros in the reference. Both tools then
compare the two files with the same flags, and the numbers they print are parsed and compared.

Where Polygraphy's numbers are poisoned by NaN/Inf or blown up by zero references (it divides by
2.2e-16 there), Parity's default text deliberately differs: it describes the finite values and
counts the rest (" | NaN: n, Inf: m", " | k element(s) with zero reference (excluded)"). Those
lines are checked against numpy computed here from the same arrays, and `--stats-style polygraphy`
must then reproduce Polygraphy's own (NaN-poisoned) numbers.

Nothing is hard-coded: every expected number comes from Polygraphy's log or numpy in this run.
"""

import math
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT, lines_with_prefix
from run_util import RUN_TIMEOUT, SHARED_MODELS, polygraphy

EXAMPLE_MODELS = REPO_ROOT / "examples" / "models"

# id -> (folder, file, flags for Polygraphy's data loader when producing a.json)
SILERO_FLAGS = ["--input-shapes", "input:[1,512]", "state:[2,1,128]", "--val-range", "sr:[16000,16000]", "input:[-1,1]"]
MODELS = {
    "small_cnn": (EXAMPLE_MODELS, "small_cnn.onnx", []),
    "small_if": (EXAMPLE_MODELS, "small_if.onnx", []),
    "small_transformer": (EXAMPLE_MODELS, "small_transformer.onnx", []),
    "blazeface_front_128": (SHARED_MODELS, "blazeface_front_128.onnx", []),
    "magika_standard_v3_3": (SHARED_MODELS, "magika_standard_v3_3.onnx", ["--val-range", "[0,256]"]),
    "ppocrv4_det": (SHARED_MODELS, "ppocrv4_det.onnx", ["--input-shapes", "x:[1,3,64,64]"]),
    "silero_vad_op18_ifless": (SHARED_MODELS, "silero_vad_op18_ifless.onnx", SILERO_FLAGS),
    "silero_vad_v5": (SHARED_MODELS, "silero_vad_v5.onnx", SILERO_FLAGS),
}

# (case id, model id, how b.json differs from a.json). Kinds:
#   close  - every float output times (1 + 2e-7 u): within the default tolerance
#   drift  - every float output times (1 + 1e-3 u): beyond it (zeros stay zeros)
#   mixed  - close for even-numbered outputs, drift for odd ones
#   nan    - drift, then a NaN and a +Inf in the first output
#   zeroref- drift, then two non-zero reference values set to 0
# ppocrv4_det's output (4090 of 4096 values are 0 on random input) and silero's state have
# zeros in the reference of their own.
CASES = [
    ("small_cnn-close", "small_cnn", "close"),
    ("small_cnn-nan", "small_cnn", "nan"),
    ("small_if-drift", "small_if", "drift"),
    ("small_transformer-drift", "small_transformer", "drift"),
    ("small_transformer-zeroref", "small_transformer", "zeroref"),
    ("blazeface-mixed", "blazeface_front_128", "mixed"),
    ("magika-drift", "magika_standard_v3_3", "drift"),
    ("ppocrv4-drift", "ppocrv4_det", "drift"),
    ("silero_ifless-mixed", "silero_vad_op18_ifless", "mixed"),
    ("silero_v5-drift", "silero_vad_v5", "drift"),
]

FLAG_SETS = {
    "default": lambda outputs: [],
    "atol-rtol": lambda outputs: ["--atol", "1e-4", "--rtol", "1e-3"],
    # The first output named (the names of blazeface's outputs hold a colon themselves), the others
    # on the default.
    "per-output": lambda outputs: ["--atol", f"{outputs[0]}:0", "1e-3", "--rtol", f"{outputs[0]}:1e-6", "1e-2"],
    "mean": lambda outputs: ["--check-error-stat", "mean"],
    "median": lambda outputs: ["--check-error-stat", "median", "--rtol", "1e-4"],
    "max": lambda outputs: ["--check-error-stat", "max", "--atol", "1e-3"],
    "quantile": lambda outputs: ["--check-error-stat", "quantile", "--error-quantile", "0.9"],
    "indices": lambda outputs: ["--postprocess", "top-3", "--compare", "indices"],
}
# Top-K indices only mean something for the classifiers.
INDEX_CASES = {"small_cnn-close", "small_cnn-nan", "magika-drift"}
COMPARISONS = [(case, flags) for case, _, _ in CASES for flags in FLAG_SETS
               if flags != "indices" or case in INDEX_CASES]

NUMBER_RTOL = 2e-4  # both print 5 significant digits ("%.5g"): one unit in the last place apart


# ---- producing the two RunResults files ----

def perturbed(array, kind, rng):
    if array.dtype.kind != "f":
        return array.copy()
    u = rng.uniform(-1.0, 1.0, size=array.shape)
    relative = {"close": 2e-7, "drift": 1e-3, "nan": 1e-3, "zeroref": 1e-3}[kind]
    return (array.astype(np.float64) * (1.0 + relative * u)).astype(array.dtype)


@pytest.fixture(scope="module")
def saved_results(tmp_path_factory):
    """case id -> {"model", "a", "b" (paths), "outputs" (names), "arrays_a", "arrays_b"}."""
    from polygraphy.comparator import RunResults
    from polygraphy.comparator.struct import IterationResult

    root = tmp_path_factory.mktemp("polygraphy_parity")
    saved = {}
    for model_id, (folder, filename, flags) in MODELS.items():
        path = root / f"{model_id}_a.json"
        polygraphy("run", folder / filename, "--onnxrt", "--save-outputs", path, *flags)
        saved[model_id] = path
    cases = {}
    for index, (case, model_id, kind) in enumerate(CASES):
        folder, filename, _ = MODELS[model_id]
        results = RunResults.load(str(saved[model_id]))
        (runner_name, iterations), = list(results.items())
        arrays_a = dict(iterations[0].items())
        rng = np.random.default_rng(1000 + index)
        arrays_b = {}
        for position, (name, array) in enumerate(arrays_a.items()):
            mode = kind if kind != "mixed" else ("close" if position % 2 == 0 else "drift")
            arrays_b[name] = perturbed(array, mode, rng)
        first = next(iter(arrays_b))
        if kind == "nan":
            arrays_b[first].flat[1] = np.nan
            arrays_b[first].flat[2] = np.inf
        if kind == "zeroref":
            nonzero = np.flatnonzero(arrays_a[first])
            arrays_b[first].flat[nonzero[[0, 3]]] = 0
        other = RunResults()
        other.append(("perturbed-runner", [IterationResult(outputs=arrays_b, runtime=iterations[0].runtime,
                                                           runner_name="perturbed-runner")]))
        b_path = root / f"{case}_b.json"
        other.save(str(b_path))
        cases[case] = {"model": folder / filename, "a": saved[model_id], "b": b_path,
                       "outputs": list(arrays_a), "arrays_a": arrays_a, "arrays_b": arrays_b}
    return cases


# ---- reading the comparison log ----

STAT_ITEM = re.compile(r"([a-z0-9-]+)=([^,\s]+)(?: at (\([^)]*\)))?")


def parse_stats(text):
    """'mean=0.1, ..., min=1 at (0, 3), ...' -> {"mean": 0.1, ..., "min@": "(0, 3)"}."""
    stats = {}
    for key, value, where in STAT_ITEM.findall(text):
        stats[key] = float(value)
        if where:
            stats[key + "@"] = where
    return stats


def parse_stats_line(line):
    """'<label> | Stats: <numbers>[ | NaN: n, Inf: m][ | k element(s) with zero reference (excluded)]'."""
    label, _, rest = line.partition(" | Stats: ")
    parts = rest.split(" | ")
    entry = {"label": label, "text": parts[0], "stats": parse_stats(parts[0]), "nan": 0, "inf": 0, "zero_ref": 0}
    for part in parts[1:]:
        counts = re.fullmatch(r"NaN: (\d+), Inf: (\d+)", part)
        zero = re.fullmatch(r"(\d+) element\(s\) with zero reference \(excluded\)", part)
        if counts:
            entry["nan"], entry["inf"] = int(counts[1]), int(counts[2])
        elif zero:
            entry["zero_ref"] = int(zero[1])
        else:
            raise AssertionError(f"unexpected part {part!r} in stats line {line!r}")
    return entry


def parse_log(run_output):
    """The comparison as printed: pairs, per output its verdict and numbers, and the final verdict."""
    plain = lines_with_prefix(run_output, "[")
    pairs, output = [], None
    final = None
    for raw in plain:
        line = re.sub(r"^\[[A-Z]+\] ", "", raw).strip()
        if line.startswith("Accuracy Comparison | "):
            pairs.append({"runners": line.split(" | ", 1)[1], "outputs": {}, "order": [], "pair_lines": []})
            output = None
        elif line.startswith("Comparing Output: "):
            name = re.match(r"Comparing Output: '(.*?)' \(dtype=", line)[1]
            output = {"header": line, "stats": {}, "verdict": None, "tolerance": None, "required": None}
            pairs[-1]["outputs"][name] = output
            pairs[-1]["order"].append(name)
        elif line.startswith("Tolerance: ") and output is not None:
            output["tolerance"] = line
        elif " | Stats: " in line and output is not None:
            entry = parse_stats_line(line)
            output["stats"][entry["label"]] = entry
        elif line.startswith("Minimum Required Tolerance: ") and output is not None:
            found = re.match(r"Minimum Required Tolerance: (\w+) error \| \[abs=(\S+)\] OR \[rel=(\S+)\](.*)", line)
            output["required"] = {"stat": found[1], "abs": float(found[2]), "rel": float(found[3]),
                                  "rest": found[4]}
        elif re.match(r"(PASSED|FAILED) \| (All outputs matched|Mismatched outputs)", line):
            pairs[-1]["pair_lines"].append(line)
            output = None
        elif re.match(r"(PASSED|FAILED) \| ", line) and output is not None and output["verdict"] is None:
            output["verdict"] = line.split(" | ")[0]
        elif line.startswith("Accuracy Summary | "):
            pairs[-1]["summary"] = line
        elif re.match(r"(PASSED|FAILED) \| Runtime: ", line):
            final = line.split(" | ")[0]
    return {"pairs": pairs, "final": final}


def close(x, y):
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return math.isclose(x, y, rel_tol=NUMBER_RTOL, abs_tol=0.0)


def assert_same_stats(ours, theirs, what):
    assert set(ours) == set(theirs), f"{what}: Parity prints {sorted(ours)}, Polygraphy {sorted(theirs)}"
    for key, value in theirs.items():
        if key.endswith("@"):
            assert ours[key] == value, f"{what}: {key[:-1]} at {ours[key]} (Parity) vs. {value} (Polygraphy)"
        else:
            assert close(ours[key], value), f"{what}: {key}={ours[key]} (Parity) vs. {value} (Polygraphy)"


# ---- numpy's view of Parity's "finite values" statistics ----

def finite_view(values):
    """What Parity's default statistics describe: the finite values, and how many are NaN / Inf."""
    values = np.asarray(values)
    flat = values.reshape(-1).astype(np.float64)
    finite = np.isfinite(flat)
    kept = flat[finite]
    stats = {}
    if kept.size:
        def where(flat_index):
            return str(tuple(int(i) for i in np.unravel_index(flat_index, values.shape))).replace(",)", ")")
        low = np.where(finite, flat, np.inf)
        high = np.where(finite, flat, -np.inf)
        stats = {"mean": kept.mean(), "std-dev": kept.std(), "var": kept.var(), "median": np.median(kept),
                 "min": kept.min(), "min@": where(int(np.argmin(low))), "max": kept.max(),
                 "max@": where(int(np.argmax(high))), "avg-magnitude": np.abs(kept).mean(),
                 "p90": np.quantile(kept, 0.9), "p95": np.quantile(kept, 0.95), "p99": np.quantile(kept, 0.99)}
    return stats, int(np.isnan(flat).sum()), int(np.isinf(flat).sum())


def errors_as_polygraphy_computes_them(out0, out1):
    """absdiff = |out0 - out1|, reldiff = absdiff / |out1 (+2.2e-16 where 0)|, in float32 for float32 data."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, inf / inf: NaN, as in Polygraphy
        absdiff = np.abs(out0 - out1)
        reference = out1.copy()
        reference[reference == 0] += np.array(2.220446049250313e-16, dtype=reference.dtype)
        return absdiff, absdiff / np.abs(reference)


def assert_finite_view(entry, values, what, zero_reference=None):
    """`entry` (a parsed Parity stats line) describes `values` the way Parity documents it."""
    if zero_reference is not None:
        values = np.asarray(values).reshape(-1)[~zero_reference.reshape(-1)]
        expected_zero = int(zero_reference.sum())
    else:
        expected_zero = 0
    expected, nan, inf = finite_view(values)
    assert (entry["nan"], entry["inf"], entry["zero_ref"]) == (nan, inf, expected_zero), \
        f"{what}: NaN/Inf/zero-reference counts {entry['nan'], entry['inf'], entry['zero_ref']}, numpy {nan, inf, expected_zero}"
    if zero_reference is not None:  # positions refer to the reduced array: compare the numbers only
        expected = {k: v for k, v in expected.items() if not k.endswith("@")}
        got = {k: v for k, v in entry["stats"].items() if not k.endswith("@")}
    else:
        got = entry["stats"]
    assert set(got) == set(expected), f"{what}: {entry['text']!r} vs numpy's {expected}"
    for key, value in expected.items():
        if key.endswith("@"):
            assert got[key] == value, f"{what}: {key[:-1]} at {got[key]}, numpy {value}"
        else:
            assert close(got[key], float(value)), f"{what}: {key}={got[key]}, numpy {value}"


# ---- the tests ----

def test_every_model_is_compared():
    """A model added to examples/models or ../shared/models must join MODELS (and so CASES)."""
    on_disk = {p.stem for p in EXAMPLE_MODELS.glob("*.onnx")} | {p.stem for p in SHARED_MODELS.glob("*.onnx")}
    assert on_disk, "no models found"
    assert on_disk == set(MODELS), f"models on disk {sorted(on_disk)} vs. compared {sorted(MODELS)}"
    assert {model for _, model, _ in CASES} == set(MODELS)


def test_cases_cover_pass_fail_nan_and_zero_reference(saved_results, run_parity):
    """The perturbations do what they are meant to: some comparisons pass at the default tolerance,
    some fail, one has NaN/Inf in an output and some have zeros in the reference."""
    verdicts = {}
    for case, data in saved_results.items():
        run = run_parity("run", data["model"], "--load-outputs", data["a"], data["b"], timeout=RUN_TIMEOUT)
        verdicts[case] = run.returncode
    assert 0 in verdicts.values() and 1 in verdicts.values(), verdicts
    assert any(np.isnan(a).any() for data in saved_results.values() for a in data["arrays_b"].values())
    assert sum(1 for data in saved_results.values()
               if any((b == 0).any() and b.dtype.kind == "f" for b in data["arrays_b"].values())) >= 3


@pytest.mark.parametrize("case,flag_set", COMPARISONS, ids=[f"{c}-{f}" for c, f in COMPARISONS])
def test_same_verdict_and_statistics_as_polygraphy(saved_results, run_parity, case, flag_set):
    data = saved_results[case]
    flags = FLAG_SETS[flag_set](data["outputs"])
    args = ["run", data["model"], "--load-outputs", data["a"], data["b"], *flags]
    code, polygraphy_log = polygraphy(*args, expect=None)
    ours = run_parity(*args, timeout=RUN_TIMEOUT)
    styled = run_parity(*args, "--stats-style", "polygraphy", timeout=RUN_TIMEOUT)
    for run in (ours, styled):
        assert not run.crash_markers(), run.describe()
        assert run.returncode == code, f"Polygraphy exited with {code}\n{polygraphy_log[-3000:]}\n{run.describe()}"
    theirs = parse_log(polygraphy_log)
    assert theirs["final"] in ("PASSED", "FAILED") and len(theirs["pairs"]) == 1, polygraphy_log[-3000:]
    their_outputs = theirs["pairs"][0]["outputs"]
    # The log was understood: every output compared, with its verdict and both outputs' stats lines
    # (and, for `simple`, the error lines and the required tolerance).
    assert list(their_outputs) == list(data["outputs"]), polygraphy_log[-3000:]
    for name, their in their_outputs.items():
        assert their["verdict"] in ("PASSED", "FAILED"), polygraphy_log[-3000:]
        expected_labels = 2 if flag_set == "indices" else 4
        assert len(their["stats"]) == expected_labels and all(e["stats"] for e in their["stats"].values()), \
            polygraphy_log[-3000:]
        assert (their["required"] is None) == (flag_set == "indices"), polygraphy_log[-3000:]

    for style, run in (("parity", ours), ("polygraphy", styled)):
        got = parse_log(run.output)
        context = f"[--stats-style {style}]\n{run.describe()}\n--- Polygraphy ---\n{polygraphy_log[-4000:]}"
        assert got["final"] == theirs["final"], context
        assert [p["runners"] for p in got["pairs"]] == [p["runners"] for p in theirs["pairs"]], context
        for pair, their_pair in zip(got["pairs"], theirs["pairs"]):
            assert pair["order"] == their_pair["order"], context
            assert pair.get("summary") == their_pair.get("summary"), context
            assert pair["pair_lines"] == their_pair["pair_lines"], context
            for name, their in their_pair["outputs"].items():
                mine = pair["outputs"][name]
                what = f"{case} {flag_set} output '{name}' [--stats-style {style}]"
                assert mine["header"] == their["header"], what
                assert mine["verdict"] == their["verdict"] is not None, f"{what}\n{context}"
                assert mine["tolerance"] == their["tolerance"], f"{what}\n{context}"
                assert set(mine["stats"]) == set(their["stats"]), f"{what}\n{context}"
                check_output_numbers(data, name, mine, their, style, flags, what, context)


def check_output_numbers(data, name, mine, their, style, flags, what, context):
    """Polygraphy's numbers where Parity promises them; numpy's finite view where it differs."""
    out0, out1 = data["arrays_a"].get(name), data["arrays_b"].get(name)
    postprocessed = "--postprocess" in flags
    if style == "polygraphy" or postprocessed or out0 is None or out0.dtype.kind != "f":
        # Byte-for-byte Polygraphy text: every number, NaN and 1e+14 alike.
        for label, entry in their["stats"].items():
            assert_same_stats(mine["stats"][label]["stats"], entry["stats"], f"{what} {label}")
            counts = mine["stats"][label]
            assert (counts["nan"], counts["inf"], counts["zero_ref"]) == (0, 0, 0), f"{what} {label}\n{context}"
        if their["required"] is not None:
            assert mine["required"]["stat"] == their["required"]["stat"]
            assert close(mine["required"]["abs"], their["required"]["abs"]), f"{what}\n{context}"
            assert close(mine["required"]["rel"], their["required"]["rel"]), f"{what}\n{context}"
            assert mine["required"]["rest"] == their["required"]["rest"], f"{what}\n{context}"
        return

    absdiff, reldiff = errors_as_polygraphy_computes_them(out0, out1)
    zero_reference = out1 == 0
    runner0, runner1 = [label for label in their["stats"] if label.endswith(f": {name}")]
    labels = {runner0: (out0, None), runner1: (out1, None), "Absolute Difference": (absdiff, None),
              "Relative Difference": (reldiff, zero_reference if zero_reference.any() else None)}
    for label, (values, zeros) in labels.items():
        entry, their_entry = mine["stats"][label], their["stats"][label]
        clean = np.isfinite(values).all() and zeros is None
        if clean:
            # Nothing to leave out: Parity prints Polygraphy's numbers.
            assert (entry["nan"], entry["inf"], entry["zero_ref"]) == (0, 0, 0), f"{what} {label}\n{context}"
            assert_same_stats(entry["stats"], their_entry["stats"], f"{what} {label}")
        else:
            assert_finite_view(entry, values, f"{what} {label}", zeros)

    # Minimum Required Tolerance: the checked statistic of the absolute and relative error, over
    # what Parity's stats lines describe (so equal to Polygraphy's when nothing is left out).
    stat = their["required"]["stat"]
    assert mine["required"]["stat"] == stat, f"{what}\n{context}"
    abs_stats = mine["stats"]["Absolute Difference"]["stats"]
    rel_stats = mine["stats"]["Relative Difference"]["stats"]
    if stat == "quantile":
        q = float(flags[flags.index("--error-quantile") + 1])
        abs_finite = absdiff[np.isfinite(absdiff)]
        rel_kept = reldiff[(~zero_reference) & np.isfinite(reldiff)]
        want_abs, want_rel = np.quantile(abs_finite, q), np.quantile(rel_kept, q)
    else:
        key = {"elemwise": "max", "max": "max", "mean": "mean", "median": "median"}[stat]
        want_abs, want_rel = abs_stats[key], rel_stats[key]
    assert close(mine["required"]["abs"], float(want_abs)), f"{what}: required abs\n{context}"
    assert close(mine["required"]["rel"], float(want_rel)), f"{what}: required rel\n{context}"
    if np.isfinite(absdiff).all() and np.isfinite(reldiff).all() and not zero_reference.any():
        assert close(mine["required"]["abs"], their["required"]["abs"]), f"{what}\n{context}"
        assert close(mine["required"]["rel"], their["required"]["rel"]), f"{what}\n{context}"
        assert mine["required"]["rest"] == their["required"]["rest"], f"{what}\n{context}"
    else:
        assert mine["required"]["rest"].startswith(their["required"]["rest"]), f"{what}\n{context}"
        if zero_reference.any():
            largest = float(absdiff[zero_reference].max())
            found = re.search(r"rel leaves out (\d+) element\(s\) with zero reference, which pass only within abs "
                              r"\(largest abs error there: (\S+)\)", mine["required"]["rest"])
            assert found and int(found[1]) == int(zero_reference.sum()) and close(float(found[2]), largest), \
                f"{what}: {mine['required']['rest']!r}"
        bad = int((~np.isfinite(absdiff)).sum())
        if bad:
            assert f"| {bad} element(s) have a NaN/Inf error" in mine["required"]["rest"], \
                f"{what}: {mine['required']['rest']!r}"
