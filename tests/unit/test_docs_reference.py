"""The site's reference pages are what docs/reference/generate.py writes from the code: a changed
setting, memoryctl option, command kind, status, metric or make target without
`make docs-reference` fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "reference" / "generate.py")
assert _spec is not None and _spec.loader is not None
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


def test_every_committed_reference_page_is_what_the_code_generates():
    stale = [name for name, render in generate.PAGES.items()
             if (generate.OUT / name).read_text(encoding="utf-8") != render()]
    assert stale == [], f"stale reference pages, run `make docs-reference`: {stale}"


def test_a_page_edited_by_hand_is_reported_stale(tmp_path, monkeypatch):
    for name, render in generate.PAGES.items():
        (tmp_path / name).write_text(render(), encoding="utf-8")
    (tmp_path / "metrics.md").write_text("edited by hand\n", encoding="utf-8")
    monkeypatch.setattr(generate, "OUT", tmp_path)
    assert generate.main(["--check"]) == 1
    assert generate.main([]) == 0 and generate.main(["--check"]) == 0


def test_the_reference_names_every_metric_and_memoryctl_command():
    from worker.consuming.metrics import REGISTRY

    metrics = (generate.OUT / "metrics.md").read_text(encoding="utf-8")
    assert all(f"`{family.name}" in metrics for family in REGISTRY.collect())
    memoryctl = (generate.OUT / "memoryctl.md").read_text(encoding="utf-8")
    assert "## `memoryctl dlq replay`" in memoryctl and "`--include-invalid`" in memoryctl
