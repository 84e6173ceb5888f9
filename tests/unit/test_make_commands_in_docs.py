"""Every `make ...` command the docs give is one make accepts: its targets exist and its
arguments are make's (`make -n` prints what it would run and runs nothing)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "deploy/README.md", "contracts/README.md", "tests/bench/README.md",
        "clients/typescript/README.md",
        *[str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").rglob("*.md")) if "node_modules" not in p.parts]]


def make_commands(docs: list[str] = DOCS) -> list[str]:
    found = set()
    for doc in docs:
        text = (ROOT / doc).read_text(encoding="utf-8")
        found |= set(re.findall(r"`(make [a-z][^`]*)`", text))
        for block in re.findall(r"```(?:sh|bash|console)?\n(.*?)```", text, flags=re.DOTALL):
            found |= {line.split("#", 1)[0].strip() for line in block.splitlines() if line.startswith("make ")}
    return sorted(found)


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
@pytest.mark.parametrize("command", make_commands())
def test_make_accepts_the_command(command):
    argv = shlex.split(command)
    done = subprocess.run([argv[0], "-n", *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{command}: {done.stderr}"


def test_the_site_names_every_target_of_the_makefile():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    [phony] = re.findall(r"^\.PHONY:(.*)$", makefile, flags=re.MULTILINE)
    named = {word for c in make_commands(DOCS) for word in c.split()[1:] if "=" not in word and not word.startswith("-")}
    assert sorted(set(phony.split()) - named) == []
