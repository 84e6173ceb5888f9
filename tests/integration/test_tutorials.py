"""Each tutorial runs as written: the commands marked `<!-- run -->` in docs/tutorials/, in order,
against one `make run` started as a reader starts it (its own data directory, free ports), from
a fresh folder that has only the clone's venv and the TypeScript client beside it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.logs import log_events

VENV = Path(sys.executable).parent.parent
TUTORIALS = ["run-locally.md", "first-python-bot.md", "first-typescript-bot.md", "rehearse.md"]
RUN_BLOCK = re.compile(r"<!-- run -->\n```sh\n(.*?)```", re.DOTALL)
CLIENT = ROOT / "clients" / "typescript"


def marked_commands(page: str) -> list[str]:
    return RUN_BLOCK.findall((ROOT / "docs" / "tutorials" / page).read_text(encoding="utf-8"))


def test_every_tutorial_marks_commands_to_run():
    assert all(marked_commands(page) for page in TUTORIALS)


@pytest.fixture(scope="module")
def make_run(tmp_root):
    data = tmp_root / "tutorial-data"
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DATABASE_URL")}
    env.update(MEMORY_DATA_DIR=str(data), METRICS_PORT="0", LOG_FORMAT="json")
    proc = subprocess.Popen(["make", "-s", f"VENV={VENV}", "-o", f"{VENV}/.installed", "run"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: list[str] = []
    output = proc.stdout
    assert output is not None
    threading.Thread(target=lambda: lines.extend(output), daemon=True).start()
    deadline = time.monotonic() + 120
    while not log_events("".join(lines), "worker_ready"):
        assert proc.poll() is None, "".join(lines)
        assert time.monotonic() < deadline, "make run not ready:\n" + "".join(lines)
        time.sleep(0.1)
    yield env
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)


@pytest.fixture
def reader_folder(tmp_path) -> Path:
    (tmp_path / ".venv").symlink_to(VENV)
    modules = tmp_path / "node_modules"
    (modules / "@memory-worker").mkdir(parents=True)
    (modules / "@memory-worker" / "client").symlink_to(CLIENT)
    (modules / "@nats-io").symlink_to(CLIENT / "node_modules" / "@nats-io")
    return tmp_path


@pytest.mark.timeout(180)
@pytest.mark.parametrize("page", TUTORIALS)
def test_the_tutorial_runs_as_written(make_run, reader_folder, page):
    if page.endswith("typescript-bot.md") and (shutil.which("node") is None or not (CLIENT / "node_modules").is_dir()):
        pytest.fail("Node.js and clients/typescript's node_modules are needed: run `make install`")
    script = "set -euo pipefail\n" + "\n".join(marked_commands(page))
    done = subprocess.run(["bash", "-c", script], cwd=reader_folder, env=make_run, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"{page}:\n{done.stdout}\n{done.stderr}"
    if "bot" in page:
        assert "memory_saved_successfully" in done.stdout, done.stdout
    if page == "rehearse.md":
        assert "invalid_command" in done.stdout and "create" in done.stdout, done.stdout
