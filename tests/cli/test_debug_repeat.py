"""`parity debug repeat`: --until good/bad/N over a check that fails twice then passes, artifacts
sorted into good/bad, the summary of outcomes, a run resumed from its replay, the check's output
(--show-output, --hide-fail-output), --iteration-info, bad input."""

import json

from graph_tools_util import assert_one_error

FLAKY = """#!/bin/sh
n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo run $n > art.txt
[ $n -ge 3 ] && exit 0
exit 2
"""


def flaky(folder):
    script = folder / "flaky.sh"
    script.write_text(FLAKY)
    script.chmod(0o755)
    return script


def test_until_good_sorts_artifacts_and_summarizes(run_parity, tmp_path):
    script = flaky(tmp_path)
    result = run_parity("debug", "repeat", "--until", "good", "--artifacts", "art.txt", "--check", script,
                        cwd=tmp_path)
    assert result.returncode == 0, result.describe()
    assert sorted(p.name for p in (tmp_path / "parity_artifacts" / "bad").iterdir()) == ["art_iter1.txt",
                                                                                         "art_iter2.txt"]
    assert [p.name for p in (tmp_path / "parity_artifacts" / "good").iterdir()] == ["art_iter3.txt"]
    assert (tmp_path / "parity_artifacts" / "good" / "art_iter3.txt").read_text() == "run 3\n"
    assert "Finished 3 iteration(s) | Passed: 1/3" in result.stdout
    assert "failed with exit code 2: 2" in result.stdout and "passed with exit code 0: 1" in result.stdout


def test_until_bad_and_count(run_parity, tmp_path):
    script = flaky(tmp_path)
    result = run_parity("debug", "repeat", "--until", "bad", "--check", script, cwd=tmp_path)
    assert "Finished 1 iteration(s) | Passed: 0/1" in result.stdout, result.describe()
    result = run_parity("debug", "repeat", "--until", "4", "--ignore-fail-code", "2", "--check", script,
                        cwd=tmp_path)
    assert "Finished 4 iteration(s) | Passed: 4/4" in result.stdout, result.describe()


