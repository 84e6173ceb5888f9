"""One live home per SQL function (db/functions/__init__.py): each file of db/functions/
defines the one function it is named after, and no other file of the tree writes a worker
function's body: not a migration, not a benchmark, not a test. (A body is dollar-quoted; the
hardening test's one-line attempt to replace a function as the worker's role is not one.)"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from db import functions, migrate

ROOT = Path(__file__).resolve().parents[2]
_DEFINES = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:memory_worker\.)?(\w+)\s*\(", re.I)
_BODY = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:memory_worker\.)?(\w+)\s*\([^$]*?\bAS\s+\$\w*\$",
                   re.I | re.S)
_ALTERS = re.compile(r"ALTER\s+FUNCTION\s+(?:memory_worker\.)?(\w+)\s*\(", re.I)


def test_each_file_defines_the_function_it_is_named_after_and_only_alters_that_one() -> None:
    for name, text in functions.files().items():
        assert _DEFINES.findall(text) == [name], f"db/functions/{name}.sql"
        assert set(_ALTERS.findall(text)) <= {name}, f"db/functions/{name}.sql"


def test_no_migration_defines_a_function() -> None:
    for migration in migrate.available():
        assert not _DEFINES.findall(migration.sql), migration.name


def test_a_body_is_found_where_one_is_written() -> None:
    assert _BODY.findall(functions.source("memory_create_batch")) == ["memory_create_batch"]


def test_no_worker_function_body_is_written_anywhere_else_in_the_tree() -> None:
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, check=True).stdout.decode().split("\0")
    homes = {f"db/functions/{name}.sql" for name in functions.files()}
    elsewhere = []
    for path in tracked:
        if path in homes or not path.endswith((".sql", ".py")) or not (ROOT / path).is_file():
            continue
        for name in _BODY.findall((ROOT / path).read_text("utf-8", errors="replace")):
            if name in functions.files():
                elsewhere.append(f"{path}: {name}")
    assert not elsewhere, elsewhere
