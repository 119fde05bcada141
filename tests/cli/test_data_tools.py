"""`parity data to-input` and `parity inspect data` against Polygraphy's `polygraphy data to-input`
and `polygraphy inspect data` on the same files, made by both `polygraphy run` and `parity run`.

Note on to-input: Polygraphy pads its iteration list with `[OrderedDict()] * n`, one dict shared by
every new iteration, so when the first file has several iterations every iteration of its output
holds the last iteration's data. Parity keeps iterations apart; the tests compare with Polygraphy
where it is exact (single-iteration files; the last iteration) and with the source files otherwise.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import lines_with_prefix

TIMEOUT = 60


def polygraphy(*args):
    exe = Path(sys.executable).parent / "polygraphy"
    exe = str(exe) if exe.is_file() else shutil.which("polygraphy")
    assert exe, "the polygraphy command is not installed (scripts/setup.sh installs it into .venv)"
    completed = subprocess.run([exe, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=TIMEOUT, env=dict(os.environ, NO_COLOR="1", PYTHONWARNINGS="ignore"))
    output = completed.stdout.decode(errors="replace")
    assert completed.returncode == 0, f"polygraphy {' '.join(map(str, args))}\n{output[-4000:]}"
    return output


def load_json(path):
    from polygraphy.json import load_json as polygraphy_load_json
    return polygraphy_load_json(str(path))


def info_text(output):
    """The log without Polygraphy's warning about the missing 'colored' module."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    return "\n".join(line for line in plain.splitlines() if "'colored' module" not in line)


@pytest.fixture(scope="module")
def data_files(tmp_path_factory, run_parity, examples_dir):
    """Inputs and outputs of small_cnn from both tools: 2 iterations and 1 iteration each."""
    folder = tmp_path_factory.mktemp("data_tools")
    model = examples_dir / "small_cnn.onnx"
    files = {}
    for iterations in (1, 2):
        p_in, p_out = folder / f"poly_in{iterations}.json", folder / f"poly_out{iterations}.json"
        polygraphy("run", model, "--onnxrt", "--iterations", iterations, "--save-inputs", p_in,
                   "--save-outputs", p_out)
        r_in, r_out = folder / f"par_in{iterations}.json", folder / f"par_out{iterations}.json"
        run = run_parity("run", model, "--ref", "--iterations", iterations, "--save-inputs", r_in,
                         "--save-outputs", r_out, "--seed", 7, timeout=TIMEOUT)
        assert run.returncode == 0, run.describe()
        files.update({("poly_in", iterations): p_in, ("poly_out", iterations): p_out,
                      ("par_in", iterations): r_in, ("par_out", iterations): r_out})
    files["folder"] = folder
    return files


def assert_feeds_equal(ours, theirs):
    assert len(ours) == len(theirs)
    for index, (a, b) in enumerate(zip(ours, theirs)):
        assert list(a.keys()) == list(b.keys()), f"iteration {index}"
        for name in a:
            assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape, (index, name)
            assert np.array_equal(a[name], b[name]), (index, name)


# ---- data to-input ----

