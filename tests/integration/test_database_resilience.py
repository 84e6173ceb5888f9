"""What the worker's database connections do when the database stops answering, and what it
reports about the database's replication (issue 25), on real PostgreSQL servers: a lone one,
and a primary with a streaming standby made by pg_basebackup."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

import asyncpg
import pytest

from db import replication
from db.connection import Timeouts, connect
from db.pool import WORKER_TIMEOUTS, connection, create_pool, leaves_connection_usable
from tests.conftest import ROOT, unique
from worker.consuming.database import timeouts_from
from worker.consuming.replication_check import SyncStandbyRequired, check_replication
from worker.local import replication as pg_replication
from worker.local.embedded import LOOPBACK, PostgresServer
from worker.shared.settings import Settings

BOUND_S = 60  # far above any timeout set here: a hang fails the test instead of stalling it


def test_the_worker_pool_takes_its_timeouts_from_the_settings():
    assert timeouts_from(Settings()) == WORKER_TIMEOUTS
    assert timeouts_from(Settings.from_env({"DB_CONNECT_TIMEOUT_SECONDS": "3", "DB_COMMAND_TIMEOUT_SECONDS": "7"})) \
        == Timeouts(connect_s=3.0, command_s=7.0)


async def test_a_statement_cut_short_by_the_command_timeout_never_hands_its_connection_on(database_url):
    pool = await create_pool(database_url, min_size=1, max_size=1, timeouts=Timeouts(connect_s=5, command_s=0.5))
    try:
        async with connection(pool) as conn:
            first = await conn.fetchval("SELECT pg_backend_pid()")
        with pytest.raises(asyncio.TimeoutError):
            async with connection(pool) as conn:
                await conn.fetchval("SELECT pg_sleep(5)")
        # The only connection of the pool was dropped: the next call gets a new session that
        # works, not one with a cancel or half a reply still in flight.
        async with connection(pool) as conn:
            second = await asyncio.wait_for(conn.fetchval("SELECT pg_backend_pid()"), BOUND_S)
        assert second != first
    finally:
        await asyncio.wait_for(pool.close(), BOUND_S)


async def test_a_server_error_keeps_the_connection(database_url):
    pool = await create_pool(database_url, min_size=1, max_size=1)
    try:
        async with connection(pool) as conn:
            first = await conn.fetchval("SELECT pg_backend_pid()")
        with pytest.raises(asyncpg.DivisionByZeroError):
            async with connection(pool) as conn:
                await conn.fetchval("SELECT 1 / 0")
        async with connection(pool) as conn:
            assert await conn.fetchval("SELECT pg_backend_pid()") == first
    finally:
        await pool.close()


def test_which_failures_leave_a_connection_usable():
    assert leaves_connection_usable(asyncpg.DivisionByZeroError("x"))
    assert leaves_connection_usable(asyncpg.LockNotAvailableError("x"))  # lock_timeout: the server's own
    for exc in (asyncio.TimeoutError(), asyncio.CancelledError(), asyncpg.InternalClientError("state 12"),
                asyncpg.InterfaceError("x"), ConnectionResetError(), asyncpg.AdminShutdownError("x"),
                asyncpg.ConnectionFailureError("x")):
        assert not leaves_connection_usable(exc), exc


async def test_a_host_that_accepts_and_never_answers_fails_the_connect_within_its_timeout():
    # A listening socket nobody accepts from: the kernel completes the handshake, then nothing
    # answers, as with a frozen server or a half-dead machine.
    with socket.socket() as silent:
        silent.bind((LOOPBACK, 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        with pytest.raises((asyncio.TimeoutError, OSError)):
            await asyncio.wait_for(connect(f"postgresql://postgres@{LOOPBACK}:{port}/x", Timeouts(connect_s=1)),
                                   BOUND_S)


async def test_a_lone_server_is_reported_unprotected_and_refused_when_a_standby_is_required(pg_server):
    conn = await asyncpg.connect(pg_server.dsn())
    try:
        state = await replication.read(conn)
        assert (state.in_recovery, state.standby_names, state.protected) == (False, "", False)
        assert "synchronous_standby_names is empty" in state.describe()
        assert (await check_replication(conn, Settings())).protected is False
        with pytest.raises(SyncStandbyRequired, match="REQUIRE_SYNC_STANDBY"):
            await check_replication(conn, Settings(require_sync_standby=True))
    finally:
        await conn.close()


def test_memoryctl_run_refuses_to_start_without_a_sync_standby_when_required(pg_server):
    env = dict(os.environ, DATABASE_URL=pg_server.dsn(f"nosync_{unique()}"), NATS_URL="nats://127.0.0.1:1",
               REQUIRE_SYNC_STANDBY="true", LOG_FORMAT="json", METRICS_PORT="0", PYTHONPATH=str(ROOT))
    subprocess.run([str(pg_server.bin_dir / "createdb"), "-h", LOOPBACK, "-p", str(pg_server.port), "-U",
                    pg_server.user, env["DATABASE_URL"].rsplit("/", 1)[1].split("?")[0]], check=True)
    done = subprocess.run([sys.executable, "-m", "worker.cli.memoryctl", "run"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=BOUND_S)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "refusing to start: REQUIRE_SYNC_STANDBY is set and no synchronous standby is configured" in done.stderr


@pytest.fixture
def primary_and_standby(tmp_root):
    root = tmp_root / f"replication-{unique()}"
    primary = PostgresServer(root / "primary", durable=False, settings={"synchronous_commit": "on"}).start()
    standby = PostgresServer(root / "standby-a", durable=False, settings={"synchronous_commit": "on"})
    try:
        pg_replication.base_backup(standby, LOOPBACK, primary.port).start()
        yield primary, standby
    finally:
        standby.stop()
        primary.stop()


async def _until(conn: asyncpg.Connection, sql: str, *args, timeout_s: float = BOUND_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not await conn.fetchval(sql, *args):
        assert time.monotonic() < deadline, f"not within {timeout_s}s: {sql}"
        await asyncio.sleep(0.1)


async def test_a_connected_synchronous_standby_is_reported_and_satisfies_the_requirement(primary_and_standby):
    primary, standby = primary_and_standby
    conn = await asyncpg.connect(primary.dsn())
    try:
        await _until(conn, "SELECT count(*) FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'",
                     pg_replication.application_name(standby))
        streaming = await replication.read(conn)
        assert (streaming.standbys, streaming.protected) == (1, False)  # asynchronous until named
        # Named only once it is connected: before that a commit (CREATE DATABASE too) waits.
        await conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{pg_replication.application_name(standby)}'")
        await conn.execute("SELECT pg_reload_conf()")
        await _until(conn, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")
        state = await check_replication(conn, Settings(require_sync_standby=True))
        assert (state.sync_standbys, state.protected) == (1, True)
        await conn.execute("SET synchronous_commit = local")  # a role or session that opted out
        local = await replication.read(conn)
        assert local.protected is False and "synchronous_commit is 'local'" in local.describe()
    finally:
        await conn.close()
    standby_conn = await asyncpg.connect(standby.dsn())
    try:
        assert (await replication.read(standby_conn)).in_recovery
    finally:
        await standby_conn.close()


async def test_a_connection_the_server_closed_mid_call_reports_the_server_error(database_url):
    pool = await create_pool(database_url, min_size=1, max_size=1)
    try:
        with pytest.raises((asyncpg.AdminShutdownError, asyncpg.ConnectionDoesNotExistError, ConnectionError)):
            async with connection(pool) as conn:
                await conn.fetchval("SELECT pg_terminate_backend(pg_backend_pid())")
        async with connection(pool) as conn:  # and the pool hands out a working one after it
            assert await asyncio.wait_for(conn.fetchval("SELECT 1"), BOUND_S) == 1
    finally:
        await pool.close()


async def test_pooled_connections_carry_keepalives_and_the_user_timeout_on_both_ends(database_url):
    timeouts = Timeouts(connect_s=5, command_s=7)
    pool = await create_pool(database_url, min_size=1, max_size=1, timeouts=timeouts)
    try:
        async with connection(pool) as conn:
            sock = conn._con._transport.get_extra_info("socket")  # noqa: SLF001  the worker's end
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 7000
            # The server's end, as the session reports it.
            assert await conn.fetchval("SHOW tcp_user_timeout") == "7000"
            assert await conn.fetchval("SHOW tcp_keepalives_idle") == "5"
    finally:
        await pool.close()
