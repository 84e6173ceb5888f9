"""The pre-commit configuration parses, runs only local hooks (no network at commit time) and
each hook runs a command the venv has: ruff check, ruff format --check and mypy."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT

VENV_BIN = Path(sys.executable).parent


def hooks() -> dict[str, dict]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    return {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}


def test_the_hooks_are_ruff_check_ruff_format_check_and_mypy_from_the_venv():
    found = {hook_id: shlex.split(hook["entry"]) for hook_id, hook in hooks().items()}
    assert found == {"ruff-check": [".venv/bin/ruff", "check"], "ruff-format": [".venv/bin/ruff", "format", "--check"],
                     "mypy": [".venv/bin/mypy"]}
    for hook in hooks().values():
        assert hook["language"] == "system"  # nothing pre-commit would download
        assert (VENV_BIN / Path(shlex.split(hook["entry"])[0]).name).exists(), hook


def test_mypy_checks_what_make_typecheck_checks():
    assert hooks()["mypy"]["pass_filenames"] is False
    assert "$(VENV)/bin/mypy\n" in (ROOT / "Makefile").read_text()
