"""The `memoryctl` table of the operating guide (docs/how-to/operate.md) names every subcommand and every option the
CLI takes, so a user reading it learns all of them (`memoryctl <cmd> --help` has the rest)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from worker.cli.memoryctl import build_parser

ROOT = Path(__file__).resolve().parents[2]


def commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every (sub)command, by its full name ("dlq replay"), with its own parser."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                found[full] = sub
                found.update(commands(sub, full))
    return found


def operating_table() -> str:
    guide = (ROOT / "docs" / "how-to" / "operate.md").read_text(encoding="utf-8")
    section = guide.split("\n## Operating it {#operating}\n", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("| `memoryctl"))


def test_the_operating_table_names_every_subcommand_and_option():
    table = operating_table()
    missing = []
    for name, sub in commands(build_parser()).items():
        top = name.split()[0]
        if not re.search(rf"`memoryctl {re.escape(top)}\b", table):
            missing.append(f"memoryctl {top}")
        for action in sub._actions:
            missing += [f"memoryctl {name} {opt}" for opt in action.option_strings
                        if opt.startswith("--") and opt != "--help" and opt not in table]
    assert sorted(set(missing)) == []
