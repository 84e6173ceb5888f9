"""The README's install commands, run from a clone (issue 24, finding 5): the Python package by
path and by a git URL, the npm contracts package by path and as a packed tarball, and the
TypeScript client as a packed tarball that survives the bot's later `npm install` and `npm ci`.

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


@pytest.fixture(scope="module")
def path_wheel(clone, tmp_path_factory) -> Path:
    """The wheel `pip install /path/to/memory-worker` builds, built once for the module's tests."""
    return _wheel(str(clone), tmp_path_factory.mktemp("clone-wheel") / "wheels")


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


def test_pip_install_from_the_clone_gives_the_client_the_cli_and_the_sql(path_wheel, tmp_path):
    python = _fresh_venv(tmp_path / "venv")
    _run([*PIP, "--python", python, "install", "--no-deps", "--no-index", path_wheel], cwd=tmp_path)

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


def test_pip_install_from_a_git_url_builds_the_same_package(clone, path_wheel, tmp_path):
    by_url = _wheel(f"memory-worker @ git+file://{clone}", tmp_path / "from-url")
    with zipfile.ZipFile(by_url) as a, zipfile.ZipFile(path_wheel) as b:
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


def _npm(*args, cwd: Path) -> subprocess.CompletedProcess:
    return _run(["npm", *args, "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], cwd=cwd)


def _assert_the_client_is_installed(bot: Path) -> None:
    """Copies, not links: the package, the contract declarations bundled in it and nats.js."""
    modules = bot / "node_modules"
    for package in [modules / "@memory-worker" / "client",
                    modules / "@memory-worker" / "client" / "node_modules" / "@memory-worker" / "contracts",
                    modules / "@nats-io" / "nats-core", modules / "@nats-io" / "jetstream"]:
        assert package.is_dir() and not package.is_symlink(), f"{package.relative_to(bot)} is missing or a link"
    assert (modules / "@memory-worker" / "client" / "node_modules" / "@memory-worker" / "contracts"
            / "types" / "index.d.ts").is_file()
    imported = _run(["node", "--input-type=module", "-e", "import { MemoryClient, CacheNode } from"
                     " '@memory-worker/client'; console.log(typeof MemoryClient, typeof CacheNode)"], cwd=bot)
    assert imported.stdout.split() == ["function", "function"]


def test_the_typescript_client_packed_from_the_clone_survives_a_later_npm_install(clone, tmp_path):
    """README: `npm ci` in clients/typescript, `npm pack` it into the bot's vendor folder, `npm
    install` the tarball; a later plain `npm install`, and `npm ci` from the bot's lock file, keep
    the package and its dependencies installed as copies. Packages come from npm's cache, which
    make install fills."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm and node are not installed")
    package = clone / "clients" / "typescript"
    bot = tmp_path / "bot"
    (bot / "vendor").mkdir(parents=True)
    (bot / "package.json").write_text('{"name": "bot", "version": "1.0.0", "private": true, "type": "module"}')

    # A fresh clone has nothing to bundle yet: packing it says so instead of making a broken tarball.
    refused = subprocess.run(["npm", "pack", "--pack-destination", bot / "vendor", package], cwd=bot,
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "run npm ci" in refused.stderr, refused
    assert list((bot / "vendor").iterdir()) == []

    _npm("ci", "--ignore-scripts", cwd=package)
    packed = _run(["npm", "pack", "--silent", "--pack-destination", bot / "vendor", package], cwd=bot)
    tarball = packed.stdout.strip().splitlines()[-1]
    _npm("install", f"./vendor/{tarball}", cwd=bot)
    _assert_the_client_is_installed(bot)
    assert json.loads((bot / "package.json").read_text())["dependencies"]["@memory-worker/client"] == \
        f"file:vendor/{tarball}"

    _npm("install", cwd=bot)
    _assert_the_client_is_installed(bot)

    shutil.rmtree(bot / "node_modules")
    _npm("ci", cwd=bot)
    _assert_the_client_is_installed(bot)
