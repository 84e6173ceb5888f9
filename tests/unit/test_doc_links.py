"""Every relative link of the repository's Markdown pages resolves to a file or folder in the
repository (a moved or renamed file breaks this test, not a reader's click)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown_pages() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    return [ROOT / name for name in names if "node_modules" not in name]


def test_every_relative_link_resolves_inside_the_repository():
    broken = []
    for page in markdown_pages():
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor of the same page
            path = (page.parent / target.split("#", 1)[0]).resolve()
            if not path.exists() or ROOT not in path.parents and path != ROOT:
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []
