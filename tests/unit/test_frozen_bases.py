"""Each mode's base layout (db/migrate.py, LAYOUTS) stays as the first release made it: a
schema change is a new migration, never an edit of a base. Comments may change; statements
may not. (That fresh and upgraded databases then agree is tests/integration/test_schema_upgrades.py.)"""

from __future__ import annotations

import hashlib

import pytest

from db import migrate

# sha256 of each base's statements, comment lines and blank lines left out.
FROZEN = {
    "standalone": "a6d98ace3e78083669d141c8b6e2be1540dc31afe7f02c41fb7aaee6ae72f70b",
    "adopted": "e75faddeb78ecaa4d5c607d25168955e1b35a5239bf38100c595f9407dab163f",
}


def statements_digest(sql: str) -> str:
    lines = [line.rstrip() for line in sql.splitlines() if line.strip() and not line.lstrip().startswith("--")]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@pytest.mark.parametrize("mode", sorted(migrate.LAYOUTS))
def test_a_base_layout_is_frozen(mode: str) -> None:
    assert statements_digest(migrate.layout(mode)) == FROZEN[mode], (
        f"db/{migrate.LAYOUTS[mode]} changed: it is the first release's {mode} layout; put the change in a new"
        " migration (db/migrations/) instead")


def test_the_digest_ignores_comments_only() -> None:
    sql = "-- the servers\nCREATE TABLE t (a int);\n"
    assert statements_digest(sql) == statements_digest("-- said otherwise\n\nCREATE TABLE t (a int);")
    assert statements_digest(sql) != statements_digest("CREATE TABLE t (a int, b int);")
