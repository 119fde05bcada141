"""`parity --help` and each command group's --help describe every subcommand in one line."""

import re

import pytest


def subcommands(help_text):
    """{name: description} of the help's "Subcommands:" section (a name alone has an empty description)."""
    section = help_text.split("Subcommands:\n", 1)[1]
    found = {}
    for line in section.splitlines():
        match = re.match(r"^  (\S+)(?:\s+(.*))?$", line)
        if not match:
            break
        found[match.group(1)] = (match.group(2) or "").strip()
    return found


def test_every_command_and_group_has_a_description(run_parity):
    result = run_parity("--help")
    assert result.returncode == 0, result.describe()
    found = subcommands(result.stdout)
    assert {"check", "convert", "data", "debug", "inspect", "run", "surgeon", "template"} <= set(found), found
    assert all(found.values()), {name: text for name, text in found.items() if not text}


@pytest.mark.parametrize("group", ["check", "data", "debug", "inspect", "surgeon", "template"])
def test_group_help_describes_the_group_and_its_commands(run_parity, group):
    top = subcommands(run_parity("--help").stdout)
    result = run_parity(group, "--help")
    assert result.returncode == 0, result.describe()
    assert result.stdout.startswith(top[group] + "\n"), result.stdout  # CLI11 prints the description first
    found = subcommands(result.stdout)
    assert found and all(found.values()), found
