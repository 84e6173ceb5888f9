"""The tree keeps the shape README.md's layout table describes: each module in worker/ small
enough to read in one sitting (the developers' guide: about 300 lines at most)."""

from __future__ import annotations

from pathlib import Path

WORKER = Path(__file__).resolve().parents[2] / "worker"
MAX_LINES = 300


def test_no_module_in_worker_is_over_300_lines():
    long = {str(p.relative_to(WORKER)): n for p in WORKER.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these (a new module rather than a longer one): {long}"


def test_every_worker_subpackage_says_which_process_it_belongs_to():
    for package in (p for p in WORKER.iterdir() if (p / "__init__.py").exists()):
        doc = (package / "__init__.py").read_text(encoding="utf-8")
        assert doc.startswith('"""'), f"worker/{package.name}/__init__.py has no docstring"
