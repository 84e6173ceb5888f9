"""The README's install commands, run from a clone (issue 24, finding 5): the Python package by
path and by a git URL, the npm contracts package by path and as a packed tarball, and the
TypeScript client by path.

Quick: the wheel is built as pip builds any source (its build backend, setuptools, from pip's
cache or index) and installed --no-deps into a fresh venv, which borrows the suite's
third-party packages through a .pth line; what is imported must come from the fresh venv.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]


def _run(argv: list, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300, **kw)
    assert done.returncode == 0, done
    return done


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone")
    target = tmp_path_factory.mktemp("clone") / "memory-worker"
    # A full clone (local: hard links, under a second): pip's own clone of a git URL loops on
    # a shallow repository (git's partial clone meets the missing history).
    _run(["git", "clone", "-q", ROOT, target])
    return target


def _fresh_venv(where: Path) -> Path:
    _run([sys.executable, "-m", "venv", "--without-pip", where])
    python = where / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    # The dependencies (nats-py, msgspec, asyncpg ...) from the suite's venv, after the fresh
    # venv's own packages: the memory worker's modules must come from the wheel.
    (site / "suite-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _wheel(spec: str, where: Path) -> Path:
    _run([*PIP, "wheel", "--no-deps", "-w", where, spec], cwd=where.parent)
    [wheel] = where.glob("memory_worker-*.whl")
    return wheel


def test_pip_install_from_the_clone_gives_the_client_the_cli_and_the_sql(clone, tmp_path):
    wheel = _wheel(str(clone), tmp_path / "wheels")  # pip install /path/to/memory-worker
    python = _fresh_venv(tmp_path / "venv")
    _run([*PIP, "--python", python, "install", "--no-deps", "--no-index", wheel], cwd=tmp_path)

    probe = ("import json, worker.client, contracts, db.migrate; from importlib import resources;"
             "print(json.dumps({'client': worker.client.__file__, 'MemoryClient': hasattr(worker.client, 'MemoryClient'),"
             " 'migrations': [m.name for m in db.migrate.available()],"
             " 'standalone': 'CREATE TABLE' in resources.files('db').joinpath('standalone.sql').read_text(),"
             " 'schemas': len(list(resources.files('contracts').joinpath('schema').iterdir()))}))")
    found = json.loads(_run([python, "-c", probe], cwd=tmp_path).stdout)
    assert found["client"].startswith(str(tmp_path / "venv")), found
    assert found["MemoryClient"] and found["standalone"] and found["schemas"] > 10, found
    assert found["migrations"][:2] == ["001_baseline.sql", "002_save_outcome.sql"], found
    assert _run([tmp_path / "venv" / "bin" / "memoryctl", "--help"], cwd=tmp_path).stdout.startswith("usage: memoryctl")


def test_pip_install_from_a_git_url_builds_the_same_package(clone, tmp_path):
    by_url = _wheel(f"memory-worker @ git+file://{clone}", tmp_path / "from-url")
    by_path = _wheel(str(clone), tmp_path / "from-path")
    with zipfile.ZipFile(by_url) as a, zipfile.ZipFile(by_path) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())
        assert "db/standalone.sql" in a.namelist() and "worker/client/memory_client.py" in a.namelist()


@pytest.mark.parametrize("source", ["path", "packed"])
def test_npm_install_of_the_contracts_package_from_the_clone(clone, tmp_path, source):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    spec = clone / "contracts"
    if source == "packed":
        packed = _run(["npm", "pack", "--silent", "--pack-destination", tmp_path, clone / "contracts"], cwd=tmp_path)
        spec = tmp_path / packed.stdout.strip().splitlines()[-1]
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "package.json").write_text('{"name": "bot", "version": "1.0.0", "private": true}')
    _run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", spec], cwd=bot)
    resolved = _run(["node", "-e", "for (const p of ['@memory-worker/contracts/schema/result.schema.json',"
                     " '@memory-worker/contracts/asyncapi.json']) console.log(require.resolve(p))"], cwd=bot)
    assert len(resolved.stdout.split()) == 2
    assert (bot / "node_modules" / "@memory-worker" / "contracts" / "types" / "index.d.ts").exists()


def test_npm_install_of_the_typescript_client_from_the_clone(clone, tmp_path):
    """README: `npm install --install-links /path/to/memory-worker/clients/typescript`; the
    bot then imports MemoryClient and CacheNode (from the committed dist/, with the contracts
    package beside it). Its nats.js packages come from npm's cache, which make install fills."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm and node are not installed")
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "package.json").write_text('{"name": "bot", "version": "1.0.0", "private": true, "type": "module"}')
    _run(["npm", "install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", "--install-links",
          clone / "clients" / "typescript"], cwd=bot)
    imported = _run(["node", "--input-type=module", "-e", "import { MemoryClient, CacheNode } from"
                     " '@memory-worker/client'; console.log(typeof MemoryClient, typeof CacheNode)"], cwd=bot)
    assert imported.stdout.split() == ["function", "function"]
    assert (bot / "node_modules" / "@memory-worker" / "contracts" / "asyncapi.json").exists()
