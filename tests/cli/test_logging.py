"""Polygraphy-style logging options of `parity inspect model`:
-v / -q / --verbosity / --silent / --log-file."""

from pathlib import Path

import onnx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL = REPO_ROOT / "examples" / "models" / "small_cnn.onnx"


def non_blank(text):
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def is_subsequence(needles, haystack):
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


def assert_success(run):
    assert run.returncode == 0, f"expected exit code 0\n{run.describe()}"
    assert not run.crash_markers(), run.describe()


@pytest.fixture(scope="module")
def default_run(inspect_model):
    run = inspect_model(MODEL)
    assert_success(run)
    graph_name = onnx.load(str(MODEL)).graph.name
    assert run.lines("[I]"), f"default output has no [I] lines\n{run.describe()}"
    assert graph_name in run.stdout, run.describe()
    return run


def test_default_hides_verbose(default_run):
    assert not default_run.lines("[V]"), f"[V] lines shown by default\n{default_run.describe()}"


@pytest.mark.parametrize("flags", [["-v"], ["--verbosity", "verbose"]], ids=["-v", "--verbosity=verbose"])
def test_verbose_shows_more(inspect_model, default_run, flags):
    run = inspect_model(MODEL, *flags)
    assert_success(run)
    assert run.lines("[V]"), f"{flags}: no [V] lines\n{run.describe()}"
    # Everything the default shows is still there, in the same order.
    assert is_subsequence(non_blank(default_run.stdout), non_blank(run.stdout)), \
        f"{flags} lost lines of the default output\n--- default ---\n{default_run.stdout}\n" \
        f"--- {flags} ---\n{run.describe()}"


@pytest.mark.parametrize("flags", [["-q"], ["--verbosity", "warning"], ["--verbosity", "WARNING"]],
                         ids=["-q", "--verbosity=warning", "--verbosity=WARNING"])
def test_quieter_hides_info(inspect_model, default_run, flags):
    run = inspect_model(MODEL, *flags)
    assert_success(run)
    for prefix in ("[I]", "[V]"):
        assert not run.lines(prefix), f"{flags}: {prefix} lines still shown\n{run.describe()}"
    graph_name = onnx.load(str(MODEL)).graph.name
    assert f"Name: {graph_name}" not in run.output, f"{flags}: summary still shown\n{run.describe()}"


def test_silent_prints_nothing(inspect_model):
    run = inspect_model(MODEL, "--silent")
    assert_success(run)
    assert run.stdout == "" and run.stderr == "", f"--silent printed something\n{run.describe()}"


def test_log_file_gets_the_log(inspect_model, default_run, tmp_path):
    log_file = tmp_path / "logs" / "parity.log"
    log_file.parent.mkdir()
    run = inspect_model(MODEL, "--log-file", log_file)
    assert_success(run)
    assert log_file.is_file(), f"--log-file {log_file} was not written\n{run.describe()}"
    logged = log_file.read_text(errors="replace")
    # The terminal still gets the log...
    assert is_subsequence(non_blank(default_run.stdout), non_blank(run.stdout)), run.describe()
    # ...and the file gets it too: every message of the terminal, in order, without colours.
    assert "\x1b[" not in logged, "colour codes in the log file"
    assert any(line.startswith("[I]") and "Loading model" in line for line in logged.splitlines()), \
        f"log file lacks the '[I] Loading model' line:\n{logged}"
    assert is_subsequence(non_blank(run.stdout), non_blank(logged)), \
        f"log file differs from what was printed\n--- log file ---\n{logged}\n{run.describe()}"


def test_log_file_with_verbose_gets_verbose_lines(inspect_model, tmp_path):
    log_file = tmp_path / "verbose.log"
    run = inspect_model(MODEL, "-v", "--log-file", log_file)
    assert_success(run)
    logged = log_file.read_text(errors="replace")
    assert any(line.startswith("[V]") for line in logged.splitlines()), \
        f"-v --log-file: no [V] lines in the file:\n{logged}"


def test_unknown_verbosity_is_an_error(inspect_model):
    run = inspect_model(MODEL, "--verbosity", "chatty")
    assert run.returncode > 0, \
        f"an unknown verbosity name should be refused\n{run.describe()}"
    assert not run.crash_markers(), run.describe()
    assert "chatty" in run.output, f"the message should name the bad value\n{run.describe()}"
