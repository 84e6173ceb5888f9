"""The test commands CONTRIBUTING.md gives select tests that exist (pytest collects them)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from tests.conftest import ROOT

COMMANDS = [line.split("#", 1)[0].strip() for line in (ROOT / "CONTRIBUTING.md").read_text().splitlines()
            if line.startswith(".venv/bin/python -m pytest")]


def test_contributing_gives_one_test_one_file_and_one_layer():
    assert len(COMMANDS) == 3 and any("::" in c for c in COMMANDS) and any(" -m unit" in c for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_pytest_command_collects_tests(command):
    argv = [sys.executable, *shlex.split(command)[1:], "--collect-only", "-p", "no:cacheprovider"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b[1-9]\d* tests? collected|^[1-9]\d*(/\d+)? tests? collected", done.stdout, re.M), done.stdout
