"""`make run`'s embedded servers live and die with it (issue 24, findings 1 and 2).

Each test runs `make run` as a user would, on one data directory the module shares (one
initdb), and ends it as a user's session might: SIGHUP to its process group (a closed
terminal), SIGTERM, SIGKILL of `memoryctl run` itself. The servers must go with it, and the
next run, each test's, must start cleanly. Servers an older run left behind are stopped and
named; a data directory a live run uses is refused without a traceback; and the other
subcommands (migrate, adopt --dry-run) use the running servers instead of starting their own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.logs import log_events
from worker.local.embedded import NatsServer, PostgresServer
from worker.local.processes import process_alive

VENV = Path(sys.executable).parent.parent
MEMORYCTL = str(Path(sys.executable).parent / "memoryctl")
READY_S = 120.0
GONE_S = 60.0

pytestmark = pytest.mark.skipif(not Path(MEMORYCTL).exists(), reason="memoryctl is not installed in this venv")


@pytest.fixture(scope="module")
def data_dir(tmp_root) -> Path:
    return tmp_root / "make-run-data"


def _env(data: Path) -> dict[str, str]:
    env = _anywhere(data)
    env.update(MEMORY_DATA_DIR=str(data))
    return env


def _anywhere(data: Path) -> dict[str, str]:
    """A user's environment with no server named: the runs of `make run` recorded in a user state
    directory of the test's own (next to the data directory), not the real user's."""
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DATABASE_URL", "MEMORY_DATA_DIR")}
    env.update(METRICS_PORT="0", LOG_FORMAT="json", XDG_STATE_HOME=str(data.parent / f"{data.name}-state"))
    return env


class MakeRun:
    """`make run` in its own process group, its output read as it comes."""

    def __init__(self, data: Path) -> None:
        # -o: the venv is installed already; never reinstall from inside a test.
        self.proc = subprocess.Popen(["make", "-s", f"VENV={VENV}", "-o", f"{VENV}/.installed", "run"],
                                     cwd=ROOT, env=_env(data), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def events(self, name: str) -> list[dict]:
        return log_events("".join(self.lines), name)

    def wait_ready(self) -> dict[str, int]:
        """The pids of memoryctl, its nats-server and its postmaster, once the worker serves."""
        deadline = time.monotonic() + READY_S
        while not self.events("worker_ready"):
            assert self.proc.poll() is None, f"make run exited with {self.proc.returncode}:\n{self.output}"
            assert time.monotonic() < deadline, f"make run not ready within {READY_S}s:\n{self.output}"
            time.sleep(0.1)
        return {"nats": self.events("embedded_nats_started")[0]["pid"],
                "postgres": self.events("embedded_postgres_started")[0]["pid"]}

    def wait_exit(self) -> int:
        code = self.proc.wait(timeout=GONE_S)
        self._reader.join(timeout=10)
        return code

    def close(self) -> None:
        """However the test ended: nothing of this run is left running (by pid, only its own)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        for event, name in (("embedded_nats_started", "nats-server"), ("embedded_postgres_started", "postgres")):
            for started in self.events(event):
                if process_alive(started["pid"], name):
                    os.kill(started["pid"], signal.SIGKILL)


def _memoryctl_pid(data: Path) -> int:
    return json.loads((data / "endpoints.json").read_text())["pid"]


def _wait_gone(pids: dict[str, int]) -> None:
    deadline = time.monotonic() + GONE_S
    while alive := {name: pid for name, pid in pids.items() if process_alive(pid, name.replace("nats", "nats-server"))}:
        assert time.monotonic() < deadline, f"still running {GONE_S}s after memoryctl ended: {alive}"
        time.sleep(0.1)


def _end_by_hangup(run: MakeRun, data: Path) -> None:
    os.killpg(run.proc.pid, signal.SIGHUP)  # what a closed terminal sends the foreground group


def _end_by_sigterm(run: MakeRun, data: Path) -> None:
    os.kill(_memoryctl_pid(data), signal.SIGTERM)


def _end_by_sigterm_to_the_group(run: MakeRun, data: Path) -> None:
    # What `kill -TERM -PGID` or a process manager sends: memoryctl gets it, and make passes its
    # own on too. One request, so a clean stop, not a forced one.
    os.killpg(run.proc.pid, signal.SIGTERM)


def _end_by_sigkill(run: MakeRun, data: Path) -> None:
    os.kill(_memoryctl_pid(data), signal.SIGKILL)  # no handler runs: the kernel tells the servers


@pytest.mark.parametrize("end, in_order", [(_end_by_hangup, True), (_end_by_sigterm, True),
                                           (_end_by_sigterm_to_the_group, True), (_end_by_sigkill, False)],
                         ids=["sighup-to-the-group", "sigterm", "sigterm-to-the-group", "sigkill-of-memoryctl"])
def test_the_servers_stop_with_make_run_however_it_ends_and_the_next_run_starts(data_dir, end, in_order):
    run = MakeRun(data_dir)
    try:
        servers = run.wait_ready()
        end(run, data_dir)
        run.wait_exit()
        _wait_gone(servers)
        assert "Traceback" not in run.output, run.output
        # SIGHUP and SIGTERM: memoryctl itself stops the worker, then the servers, in order;
        # after a SIGKILL the kernel's parent-death signal stops them.
        stopped = {event["server"] for event in run.events("embedded_server_stopped")}
        assert stopped == ({"NatsServer", "PostgresServer"} if in_order else set()), run.output
        if in_order:
            assert run.events("worker_stopped") and not run.events("stop_forced"), run.output
    finally:
        run.close()


