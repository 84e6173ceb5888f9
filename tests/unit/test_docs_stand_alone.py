"""The repository stands alone (issue 24, finding 5): nothing a user, an operator or a bot
author reads points outside it, and every "docs/design.md, section N" names a section the
page has."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Built from pieces, so this file does not match itself.
OUTSIDE = re.compile("|".join([r"\.\./" + "shared", "/work/" + "shared", r"\b" + "DESI" + r"GN\b"]))
SECTION_REF = re.compile(r"docs/design\.md,\s+sections?\s+((?:\d+(?:\.\d+)?)(?:(?:,\s*|\s+and\s+)\d+(?:\.\d+)?)*)")
TEXT = (".py", ".md", ".sql", ".json", ".ts", ".mjs", ".yaml", ".yml", ".conf", ".toml", ".txt", "Makefile")


def tracked_text_files() -> list[Path]:
    try:
        names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
        paths = [ROOT / name for name in names]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: everything but the venv
        paths = [p for p in ROOT.rglob("*") if ".venv" not in p.parts and "node_modules" not in p.parts]
    return [p for p in paths if p.is_file() and p.name.endswith(TEXT)]


def test_no_file_points_outside_the_repository():
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in tracked_text_files()
             for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if OUTSIDE.search(line)]
    assert found == [], "\n".join(found)


def test_every_section_cited_exists_in_the_design_page():
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", design, flags=re.MULTILINE))
    assert {"2", "3.1", "3.5", "4", "5", "7", "7.1", "8.3", "9"} <= sections, sections
    missing = []
    for path in tracked_text_files():
        # A citation may wrap: read the text with its line breaks as spaces.
        text = " ".join(path.read_text(encoding="utf-8", errors="replace").split())
        for cited in SECTION_REF.findall(text):
            missing += [f"{path.relative_to(ROOT)}: {n}" for n in re.findall(r"\d+(?:\.\d+)?", cited)
                        if n not in sections]
    assert missing == [], missing