@pytest.mark.parametrize("sources", [("poly_in", "poly_out"), ("par_in", "par_out"), ("poly_out", "par_in")])
def test_to_input_matches_polygraphy_single_iteration(run_parity, data_files, sources):
    paths = [data_files[(s, 1)] for s in sources]
    folder = data_files["folder"]
    ours, theirs = folder / f"ours_{'_'.join(sources)}.json", folder / f"theirs_{'_'.join(sources)}.json"
    run = run_parity("data", "to-input", *paths, "-o", ours, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert not run.crash_markers()
    assert any("Saving input file containing 1 iteration(s)" in line for line in lines_with_prefix(run.output, "[I] "))
    polygraphy("data", "to-input", *paths, "-o", theirs)
    assert_feeds_equal(load_json(ours), load_json(theirs))


def test_to_input_multi_iteration_merges_per_iteration(run_parity, data_files):
    inputs, outputs = data_files[("poly_in", 2)], data_files[("par_out", 2)]
    folder = data_files["folder"]
    ours, theirs = folder / "ours_multi.json", folder / "theirs_multi.json"
    run = run_parity("data", "to-input", inputs, outputs, "-o", ours, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    polygraphy("data", "to-input", inputs, outputs, "-o", theirs)
    merged, reference = load_json(ours), load_json(theirs)
    # Polygraphy is exact for the last iteration.
    assert_feeds_equal(merged[-1:], reference[-1:])
    # Every iteration: the inputs of that iteration, then that iteration's outputs.
    feeds = load_json(inputs)
    results = load_json(outputs)
    (_, runner_iterations), = list(results.items())
    assert len(merged) == 2
    for index, feed in enumerate(merged):
        expected = dict(feeds[index])
        expected.update({name: runner_iterations[index][name] for name in runner_iterations[index].keys()})
        assert list(feed.keys()) == list(expected.keys())
        for name, value in expected.items():
            assert np.array_equal(feed[name], value), (index, name)
    assert not np.array_equal(merged[0]["image"], merged[1]["image"])


def test_to_input_later_file_overrides_and_warns_on_iteration_mismatch(run_parity, data_files):
    one, two = data_files[("par_in", 1)], data_files[("poly_in", 2)]
    out = data_files["folder"] / "override.json"
    run = run_parity("data", "to-input", one, two, "-o", out, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert any("different numbers of iterations" in line for line in lines_with_prefix(run.output, "[W] "))
    merged, later = load_json(out), load_json(two)
    assert len(merged) == 2
    assert_feeds_equal(merged, later)  # same names, the later file's values everywhere
    assert not np.array_equal(merged[0]["image"], load_json(one)[0]["image"])


# ---- inspect data ----

@pytest.mark.parametrize("kind", ["poly_in", "poly_out", "par_in", "par_out"])
@pytest.mark.parametrize("flags", [(), ("-a",), ("-a", "-s"), ("--histogram",), ("-s", "-n", "1", "--line-width", "40"),
                                   ("-a", "-s", "-n", "-1", "--line-width", "-1")])
def test_inspect_data_matches_polygraphy(run_parity, data_files, kind, flags):
    path = data_files[(kind, 2)]
    run = run_parity("inspect", "data", path, *flags, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert not run.crash_markers()
    assert info_text(run.output) == info_text(polygraphy("inspect", "data", path, *flags))


@pytest.fixture(scope="module")
def mixed_file(data_files):
    """One iteration of assorted dtypes and shapes, written by Polygraphy's own JSON writer."""
    from collections import OrderedDict
    from polygraphy.json import save_json
    rng = np.random.default_rng(3)
    path = data_files["folder"] / "mixed.json"
    save_json([OrderedDict(
        ints=np.arange(-5, 7, dtype=np.int64).reshape(3, 4),
        flags=rng.standard_normal(5) > 0,
        halves=rng.standard_normal((2, 5)).astype(np.float16),
        many_halves=(rng.standard_normal(3000) * 50).astype(np.float16),
        constant_halves=np.full(7, 2.5, np.float16),
        wide=rng.standard_normal(2000) * 1e5,
        small=(rng.standard_normal((4, 3)) * 1e-3).astype(np.float32),
        empty=np.zeros((0, 3), np.float32),
        scalar=np.array(3.5, np.float32))], str(path))
    return path


@pytest.mark.parametrize("flags", [("-s",), ("--histogram",), ("-s", "-n", "0"), ("-a", "-s", "-n", "1", "--line-width", "20"),
                                   ("-s", "-n", "-1", "--line-width", "-1")])
def test_inspect_data_dtypes_and_print_options_match_polygraphy(run_parity, mixed_file, flags):
    run = run_parity("inspect", "data", mixed_file, *flags, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert not run.crash_markers()
    assert info_text(run.output) == info_text(polygraphy("inspect", "data", mixed_file, *flags))


def tensors_in(path):
    data = load_json(path)
    if isinstance(data, list):
        return [list(feed.items()) for feed in data]
    (_, iterations), = list(data.items())
    return [[(name, iteration[name]) for name in iteration.keys()] for iteration in iterations]


@pytest.mark.parametrize("kind", ["par_in", "par_out"])
def test_inspect_data_shows_names_shapes_values_and_iterations(run_parity, data_files, kind):
    path = data_files[(kind, 2)]
    iterations = tensors_in(path)
    first = run_parity("inspect", "data", path, timeout=TIMEOUT)
    assert first.returncode == 0, first.describe()
    for name, array in iterations[0]:
        shape = "(" + ", ".join(map(str, array.shape)) + ("," if array.ndim == 1 else "") + ")"
        assert f"{name} [dtype={array.dtype}, shape={shape}] | Stats: mean=" in first.output
    assert "-- Iteration:" not in first.output

    everything = run_parity("inspect", "data", path, "-a", timeout=TIMEOUT)
    assert everything.returncode == 0, everything.describe()
    assert "-- Iteration: 0" in everything.output and "-- Iteration: 1" in everything.output
    assert everything.output.count("| Stats: mean=") == sum(len(it) for it in iterations)

    values = run_parity("inspect", "data", path, "-s", "-n", "-1", "--line-width", "-1", timeout=TIMEOUT)
    assert values.returncode == 0, values.describe()
    name, array = iterations[0][-1]
    with np.printoptions(edgeitems=sys.maxsize, linewidth=sys.maxsize):
        text = str(array)
    assert text.splitlines()[0] in values.output
    assert len(values.output.splitlines()) > len(first.output.splitlines())


# ---- bad input ----

def bad_files(folder, good):
    missing = folder / "does_not_exist.json"
    malformed = folder / "malformed.json"
    malformed.write_text('{"lst": [["runner", [')
    truncated = folder / "truncated.json"
    text = good.read_bytes()
    truncated.write_bytes(text[: len(text) // 2])
    not_data = folder / "not_data.json"
    not_data.write_text('"just a string"')
    return [missing, malformed, truncated, not_data]


def test_bad_input_fails_cleanly(run_parity, data_files):
    folder = data_files["folder"]
    for bad in bad_files(folder, data_files[("poly_out", 2)]):
        out = folder / f"never_{bad.stem}.json"
        for args in (("data", "to-input", data_files[("par_in", 1)], bad, "-o", out), ("inspect", "data", bad)):
            run = run_parity(*args, timeout=TIMEOUT)
            assert run.returncode == 1, run.describe()
            assert not run.crash_markers(), run.describe()
            errors = lines_with_prefix(run.output, "[E] ")
            assert len(errors) == 1 and bad.name in errors[0], run.describe()
        assert not out.exists()
        assert not list(folder.glob(f"never_{bad.stem}.json*"))
