"""A real Prometheus scrapes a running worker and the metrics sinks: the alerts of
deploy/prometheus/alerts.yaml become active and resolve as the worker goes and comes back, and
every panel query of deploy/grafana/memory-worker.json returns data.

The worker, its NATS server and its database are this test's own (the suite's shared worker
would consume the backlog). Prometheus scrapes every 0.5 s and evaluates every 0.5 s; the rule
file is alerts.yaml with every `for:` set to 2 s and MemoryCommandsBacklog's 60 s threshold set to
3 s (tests/support/prometheus.py: rules_for_test), the rest as deployed.

The backlog is real: the worker is stopped while the bot publishes creates, and PostgreSQL holds
a lock on server_memories meanwhile, so when the worker is back its creates wait (lock_timeout),
are retried and redelivered, and the oldest unconsumed command ages in the worker's own gauge;
the lock goes once a retry is counted, and the backlog drains.
While no worker runs nothing measures the backlog (the gauge is the worker's), which is what
MemoryWorkersDown is there for.
"""

from __future__ import annotations

import asyncio
import json

import asyncpg
import nats
import pytest

from contracts.kinds.create import SAVED, SAVED_WITH_EVICTION
from tests.conftest import WorkerProcess, clone_database, unique, worker_env
from tests.e2e.bus import RAG, command_payload, create_fields, encode, publish_command
from tests.e2e.directory import add_old_server_memories, server_memories
from tests.support.directory import add_server
from tests.support.prometheus import DASHBOARD, PrometheusServer, binary, rules_for_test
from tests.support.waiting import wait_until
from worker.client.memory_client import MemoryClient
from worker.local.embedded import LOOPBACK, NatsServer, free_port
from worker.sinks.process import run_sinks

BACKLOG_S = 3  # MemoryCommandsBacklog's threshold in this test, for the deployed 60 s


@pytest.fixture
async def own_servers(tmp_path, pg_server, template_db):
    binary("prometheus")  # skip before starting anything when it is missing
    nats_server = NatsServer(tmp_path / "nats").start()
    database_url = await clone_database(pg_server, template_db)
    yield nats_server, database_url
    nats_server.stop()


def panel_queries() -> list[tuple[str, str]]:
    board = json.loads(DASHBOARD.read_text())
    return [(panel["title"], target["expr"]) for panel in board["panels"] for target in panel["targets"]]


