"""The fault tables of the site's faults page (docs/explanation/faults.md) and its deployment
guide (docs/how-to/deployment-faults.md) are what `python -m tests.faults.table` prints for the reference run, so the
two pages cannot drift from the run or from each other; every schedule has its row."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.faults.schedules import SCHEDULES

ROOT = Path(__file__).resolve().parents[2]
HEADER = "| fault | what was injected |"


def table_in(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADER))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return table


def test_both_pages_show_the_reference_run_as_the_table_command_prints_it():
    done = subprocess.run([sys.executable, "-m", "tests.faults.table", "tests/faults/results/reference.jsonl"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    printed = table_in(done.stdout)
    assert table_in((ROOT / "docs" / "explanation" / "faults.md").read_text(encoding="utf-8")) == printed
    assert table_in((ROOT / "docs" / "how-to" / "deployment-faults.md").read_text(encoding="utf-8")) == printed
    rows = {line.split(" | ", 1)[0].removeprefix("| ") for line in printed[2:]}
    assert rows == set(SCHEDULES)
