"""Polygraphy-style logging options of `parity inspect model`:
-v / -q / --verbosity / --silent / --log-file / --log-format."""

import re
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


# A message's first line: "[I] ...", "[2024-01-31 12:00:00] [I] ...", "[I] [file.cpp:12] ..."
SEVERITY_PREFIX = r"\[[USXVIWE!]\] "
TIMESTAMP = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] "
LINE_INFO = r"\[([^\]/\\]+):(\d+)\] "


def without(pattern, text):
    """`text` with `pattern` removed where it starts a line."""
    return re.sub(rf"^{pattern}", "", text, flags=re.MULTILINE)


def first_lines(text):
    """The first line of each message (continuation lines start with spaces)."""
    return [line for line in text.splitlines() if line and not line[0].isspace()]


def logging_call_at(file_name, line):
    """Whether some source file called `file_name` has a logging call on line `line`."""
    for path in list((REPO_ROOT / "src").rglob(file_name)) + list((REPO_ROOT / "tools").rglob(file_name)):
        lines = path.read_text(errors="replace").splitlines()
        if 0 < line <= len(lines) and "log" in lines[line - 1]:
            return True
    return False


def test_line_info_names_each_messages_source(inspect_model, default_run):
    run = inspect_model(MODEL, "--log-format", "line-info")
    assert_success(run)
    messages = first_lines(run.stdout)
    assert messages, run.describe()
    for message in messages:
        match = re.match(SEVERITY_PREFIX + LINE_INFO, message)
        assert match, f"line-info: message without [file:line]: {message!r}\n{run.describe()}"
        file_name, line = match.group(1), int(match.group(2))
        assert logging_call_at(file_name, line), \
            f"{message!r}: no logging call at {file_name}:{line} in src/ or tools/"
    # Apart from the locations, the output is the default one (continuation lines unchanged).
    stripped = "".join(re.sub(rf"^({SEVERITY_PREFIX}){LINE_INFO}", r"\1", line) + "\n"
                       for line in run.stdout.splitlines())
    assert non_blank(stripped) == non_blank(default_run.stdout), \
        f"line-info changed more than the prefix\n--- default ---\n{default_run.stdout}\n{run.describe()}"


def test_timestamp_prefixes_each_message(inspect_model, default_run):
    run = inspect_model(MODEL, "--log-format", "timestamp")
    assert_success(run)
    messages = first_lines(run.stdout)
    assert messages and all(re.match(TIMESTAMP + SEVERITY_PREFIX, line) for line in messages), run.describe()
    assert non_blank(without(TIMESTAMP, run.stdout)) == non_blank(default_run.stdout), \
        f"timestamp changed more than the prefix\n--- default ---\n{default_run.stdout}\n{run.describe()}"


def test_timestamp_and_line_info_together_also_in_the_log_file(inspect_model, default_run, tmp_path):
    log_file = tmp_path / "formatted.log"
    run = inspect_model(MODEL, "--log-format", "timestamp", "line-info", "--log-file", log_file)
    assert_success(run)
    logged = log_file.read_text(errors="replace")
    for text, where in ((run.stdout, "stdout"), (logged, "log file")):
        messages = first_lines(text)
        assert messages, f"{where}: no messages\n{run.describe()}"
        for line in messages:
            assert re.match(TIMESTAMP + SEVERITY_PREFIX + LINE_INFO, line), \
                f"{where}: {line!r} lacks '[time] [I] [file:line] '\n{run.describe()}"
        plain = without(TIMESTAMP, text)
        plain = re.sub(rf"^({SEVERITY_PREFIX}){LINE_INFO}", r"\1", plain, flags=re.MULTILINE)
        assert non_blank(plain) == non_blank(default_run.stdout), f"{where} differs\n{run.describe()}"


def test_unknown_log_format_is_an_error(inspect_model):
    run = inspect_model(MODEL, "--log-format", "fancy")
    assert run.returncode > 0, f"an unknown log format should be refused\n{run.describe()}"
    assert not run.crash_markers(), run.describe()


@pytest.mark.parametrize("before, after", [(["-v"], []), (["--silent"], []), (["-q"], []), (["-q"], ["-v"])],
                         ids=["-v", "--silent", "-q", "-q-then-v"])
