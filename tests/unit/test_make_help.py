"""`make help` lists every target the Makefile documents with `##`, each with its comment."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def documented() -> dict[str, str]:
    """target -> its `##` comment, read from the Makefile the way a reader does."""
    found, doc = {}, []
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line.startswith("## "):
            doc.append(line[3:])
            continue
        if doc and (target := re.match(r"^([a-z][a-z-]*):", line)):
            found[target[1]] = " ".join(doc)
        doc = []
    return found


def test_make_help_lists_each_documented_target_with_its_comment():
    done = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done
    rows = [re.match(r"^  make (\S+)\s+(.*)$", line) for line in done.stdout.splitlines()]
    assert all(rows), done.stdout
    listed = {row.group(1): row.group(2) for row in rows if row}
    assert listed == documented()
    for target in ("help", "install", "run", "test", "lint", "typecheck", "demo", "clean"):
        assert target in listed, target
