"""The configuration reference (docs/reference/configuration.md, generated from
worker/shared/setting_docs.py) and worker/shared/settings.py name the same variables: each one
the worker reads is in the table, and the table lists nothing it does not read."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from worker.shared.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


class RecordingEnv(Mapping[str, str]):
    """An empty environment that remembers every variable asked for."""

    def __init__(self) -> None:
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        self.asked.add(str(key))
        return False

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def table_variables() -> set[str]:
    page = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    # Only the first column names variables; the meaning column may mention others.
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split(" | ", 1)[0])}


def test_every_variable_the_settings_read_is_in_the_reference_and_back():
    env = RecordingEnv()
    Settings.from_env(env)
    table = table_variables()
    assert sorted(env.asked - table) == [], "read by worker/shared/settings.py, missing from the configuration reference"
    assert sorted(table - env.asked) == [], "in the configuration reference, never read by the settings"