def test_options_before_the_subcommand(run_parity, inspect_model, before, after):
    """`parity inspect -v model ...` (options given to the command group) acts like the same options
    given after the subcommand; -v/-q counts given at both places add up."""
    run = run_parity("inspect", *before, "model", MODEL, *after)
    same = inspect_model(MODEL, *before, *after)
    assert_success(run)
    assert_success(same)
    strip_timing = lambda text: re.sub(r"in [0-9.]+ ms", "in <t> ms", text)
    assert strip_timing(run.stdout) == strip_timing(same.stdout), f"{run.describe()}\n---\n{same.describe()}"
    if before == ["-v"]:
        assert run.lines("[V]"), run.describe()
    if before == ["--silent"]:
        assert run.stdout == "" and run.stderr == "", run.describe()


def test_unknown_verbosity_before_the_subcommand_is_an_error(run_parity):
    run = run_parity("inspect", "--verbosity", "chatty", "model", MODEL)
    assert run.returncode == 1 and len(run.lines("[E]")) == 1, run.describe()


# --verbosity LEVEL path:LEVEL ...: per-path severities, paths in Parity's source tree without src/.

def sources_of(run, prefix):
    """The source files (line-info) of the messages starting with `prefix`, e.g. "[V]"."""
    files = []
    for line in run.lines(prefix):
        match = re.match(re.escape(prefix) + " " + LINE_INFO, line)
        assert match, f"{line!r} has no [file:line]\n{run.describe()}"
        files.append(match.group(1))
    return files


def onnxrt_run(run_parity, *flags):
    run = run_parity("run", MODEL, "--onnxrt", "--log-format", "line-info", *flags)
    assert_success(run)
    return run


def test_verbosity_path_shows_that_folders_verbose_lines_only(run_parity):
    everything = sources_of(onnxrt_run(run_parity, "-v"), "[V]")
    onnxrt_folder = REPO_ROOT / "src" / "runtime" / "backends" / "onnxrt"
    others = [f for f in everything if not (onnxrt_folder / f).is_file()]
    assert others, f"-v shows no verbose line from outside the onnxrt folder: {everything}"
    run = onnxrt_run(run_parity, "--verbosity", "INFO", "runtime/backends/onnxrt:VERBOSE")
    shown = sources_of(run, "[V]")
    assert shown, f"no [V] lines of the onnxrt folder\n{run.describe()}"
    assert all((onnxrt_folder / f).is_file() for f in shown), \
        f"[V] lines from outside runtime/backends/onnxrt: {shown}\n{run.describe()}"
    assert not run.lines("[X]"), run.describe()
    # The src/ prefix and a trailing slash are accepted; EXTRA_VERBOSE shows that folder's [X] lines.
    extra = onnxrt_run(run_parity, "--verbosity", "src/runtime/backends/onnxrt/:EXTRA_VERBOSE")
    assert sources_of(extra, "[X]") and all((onnxrt_folder / f).is_file() for f in sources_of(extra, "[X]")), \
        extra.describe()


def test_verbosity_file_rule_and_a_quieter_rule(run_parity):
    run = onnxrt_run(run_parity, "--verbosity", "tools/parity/args/model_args.cpp:VERBOSE")
    assert set(sources_of(run, "[V]")) == {"model_args.cpp"}, run.describe()
    # A rule less verbose than the default wins for its files; -v still gives the default.
    run = onnxrt_run(run_parity, "-v", "--verbosity", "tools/parity/args:INFO")
    shown = sources_of(run, "[V]")
    assert shown and "model_args.cpp" not in shown, run.describe()


def test_verbosity_paths_before_the_subcommand(run_parity):
    run = run_parity("inspect", "--verbosity", "INFO", "tools/parity/args:VERBOSE", "model", MODEL,
                     "--log-format", "line-info")
    assert_success(run)
    assert set(sources_of(run, "[V]")) == {"model_args.cpp"}, run.describe()


@pytest.mark.parametrize("value, says", [("runtime:LOUD", "unknown verbosity 'LOUD'"),
                                         (":VERBOSE", "empty path"),
                                         ("src:VERBOSE", "names no folder or file")],
                         ids=["unknown-level", "empty-path", "whole-tree"])
def test_bad_verbosity_path_is_one_error_naming_it(inspect_model, value, says):
    run = inspect_model(MODEL, "--verbosity", "INFO", value)
    assert run.returncode == 1 and not run.crash_markers(), run.describe()
    errors = run.lines("[E]")
    assert len(errors) == 1 and f"--verbosity: '{value}'" in errors[0] and says in errors[0], run.describe()