def test_servers_left_by_an_earlier_run_are_stopped_and_named(data_dir):
    # As an older release (or a run killed before this fix) left them: not tied to any parent.
    nats = NatsServer(data_dir / "nats").start()
    pg = PostgresServer(data_dir / "pg").start()
    run = MakeRun(data_dir)
    try:
        run.wait_ready()
        assert f"stopping nats-server (pid {nats.pid}) left running on {data_dir / 'nats'}" in run.output
        assert f"stopping postgres (pid {pg.pid}) left running on {data_dir / 'pg'}" in run.output
        assert not nats.running and not pg.running
        os.killpg(run.proc.pid, signal.SIGINT)  # Ctrl-C
        run.wait_exit()
        assert "Traceback" not in run.output, run.output
    finally:
        run.close()
        nats.kill()
        pg.kill()


def test_with_make_run_going_the_other_commands_use_its_servers_and_a_second_run_is_refused(data_dir):
    run = MakeRun(data_dir)
    try:
        servers = run.wait_ready()
        for argv, expected in ((["migrate"], "applied: nothing (up to date)"),
                               (["adopt", "--dry-run"], "already set up: this database runs in standalone mode")):
            done = subprocess.run([MEMORYCTL, *argv], env=_env(data_dir), capture_output=True, text=True,
                                  timeout=120)
            assert (done.returncode, expected in done.stdout) == (0, True), done
        # From another directory, naming nothing: the same run, found through the user's record.
        elsewhere = data_dir.parent / "elsewhere"
        elsewhere.mkdir(exist_ok=True)
        done = subprocess.run([MEMORYCTL, "migrate"], env=_anywhere(data_dir), cwd=elsewhere, capture_output=True,
                              text=True, timeout=120)
        assert (done.returncode, "applied: nothing (up to date)" in done.stdout) == (0, True), done
        assert not (elsewhere / ".data").exists()
        # Still the run's postmaster on that data directory: nobody started a second one.
        postmaster = int((data_dir / "pg" / "data" / "postmaster.pid").read_text().split()[0])
        assert postmaster == servers["postgres"]

        second = subprocess.run(["make", "-s", f"VENV={VENV}", "-o", f"{VENV}/.installed", "run"], cwd=ROOT,
                                env=_env(data_dir), capture_output=True, text=True, timeout=120)
        assert second.returncode != 0
        assert f"memoryctl run: refusing to start: memoryctl (pid {_memoryctl_pid(data_dir)}) is already running" \
               f" the servers of {data_dir}" in second.stderr, second
        assert "Traceback" not in second.stdout + second.stderr
        assert process_alive(servers["postgres"], "postgres") and process_alive(servers["nats"], "nats-server")
        os.killpg(run.proc.pid, signal.SIGINT)  # Ctrl-C
        run.wait_exit()
        assert "Traceback" not in run.output, run.output
        _wait_gone(servers)
    finally:
        run.close()


def test_a_server_that_cannot_start_is_said_without_a_traceback_and_nothing_is_left_running(tmp_path):
    # A data directory PostgreSQL refuses: a version file, and nothing else of a cluster.
    (tmp_path / "pg" / "data").mkdir(parents=True)
    (tmp_path / "pg" / "data" / "PG_VERSION").write_text("18\n")
    done = subprocess.run([MEMORYCTL, "run"], env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done
    assert "memoryctl run: refusing to start: the embedded PostgresServer on" in done.stderr, done
    assert "did not start: postgres exited with code" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    said = (done.stdout + done.stderr).splitlines()
    nats_pid = json.loads([line for line in said if "embedded_nats_started" in line][0])["pid"]
    _wait_gone({"nats": nats_pid})


@pytest.mark.parametrize("argv, needed", [(["user", "show", "1"], "set DATABASE_URL"),
                                          (["dlq", "list"], "set NATS_URL"),
                                          (["demo"], "set NATS_URL and DATABASE_URL")], ids=" ".join)
def test_without_make_run_a_command_names_only_the_servers_it_needs(tmp_path, argv, needed):
    done = subprocess.run([MEMORYCTL, *argv], cwd=ROOT, env=_env(tmp_path / "no-run"), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1, done
    assert done.stderr.strip().endswith(needed) and "no running worker found" in done.stderr, done.stderr


def test_migrate_with_no_database_and_no_run_creates_nothing_and_names_what_to_set(tmp_path):
    done = subprocess.run([MEMORYCTL, "migrate"], env=_anywhere(tmp_path / "data"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "memoryctl: no database to use: DATABASE_URL is unset, no `make run` is running" in done.stderr, done
    assert "Set DATABASE_URL, start `make run`, or give --embedded" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert not (tmp_path / ".data").exists() and not (tmp_path / "data").exists()


def test_migrate_embedded_creates_the_embedded_database_it_was_asked_for(tmp_path):
    data = tmp_path / "data"
    done = subprocess.run([MEMORYCTL, "migrate", "--embedded"], env=_env(data), cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert (done.returncode, "database mode: standalone" in done.stdout) == (0, True), done
    assert PostgresServer(data / "pg").initialized()
    again = subprocess.run([MEMORYCTL, "migrate"], env=_env(data), cwd=tmp_path,  # made once: used again
                           capture_output=True, text=True, timeout=180)
    assert (again.returncode, "applied: nothing (up to date)" in again.stdout) == (0, True), again
