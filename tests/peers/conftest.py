"""Prints the per-command counts of tests/peers/test_polygraphy_cli_port.py after a run.

The counts come from the test reports (each port case records its command and whether it passed
in `user_properties`), so they are right also when pytest-xdist runs the cases in worker processes.
"""

import sys
from pathlib import Path

_PORT_COUNTS = {}  # command -> [ported, passing]


def pytest_runtest_logreport(report):
    if report.when != "call":
        return
    for name, value in report.user_properties:
        if name == "polygraphy_port_case":
            command, passed = value
            counts = _PORT_COUNTS.setdefault(command, [0, 0])
            counts[0] += 1
            counts[1] += bool(passed)


def pytest_terminal_summary(terminalreporter):
    if not _PORT_COUNTS:
        return
    sys.path.insert(0, str(Path(__file__).parent))
    import test_polygraphy_cli_port as port

    terminalreporter.section("Polygraphy CLI port: cases passing / ported, per command")
    total_ported = total_passing = 0
    for command, (ported, passing) in sorted(_PORT_COUNTS.items()):
        terminalreporter.write_line(f"{command:28} {passing:4} / {ported}")
        total_ported += ported
        total_passing += passing
    terminalreporter.write_line(f"{'all':28} {total_passing:4} / {total_ported}")
    for pattern, reason in port.NOT_PORTED:
        terminalreporter.write_line(f"not ported: {pattern}: {reason}")
