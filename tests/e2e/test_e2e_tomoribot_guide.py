"""The TomoriBot integration guide (docs/tomoribot.md) and its worked example: the example
modules type-check with `tsc --strict` against the repository's own `@memory-worker/client`
package (clients/typescript, resolved through the example's tsconfig `paths`) and a declared
shape of the bot (docs/tomoribot/example/bot-context.d.ts); the guide's links stay inside the
repository and name every example module.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "tomoribot.md"
EXAMPLE = ROOT / "docs" / "tomoribot" / "example"
CLIENT = ROOT / "clients" / "typescript"
TSC = ROOT / "tests" / "interop" / "node_modules" / "typescript" / "bin" / "tsc"


def tsc(*args: str) -> subprocess.CompletedProcess:
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js (20 or later) is not installed: the guide's example is type-checked with tsc.")
    if not TSC.is_file():
        pytest.fail("tests/interop has no node_modules: run `make test` (or `npm ci` in tests/interop).")
    if not (CLIENT / "package.json").is_file():
        pytest.fail("clients/typescript (the @memory-worker/client package the example imports) is missing.")
    if not (CLIENT / "node_modules").is_dir():
        pytest.fail("clients/typescript has no node_modules: run `make test` (or `npm ci` in clients/typescript).")
    return subprocess.run([node, str(TSC), *args], cwd=ROOT, capture_output=True, text=True, timeout=180,
                          env=dict(os.environ))


def test_the_example_type_checks_under_strict_against_the_client_package():
    done = tsc("-p", str(EXAMPLE / "tsconfig.json"), "--strict", "--listFiles")
    assert done.returncode == 0, done.stdout + done.stderr
    files = {Path(line).resolve() for line in done.stdout.splitlines() if line.strip()}
    # The client is the package in this repository, not a copy or a stand-in declaration.
    assert (CLIENT / "dist" / "index.d.ts").resolve() in files
    assert (ROOT / "contracts" / "types" / "index.d.ts").resolve() in files
    assert {p.name for p in files if p.parent == EXAMPLE.resolve()} == {p.name for p in _example_modules()}


def _example_modules() -> list[Path]:
    return sorted(EXAMPLE.glob("*.ts"))


def _links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_the_guide_links_only_to_files_of_the_repository():
    text = GUIDE.read_text()
    for target in _links(text):
        if re.match(r"[a-z]+://", target) or target.startswith("#"):
            continue
        path = (GUIDE.parent / target.split("#")[0]).resolve()
        assert path.is_relative_to(ROOT), f"{target} points outside the repository"
        assert path.exists(), f"{target} does not exist"


def test_the_guide_names_every_example_module():
    linked = {(GUIDE.parent / t).resolve() for t in _links(GUIDE.read_text())}
    missing = [p.name for p in _example_modules() if p.resolve() not in linked]
    assert missing == [], f"docs/tomoribot.md does not link these example modules: {missing}"