def summary(stdout):
    """The summary's counts: the Finished line without the replay note, and the outcome lines."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "Finished" in line)
    return [lines[start].replace(" (2 from the replay)", "")] + lines[start + 1:]


def test_replay_resumes_to_the_same_summary(run_parity, tmp_path):
    full_dir, resumed_dir = tmp_path / "full", tmp_path / "resumed"
    full_dir.mkdir()
    resumed_dir.mkdir()
    full = run_parity("debug", "repeat", "--until", "4", "--check", flaky(full_dir), cwd=full_dir)
    assert "Finished 4 iteration(s) | Passed: 2/4" in full.stdout, full.describe()
    assert json.loads((full_dir / "polygraphy_debug_replay.json").read_text())["tool"] == "debug repeat"
    # A run limited to 2 iterations (or interrupted after them), then resumed from its replay: the
    # two recorded iterations are not run again (the script runs twice more, 3 and 4 pass).
    script = flaky(resumed_dir)
    limited = run_parity("debug", "repeat", "--until", "2", "--save-debug-replay", "first.json", "--check", script,
                         cwd=resumed_dir)
    assert "Finished 2 iteration(s) | Passed: 0/2" in limited.stdout, limited.describe()
    resumed = run_parity("debug", "repeat", "--until", "4", "--load-debug-replay", "first.json", "--check", script,
                         cwd=resumed_dir)
    assert resumed.returncode == 0, resumed.describe()
    assert resumed.stdout.count("from the replay") == 3, resumed.stdout  # two iterations and the summary
    assert (resumed_dir / "count").read_text() == "4\n"
    assert summary(resumed.stdout) == summary(full.stdout), resumed.stdout
    # The replay of the resumed run holds all four iterations; replaying it runs nothing.
    again = run_parity("debug", "repeat", "--until", "good", "--load-debug-replay", "polygraphy_debug_replay.json",
                       "--check", script, cwd=resumed_dir)
    assert "Finished 3 iteration(s) (3 from the replay) | Passed: 1/3" in again.stdout, again.describe()
    assert (resumed_dir / "count").read_text() == "4\n"


def test_check_output_shown_as_polygraphy_shows_it(run_parity, tmp_path):
    """A failing check's stdout and stderr are shown by default ([E] for stderr), not with
    --hide-fail-output; a passing check's only with --show-output ([W] for stderr); the flags exclude
    each other. (The output is upper case: the command line, which is printed, is not.)"""
    def repeat(*flags, code):
        return run_parity("debug", "repeat", "--until", "1", *flags, "--check", "sh", "-c",
                          f"echo to-stdout | tr a-z A-Z; echo to-stderr | tr a-z A-Z >&2; exit {code}", cwd=tmp_path)

    failed = repeat(code=3)
    assert "[I] ========== CAPTURED STDOUT ==========\n    TO-STDOUT\n" in failed.stdout, failed.describe()
    assert "[E] ========== CAPTURED STDERR ==========\n    TO-STDERR\n" in failed.output, failed.describe()
    hidden = repeat("--hide-fail-output", code=3)
    assert "CAPTURED" not in hidden.output and "TO-STD" not in hidden.output, hidden.describe()
    assert "TO-STDOUT" in repeat("--hide-fail-output", "-v", code=3).output  # still at -v
    passed = repeat(code=0)
    assert "CAPTURED" not in passed.output and "TO-STD" not in passed.output, passed.describe()
    shown = repeat("--show-output", code=0)
    assert "[I] ========== CAPTURED STDOUT ==========\n    TO-STDOUT\n" in shown.stdout, shown.describe()
    assert "[W] ========== CAPTURED STDERR ==========\n    TO-STDERR\n" in shown.output, shown.describe()
    both = repeat("--show-output", "--hide-fail-output", code=0)
    assert both.returncode == 1 and "--show-output excludes --hide-fail-output" in both.output, both.describe()


def test_iteration_info_is_written_for_each_check_then_removed(run_parity, tmp_path):
    script = tmp_path / "record.sh"
    script.write_text("#!/bin/sh\ncat info.json >> seen.txt\n")
    script.chmod(0o755)
    result = run_parity("debug", "repeat", "--until", "3", "--iteration-info", "info.json", "--check", script,
                        cwd=tmp_path)
    assert result.returncode == 0, result.describe()
    assert (tmp_path / "seen.txt").read_text() == "".join(f'{{"iteration": {n}}}\n' for n in range(3))
    assert not (tmp_path / "info.json").exists()


def test_bad_input(run_parity, tmp_path):
    script = flaky(tmp_path)
    assert_one_error(run_parity("debug", "repeat", "--until", "x", "--check", script, cwd=tmp_path), "--until")
    assert_one_error(run_parity("debug", "repeat", "--until", "0", "--check", script, cwd=tmp_path), "--until")
    assert_one_error(run_parity("debug", "repeat", "--until", "2", cwd=tmp_path), "--check")
    assert_one_error(run_parity("debug", "repeat", "--until", "2", "--no-such-flag", "--check", script, cwd=tmp_path),
                     "unknown option '--no-such-flag'")
    assert_one_error(run_parity("debug", "reduce", "--iteration-info", "i.json", "--ref", "--onnxrt", "-o", "r.onnx",
                                str(script), cwd=tmp_path), "--iteration-info applies to a --check command")
    assert_one_error(run_parity("debug", "repeat", "--until", "2", "--check", "no-such-program", cwd=tmp_path),
                     "'no-such-program' was not found")
    (tmp_path / "other.json").write_text(json.dumps({"tool": "debug build", "steps": []}))
    assert_one_error(run_parity("debug", "repeat", "--until", "2", "--load-debug-replay", "other.json", "--check",
                                script, cwd=tmp_path), "other.json", "a replay of debug build, not of debug repeat")
    (tmp_path / "broken.json").write_text("{")
    assert_one_error(run_parity("debug", "repeat", "--until", "2", "--load-debug-replay", "broken.json", "--check",
                                script, cwd=tmp_path), "broken.json", "not a debug replay")
