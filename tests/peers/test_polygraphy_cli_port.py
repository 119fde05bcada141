"""Polygraphy's own CLI tests and CLI examples, ported: every case runs the same commands through
`polygraphy` (the venv's) and `parity` ($PARITY_BIN, else build/release/tools/parity/parity) on
Polygraphy's models (../shared/polygraphy), each tool in its own working folder, and compares
verdicts, saved files and the text the Polygraphy test checks (polygraphy_cli_port_harness.py says
how; the cases are in polygraphy_cli_port_cases.py).

tests/peers/data/polygraphy_cli_known_differences.txt lists, one per line, the ported cases that
still fail ('<case id>: reason'; they run and must still fail, like xfail(strict=True), so a case
that starts passing fails until its line is removed) and the Polygraphy tests not ported ('skip
<test>: reason': TensorRT, TensorFlow, GPU, plugins). The run ends with the count of ported and
passing cases per command. Missing binary or polygraphy: the tests FAIL, never skip.
Run:  PARITY_BIN=build/release/tools/parity/parity .venv/bin/python -m pytest -q tests/peers/test_polygraphy_cli_port.py
"""

from pathlib import Path

import pytest

import polygraphy_cli_port_harness as harness
from polygraphy_cli_port_cases import ALL_CASES

KNOWN_DIFFERENCES_FILE = Path(__file__).parent / "data" / "polygraphy_cli_known_differences.txt"
KNOWN, NOT_PORTED = harness.read_known_differences(KNOWN_DIFFERENCES_FILE)

# Each case's report carries ("polygraphy_port_case", (command, passed)) in its user_properties;
# conftest.py counts them per command (in the controlling process, also under pytest-xdist, where
# the cases run in worker processes) and prints the counts in the terminal summary.


@pytest.fixture(scope="session")
def parity():
    try:
        harness.polygraphy_program()
        return harness.parity_binary()
    except FileNotFoundError as error:
        pytest.fail(str(error), pytrace=False)


def test_known_differences_name_ported_cases():
    ids = {case.case_id for case in ALL_CASES}
    assert len(ids) == len(ALL_CASES), "duplicate case ids"
    unknown = sorted(set(KNOWN) - ids)
    assert not unknown, f"{KNOWN_DIFFERENCES_FILE.name} lists cases that are not ported: {unknown}"


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda case: case.case_id)
def test_polygraphy_cli_case(case, parity, record_property):
    problems = harness.run_case(case, parity)
    record_property("polygraphy_port_case", (case.command, not problems))
    if case.case_id in KNOWN:
        if not problems:
            pytest.fail(f"{case.case_id} now passes: remove its line from {KNOWN_DIFFERENCES_FILE.name} "
                        f"(it said: {KNOWN[case.case_id]})", pytrace=False)
        pytest.xfail(KNOWN[case.case_id])
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
