"""Prints the per-command counts of tests/peers/test_polygraphy_cli_port.py after a run."""

import sys


def pytest_terminal_summary(terminalreporter):
    port = sys.modules.get("test_polygraphy_cli_port")
    if port is None or not port.COUNTS:
        return
    terminalreporter.section("Polygraphy CLI port: cases passing / ported, per command")
    total_ported = total_passing = 0
    for command, (ported, passing) in sorted(port.COUNTS.items()):
        terminalreporter.write_line(f"{command:28} {passing:4} / {ported}")
        total_ported += ported
        total_passing += passing
    terminalreporter.write_line(f"{'all':28} {total_passing:4} / {total_ported}")
    for pattern, reason in port.NOT_PORTED:
        terminalreporter.write_line(f"not ported: {pattern}: {reason}")
