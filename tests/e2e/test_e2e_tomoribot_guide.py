"""The TomoriBot integration guide (the pages of docs/tomoribot/) and its worked example: the example modules
type-check with `tsc --strict` against the repository's own `@memory-worker/client` package
(clients/typescript and the contract's declarations, resolved through the example's tsconfig
`paths`), the declared TomoriBot modules (docs/tomoribot/example/tomoribot.d.ts) and the real
discord.js 14 package pinned in the example's lock file; the same compiler refuses what the real
types forbid; the guide's links stay inside the repository and name every example module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE_PAGES = sorted((ROOT / "docs" / "tomoribot").glob("*.md"))
EXAMPLE = ROOT / "docs" / "tomoribot" / "example"
CLIENT = ROOT / "clients" / "typescript"
TSC = ROOT / "tests" / "interop" / "node_modules" / "typescript" / "bin" / "tsc"
DISCORD_JS = EXAMPLE / "node_modules" / "discord.js"


def tsc(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js (20 or later) is not installed: the guide's example is type-checked with tsc.")
    if not TSC.is_file():
        pytest.fail("tests/interop has no node_modules: run `make install` (or `npm ci` in tests/interop).")
    if not (CLIENT / "node_modules").is_dir():
        pytest.fail("clients/typescript has no node_modules: run `make install` (or `npm ci` in clients/typescript).")
    if not DISCORD_JS.is_dir():
        pytest.fail("docs/tomoribot/example has no node_modules: run `make install` (or `npm ci` there).")
    return subprocess.run([node, str(TSC), *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))


def _example_modules() -> list[Path]:
    return sorted(EXAMPLE.glob("*.ts"))


def test_the_example_type_checks_under_strict_against_the_client_and_discord_js():
    done = tsc("-p", str(EXAMPLE / "tsconfig.json"), "--strict", "--listFiles")
    assert done.returncode == 0, done.stdout + done.stderr
    files = {Path(line).resolve() for line in done.stdout.splitlines() if line.strip()}
    # The client is the package in this repository, not a copy or a stand-in declaration.
    assert (CLIENT / "dist" / "index.d.ts").resolve() in files
    assert (ROOT / "contracts" / "types" / "index.d.ts").resolve() in files
    # discord.js is the real package, at the version the example pins.
    assert {(DISCORD_JS / "typings" / "index.d.mts").resolve(), (DISCORD_JS / "typings" / "index.d.ts").resolve()} & files
    assert {p.name for p in files if p.parent == EXAMPLE.resolve()} == {p.name for p in _example_modules()}


def test_discord_js_is_pinned_to_one_version_by_the_lock_file():
    wanted = json.loads((EXAMPLE / "package.json").read_text())["dependencies"]["discord.js"]
    locked = json.loads((EXAMPLE / "package-lock.json").read_text())["packages"]["node_modules/discord.js"]["version"]
    installed = json.loads((DISCORD_JS / "package.json").read_text())["version"]
    assert re.fullmatch(r"14\.\d+\.\d+", wanted), f"discord.js must be pinned to one 14.x version, not {wanted!r}"
    assert wanted == locked == installed


# Each line is something the issue found a guide getting wrong; the real types must refuse it.
PROBE = {
    "context.client.user.id": "TS18047",                 # client.user is ClientUser | null
    "context.channel.guild.id": "TS2339",                # a DM channel has no guild
    "context.channel.isPrivateThread()": "TS2339",       # discord.js 14 has no isPrivateThread()
    "context.conversationUsers": "TS2339",               # the tool context carries no conversation users
    "context.retrieval": "TS2339",                       # ... and no retrieval
    "(context.tomoriState.persona_id satisfies number)": "TS1360",  # persona_id is number | undefined
}


def test_the_declared_bot_and_discord_js_refuse_what_the_real_bot_refuses(tmp_path):
    lines = ['import type { ToolContext } from "@/types/tool/interfaces";']
    lines += [f"export const probe{n} = (context: ToolContext) => {expression};" for n, expression in enumerate(PROBE)]
    (tmp_path / "probe.ts").write_text("\n".join(lines) + "\n")
    # The example's compiler settings and declarations, and its installed packages.
    (tmp_path / "node_modules").symlink_to(EXAMPLE / "node_modules", target_is_directory=True)
    (tmp_path / "tsconfig.json").write_text(json.dumps({
        "extends": str(EXAMPLE / "tsconfig.json"),
        "include": [str(EXAMPLE / "*.d.ts"), "probe.ts"],
    }))
    done = tsc("-p", str(tmp_path / "tsconfig.json"), cwd=tmp_path)
    errors = {int(line): code for line, code in re.findall(r"probe\.ts\((\d+),\d+\): error (TS\d+)", done.stdout)}
    assert errors == {n + 2: code for n, code in enumerate(PROBE.values())}, done.stdout


def _links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_the_guide_links_only_to_files_of_the_repository():
    assert GUIDE_PAGES, "docs/tomoribot/ has no guide pages"
    for page in GUIDE_PAGES:
        for target in _links(page.read_text()):
            if re.match(r"[a-z]+://", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            assert path.is_relative_to(ROOT), f"{page.name}: {target} points outside the repository"
            assert path.exists(), f"{page.name}: {target} does not exist"


def test_the_guide_names_every_example_module():
    linked = {(page.parent / t.split("#")[0]).resolve() for page in GUIDE_PAGES for t in _links(page.read_text())}
    missing = [p.name for p in _example_modules() if p.resolve() not in linked]
    assert missing == [], f"the guide (docs/tomoribot/) does not link these example modules: {missing}"
