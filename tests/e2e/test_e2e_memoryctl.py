"""Every `memoryctl` subcommand: its --help, and its cheapest real invocation against the suite's
running worker, NATS and database (issue 15: a command a user runs is run by a test).

The table below must name every subcommand the parser has, so a new one fails here until it
gets an invocation. Long-running commands (run, sinks, cache-node) run as processes until
they say they started, then stop on SIGTERM; the others run in-process (tests/memoryctl.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import signal
import subprocess
import sys
import time
import tomllib
import uuid
from pathlib import Path

import pytest

from tests.conftest import ROOT, clone_database, unique, worker_env
from tests.memoryctl import leaves, memoryctl
from worker.cli import memoryctl as cli

WS, USER, HOST = unique(), unique(), unique()
PROXY = f"pk:{uuid.uuid4()}"
# argv after `memoryctl` -> (exit code, text the output must contain).
INVOCATIONS: dict[tuple[str, ...], tuple[list[str], int, str]] = {
    ("migrate",): (["migrate"], 0, "applied: nothing (up to date)"),
    ("adopt",): (["adopt", "--dry-run"], 0, "already set up: this database runs in standalone mode"),
    ("demo",): (["demo"], 0, "evict"),
    ("user", "add"): (["user", "add", USER], 0, f"user {USER} registered"),
    ("user", "privacy"): (["user", "privacy", USER, "open"], 0, f"user {USER}: privacy 0 (open)"),
    ("user", "nickname"): (["user", "nickname", USER, "Mika"], 0, f"user {USER}: nickname 'Mika'"),
    ("user", "show"): (["user", "show", USER], 0, "saved nickname     'Mika'"),
    ("workspace", "set"): (["workspace", "set", WS, "--decay", "on"], 0, f"workspace {WS}"),
    ("workspace", "show"): (["workspace", "show", WS], 0, "decay"),
    ("blacklist", "add"): (["blacklist", "add", WS, USER], 0, "added to the blacklist"),
    ("blacklist", "list"): (["blacklist", "list", WS], 0, USER),
    ("blacklist", "remove"): (["blacklist", "remove", WS, USER], 0, "removed from the blacklist"),
    ("proxy", "link"): (["proxy", "link", PROXY, "--namespace", "ns-" + WS, "--host", HOST], 0, "hosted by"),
    ("proxy", "show"): (["proxy", "show", PROXY], 0, f"hosts {HOST}"),
    ("proxy", "unlink"): (["proxy", "unlink", "--namespace", "ns-" + WS, "--host", HOST], 0, "removed from"),
    ("memories", "list"): (["memories", "list", "--workspace", WS], 0, "no memories"),
    ("dlq", "list"): (["dlq", "list", "--reason", "no_such_reason"], 0, ""),
    ("dlq", "show"): (["dlq", "show", "999999999"], 1, "no dead letter with sequence 999999999"),
    ("dlq", "replay"): (["dlq", "replay", "--all", "--reason", "no_such_reason", "--dry-run"], 0,
                        "dry run: 0 dead letter(s) would be replayed"),
    ("dlq", "drop"): (["dlq", "drop", "--all", "--reason", "no_such_reason", "--yes"], 0, "dropped 0 dead letter(s)"),
    ("commands", "list"): (["commands", "list"], 0, "command(s) in MEMORY_COMMANDS"),
    ("commands", "show"): (["commands", "show", "999999999"], 1, "no command with sequence 999999999"),
    ("commands", "drop"): (["commands", "drop", "999999999", "--dry-run"], 1, "no command with sequence 999999999"),
    # With the suite worker's partitions: what it provisioned, provisioned again (nothing changes).
    ("provision",): (["provision"], 0, "provisioned: 4 partitions, 1 replica(s)"),
    ("shadow", "report"): (["shadow", "report", "--workspace", WS, "--hours", "1"], 0, "no shadow pairs"),
}
# Long-running: argv -> the log event that says it is serving.
SERVING: dict[tuple[str, ...], tuple[list[str], str]] = {
    ("run",): (["run"], "worker_ready"),
    ("sinks",): (["sinks", "--no-postgres", "--jsonl", "{tmp}/metrics.jsonl", "--consumer-prefix", "ctl-" + WS],
                 "metric_sink_started"),
    ("cache-node",): (["cache-node", "--name", "ctl-" + WS], "cache_node_started"),
}


def test_every_subcommand_has_an_invocation_here():
    assert sorted(leaves(cli.build_parser())) == sorted([*INVOCATIONS, *SERVING])


@pytest.mark.parametrize("path", leaves(cli.build_parser()), ids=" ".join)
def test_help(path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        cli.main([*path, "--help"])
    assert done.value.code == 0
    assert out.getvalue().startswith(f"usage: memoryctl {' '.join(path)}"), out.getvalue()


async def test_each_subcommand_runs(e2e_worker, nats_server, e2e_database_url):
    env = worker_env(nats_server.url, e2e_database_url, MAX_SERVER_MEMORIES="5", MAX_PERSONAL_MEMORIES="5",
                     MEMORY_PARTITIONS="4")
    for path, (argv, code, expected) in INVOCATIONS.items():  # in order: set, then show, ...
        done = await memoryctl(argv, env)
        assert (done.returncode, expected in done.stdout) == (code, True), (path, done)


def _serve_until_ready(argv: list[str], env: dict[str, str], ready: str, timeout: float = 60.0) -> str:
    proc = subprocess.Popen([sys.executable, "-m", "worker.cli.memoryctl", *argv], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    lines = []
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if f'"{ready}"' in line:
                proc.send_signal(signal.SIGTERM)
                assert proc.wait(timeout=60) == 0, "".join(lines)
                return "".join(lines)
        raise AssertionError(f"{argv} did not log {ready}:\n{''.join(lines)}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("path", list(SERVING), ids=" ".join)
async def test_each_long_running_subcommand_starts_and_stops_on_sigterm(path, e2e_worker, nats_server, pg_server,
                                                                        template_db, tmp_path):
    from worker.local.embedded import NatsServer

    argv, ready = SERVING[path]
    nats = None
    if path == ("run",):  # its own NATS and database: a second worker must not take the suite's commands
        nats = NatsServer(tmp_path / "nats").start()
    try:
        env = worker_env((nats or nats_server).url, await clone_database(pg_server, template_db))
        await asyncio.to_thread(_serve_until_ready, [a.format(tmp=tmp_path) for a in argv], env, ready)
    finally:
        if nats is not None:
            nats.stop()


async def test_the_demo_says_each_saves_lineage_and_its_imported_facts_are_in_the_past(e2e_worker, nats_server,
                                                                                     e2e_database_url):
    env = worker_env(nats_server.url, e2e_database_url, MAX_SERVER_MEMORIES="5", MAX_PERSONAL_MEMORIES="5",
                     MEMORY_PARTITIONS="4")
    demo = await memoryctl(["demo"], env)
    assert demo.returncode == 0, demo
    assert "(persona lineage 7)" in demo.stdout and "(persona lineage 8)" in demo.stdout
    assert "Saved text keeps {user} and {bot} as placeholders" in demo.stdout
    workspace = demo.stdout.split()[1].rstrip(",")
    listed = await memoryctl(["memories", "list", "--workspace", workspace], env)
    rows = [line.split() for line in listed.stdout.split("\n\n")[0].splitlines()[1:]]
    assert len(rows) == 6 and all(float(row[3][:-1]) >= 0 for row in rows), listed.stdout
    # The one the eviction made room for is gone: the oldest import, fact #4.
    assert "imported fact #4" not in listed.stdout and "imported fact #3" in listed.stdout
    assert "dormant: idle longer than the decay days" in listed.stdout


async def test_the_demo_refuses_an_adopted_database_and_writes_nothing(nats_server, pg_server):
    import asyncpg

    from tests import tomoribot

    dsn = await tomoribot.new_database(pg_server.dsn, "demo")
    bot = await asyncpg.connect(dsn)
    try:
        await tomoribot.build(bot)
        await tomoribot.seed(bot)
        env = worker_env(nats_server.url, dsn)
        assert (await memoryctl(["adopt"], env)).returncode == 0
        before = await tomoribot.snapshot(bot)
        demo = await memoryctl(["demo"], env)
        assert demo.returncode == 2 and "runs only on a standalone database" in demo.stderr, demo
        assert await tomoribot.snapshot(bot) == before
    finally:
        await bot.close()
        admin = await asyncpg.connect(pg_server.dsn())
        await admin.execute(f"DROP DATABASE {dsn.rsplit('/', 1)[1]} WITH (FORCE)")
        await admin.close()


@pytest.mark.parametrize("path, names", [(("run",), ("NATS_URL", "DATABASE_URL", "MEMORY_DATA_DIR")),
                                         (("migrate",), ("DATABASE_URL", "make run")),
                                         (("adopt",), ("DATABASE_URL", "MAX_SERVER_MEMORIES", "make run")),
                                         ((), ("NATS_URL", "DATABASE_URL", "make run", "--help")),
                                         (("demo",), ("NATS_URL", "DATABASE_URL", "standalone")),
                                         (("sinks",), ("NATS_URL", "DATABASE_URL", "faststream run")),
                                         (("cache-node",), ("NATS_URL", "make run", "cache-node-NAME")),
                                         (("memories", "list"), ("--lineage N", "global memories"))],
                         ids=" ".join)
def test_the_help_says_where_the_servers_come_from_and_what_each_option_is(path, names):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main([*path, "--help"])
    text = " ".join(out.getvalue().split())
    assert all(name in text for name in names), text


@pytest.mark.parametrize("argv, named", [(["dlq", "show", "0"], "seq"),
                                         (["dlq", "show", str(2**64)], "seq"),
                                         (["dlq", "replay", str(2**64), "--dry-run"], "SEQ"),
                                         (["dlq", "drop", str(2**64)], "SEQ"),
                                         (["commands", "show", str(2**64)], "seq"),
                                         (["commands", "drop", "0", "--dry-run"], "SEQ"),
                                         (["commands", "list", "--limit", "-1"], "--limit")],
                         ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_a_sequence_no_stream_can_hold_is_an_argument_error_not_a_traceback(argv, named):
    """Stream sequences are 1 to 2^64 - 1: beyond, the JetStream API answered a bad request,
    which memoryctl printed as a traceback."""
    done = subprocess.run([sys.executable, "-m", "worker.cli.memoryctl", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=worker_env("nats://127.0.0.1:1", "postgresql://unused/db"))
    assert done.returncode == 2, done
    assert f"argument {named}" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_version_is_the_release_pyproject_names():
    release = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    done = subprocess.run([str(Path(sys.executable).parent / "memoryctl"), "--version"], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"memoryctl (memory-worker) {release}\n"), done
