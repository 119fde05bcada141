"""`parity debug repeat`: --until good/bad/N over a check that fails twice then passes, artifacts
sorted into good/bad, the summary of outcomes, bad input."""

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


def test_bad_input(run_parity, tmp_path):
    script = flaky(tmp_path)
    assert_one_error(run_parity("debug", "repeat", "--until", "x", "--check", script, cwd=tmp_path), "--until")
    assert_one_error(run_parity("debug", "repeat", "--until", "0", "--check", script, cwd=tmp_path), "--until")
    assert_one_error(run_parity("debug", "repeat", "--until", "2", cwd=tmp_path), "--check")
    assert_one_error(run_parity("debug", "repeat", "--until", "2", "--check", "no-such-program", cwd=tmp_path),
                     "'no-such-program' was not found")