async def test_alerts_fire_and_resolve_and_every_dashboard_query_returns_data(own_servers, tmp_path):
    nats_server, database_url = own_servers
    worker_port, sinks_port = free_port(), free_port()
    worker = WorkerProcess(worker_env(nats_server.url, database_url, METRICS_PORT=str(worker_port),
                                      MEMORY_PARTITIONS="2", MAX_SERVER_MEMORIES="5"), tmp_path / "worker.log")
    await asyncio.to_thread(worker.start)
    stop_sinks = asyncio.Event()
    sinks = asyncio.create_task(run_sinks(nats_server.url, database_url, tmp_path / "metrics.jsonl", 30, stop_sinks,
                                          metrics_port=sinks_port))
    rules = rules_for_test(2, MemoryCommandsBacklog=f"max(memory_commands_oldest_unconsumed_age_seconds) > {BACKLOG_S}")
    prometheus = PrometheusServer(tmp_path / "prometheus",
                                  {"memory-worker": [f"{LOOPBACK}:{worker_port}"],
                                   "memory-sinks": [f"{LOOPBACK}:{sinks_port}"]},
                                  rules, scrape_s=0.5, eval_s=0.5)
    await asyncio.to_thread(prometheus.start)
    db = await asyncpg.create_pool(database_url, min_size=1, max_size=3)
    nc = await nats.connect(nats_server.url)
    locker = await asyncpg.connect(database_url)
    try:
        async def alerts() -> dict[str, str]:
            return await asyncio.to_thread(prometheus.alerts)

        async def firing(name: str) -> bool:
            return (await alerts()).get(name) == "firing"

        async def resolved(name: str) -> bool:
            return name not in await alerts()

        async with MemoryClient(nc, timeout=30.0) as memory:
            ws, full, later = unique(), unique(), unique()
            await add_server(db, ws)
            await add_server(db, later)
            server_id = await add_server(db, full, decay=True)
            await add_old_server_memories(db, server_id, 7, [(f"old {d}", d) for d in (60, 61, 62, 63, 64)])
            assert (await memory.create(create_fields(ws, "before anything"))).data.status == SAVED

            await wait_until(lambda: _up(prometheus), timeout=30, what="both targets scraped")
            # Before its first scrape Prometheus saw no worker: healthy once it has.
            await wait_until(lambda: resolved("MemoryWorkersDown"), timeout=30, what="no alert while healthy")
            assert await resolved("MemoryCommandsBacklog")

            # The worker goes; creates keep coming, and will meet a locked table when it is back.
            lock = locker.transaction()
            await lock.start()
            await locker.execute("LOCK TABLE server_memories IN EXCLUSIVE MODE")
            await asyncio.to_thread(worker.stop)
            for i in range(5):
                command_id = unique("backlog-")
                payload = command_payload(create_fields(later, f"backlog {i}"), command_id=command_id, reply_to=None)
                await publish_command(nc, "create", later, encode(payload), msg_id=command_id)
            await wait_until(lambda: firing("MemoryWorkersDown"), timeout=30, what="MemoryWorkersDown firing")

            # Back: ready again, but its creates wait on the lock and the backlog ages.
            await asyncio.to_thread(worker.start)
            await wait_until(lambda: resolved("MemoryWorkersDown"), timeout=30, what="MemoryWorkersDown resolved")
            await wait_until(lambda: firing("MemoryCommandsBacklog"), timeout=40, what="MemoryCommandsBacklog firing")

            # Held until a create has met it (lock_timeout) and was sent back for a retry.
            async def retried() -> bool:
                return bool(await asyncio.to_thread(prometheus.query, "sum(memory_retries_total) > 0"))
            await wait_until(retried, timeout=40, what="a create retried on the lock")
            await lock.rollback()  # the creates go through on their next delivery
            await wait_until(lambda: _saved(db, later, 5), timeout=60, what="the backlog applied")
            await wait_until(lambda: resolved("MemoryCommandsBacklog"), timeout=30,
                             what="MemoryCommandsBacklog resolved")

            # Load on the worker as it is now (its counters are its process's): saves, an eviction
            # (which the sinks record), a dead letter, a shadowed write (a dry run and its report).
            for i in range(3):  # MAX_SERVER_MEMORIES=5: room left
                assert (await memory.create(create_fields(ws, f"fact {i}"))).data.status == SAVED

            async def bot_write() -> dict:
                return {"success": True, "data": {"status": SAVED}}

            await memory.shadowed("create", create_fields(ws, "the bot's own fact"), bot_write, timeout=10)
            await memory.shadow_reports_sent()
            evicted = await memory.create(create_fields(full, "replaces the oldest", retrieval=RAG))
            assert evicted.data.status == SAVED_WITH_EVICTION
            await publish_command(nc, "create", ws, b"\x00\xffnot JSON", msg_id=unique("poison-"))

            # Every panel's query has data (a renamed metric would leave one empty).
            for title, expr in panel_queries():
                async def has_data(expr: str = expr) -> bool:
                    return bool(await asyncio.to_thread(prometheus.query, expr))
                await wait_until(has_data, timeout=20, what=f"data for {title!r}: {expr}")
            # And the sinks' own FastStream metrics were scraped: they consumed the eviction metric.
            async def sinks_received() -> bool:
                return bool(await asyncio.to_thread(prometheus.query, "sum(memory_sinks_received_messages_total) >= 1"))
            await wait_until(sinks_received, timeout=20, what="the sinks' received messages scraped")
            assert not sinks.done()
    finally:
        await locker.close()
        await nc.drain()
        await db.close()
        stop_sinks.set()
        await asyncio.wait_for(sinks, 30)
        await asyncio.to_thread(prometheus.stop)
        await asyncio.to_thread(worker.stop)


def _up(prometheus: PrometheusServer) -> bool:
    health = prometheus.targets_up()
    return len(health) == 2 and set(health.values()) == {"up"}


async def _saved(db: asyncpg.Pool, workspace_id: str, count: int) -> bool:
    return len(await server_memories(db, workspace_id)) >= count

