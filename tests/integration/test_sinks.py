"""The metrics sinks (worker/sinks/process.py), each in the sinks' FastStream application, on real
NATS and PostgreSQL.

Metrics are published to MEMORY_EVENTS as the worker's outbox does (subject
`metrics.memory_eviction`, header Nats-Msg-Id). The stream is shared with the rest of the
session, so each test uses its own durable consumers and event ids, and looks only at its ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import msgspec
import pytest
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.errors import NotFoundError
from structlog.testing import capture_logs

from contracts import subjects
from db.pool import create_pool
from tests.support.waiting import wait_until
from worker.consuming.administration import streams
from worker.sinks.app import SinksConfig, build
from worker.sinks.jsonl import JsonLinesSink
from worker.sinks.metrics import InvalidMetric, parse_metric
from worker.sinks.postgres import PostgresSink

from ..conftest import ROOT, TEMPLATE_DB, unique

EVICTION = subjects.METRIC_EVICTION_SUBJECT
FAST = {"fetch_timeout": 0.2}


@pytest.fixture
async def js(nc):
    ctx = nc.jetstream()
    await streams.ensure_stream(ctx, streams.events_stream())
    return ctx


async def publish(js, payload: dict | bytes, *, event_id: str, subject: str = EVICTION) -> None:
    data = payload if isinstance(payload, bytes) else msgspec.json.encode(payload)
    await js.publish(subject, data, headers={"Nats-Msg-Id": event_id}, stream=subjects.EVENTS_STREAM)


def run(sink, nats_url: str, stop: asyncio.Event):
    """The sink alone in the sinks' FastStream application (worker/sinks/app.py), until `stop`."""
    app = build(SinksConfig(nats_url=nats_url), stop=stop, sinks=[sink]).app
    return app.run()


@contextlib.asynccontextmanager
async def running(sink, nats_url: str):
    stop = asyncio.Event()
    task = asyncio.create_task(run(sink, nats_url, stop))
    try:
        yield task
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


def lines(path) -> list[dict]:
    """The complete lines (a reader ignores a last line still without its newline)."""
    if not path.exists():
        return []
    return [msgspec.json.decode(raw) for raw in path.read_bytes().split(b"\n")[:-1]]


def by_id(path, ids) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {i: [] for i in ids}
    for line in lines(path):
        if line["event_id"] in found:
            found[line["event_id"]].append(line)
    return found


async def settled(js, durable: str) -> bool:
    """Everything on the consumer delivered and acknowledged (False until the sink created it)."""
    try:
        info = await js.consumer_info(subjects.EVENTS_STREAM, durable)
    except NotFoundError:
        return False
    return info.num_pending == 0 and info.num_ack_pending == 0


def test_validation_accepts_exactly_the_eviction_shape():
    assert parse_metric(EVICTION, b'{"scope":"server","decay_days":30}') == (
        "memory_eviction", {"scope": "server", "decay_days": 30})
    for bad in (b'{"scope":"server","decay_days":30,"content":"likes tea"}', b'{"scope":"server"}',
                b'{"scope":"guild","decay_days":30}', b'{"scope":"server","decay_days":"30"}',
                b'{"scope":"server","decay_days":true}', b'{"scope":"server","decay_days":0}',
                b"[1]", b"not json"):
        with pytest.raises(InvalidMetric):
            parse_metric(EVICTION, bad)
    assert parse_metric("metrics.dead_letter", b'{"reason":"poison","kind":"create"}')[0] == "dead_letter"
    with pytest.raises(InvalidMetric):
        parse_metric("metrics.dead_letter", b'{"nested":{"a":1}}')


async def test_jsonl_sink_writes_one_line_per_metric_and_acks_invalid_ones(js, nats_server, tmp_path):
    path, durable = tmp_path / "metrics.jsonl", f"t-jsonl-{unique()}"
    good = {f"{unique('c')}:metric:eviction": {"scope": s, "decay_days": d}
            for s, d in (("server", 30), ("personal", 7), ("server", 90))}
    bad = [unique("bad"), unique("bad")]
    for event_id, payload in good.items():
        await publish(js, payload, event_id=event_id)
    await publish(js, {"scope": "server", "decay_days": 30, "content": "likes tea"}, event_id=bad[0])
    await publish(js, b"not json", event_id=bad[1])

    with capture_logs() as logs:
        sink = JsonLinesSink(path, durable=durable, **FAST)
        async with running(sink, nats_server.url):
            await wait_until(lambda: all(by_id(path, good).values()))
            await wait_until(lambda: settled(js, durable))

    found = by_id(path, [*good, *bad])
    for event_id, payload in good.items():
        [line] = found[event_id]
        assert set(line) == {"metric", "fields", "event_id", "received_at"}
        assert line["metric"] == "memory_eviction"
        assert line["fields"] == payload and list(line["fields"]) == ["scope", "decay_days"]
    assert found[bad[0]] == [] and found[bad[1]] == []
    rejected = [e for e in logs if e["event"] == "metric_rejected" and e["event_id"] in bad]
    assert len(rejected) == 2
    assert "likes tea" not in repr(logs)  # the payload of a rejected metric is never logged


async def test_jsonl_sink_restart_neither_loses_nor_duplicates(js, nats_server, tmp_path):
    """A crash after writing but before acking, a torn last line, and metrics sent while down."""
    path, durable = tmp_path / "metrics.jsonl", f"t-jsonl-{unique()}"
    ids = [f"{unique('c')}:metric:eviction" for _ in range(6)]
    payload = {"scope": "personal", "decay_days": 30}

    # The durable exists before the first run, so everything published now waits for it.
    await js.add_consumer(subjects.EVENTS_STREAM, ConsumerConfig(
        durable_name=durable, filter_subject="metrics.>", ack_policy=AckPolicy.EXPLICIT,
        max_ack_pending=1, ack_wait=5))
    for event_id in ids[:3]:
        await publish(js, payload, event_id=event_id)
    # What a crashed run left: ids[0] fully written (never acked), then half of ids[1]'s line.
    whole = msgspec.json.encode({"metric": "memory_eviction", "fields": payload, "event_id": ids[0],
                                 "received_at": "2025-01-01T00:00:00+00:00"}) + b"\n"
    torn = msgspec.json.encode({"metric": "memory_eviction", "fields": payload, "event_id": ids[1],
                                "received_at": "2025-01-01T00:00:00+00:00"})[:25]
    path.write_bytes(whole + torn)

    async with running(JsonLinesSink(path, durable=durable, **FAST), nats_server.url):
        await wait_until(lambda: all(by_id(path, ids[:3]).values()))
        await wait_until(lambda: settled(js, durable))
    # The drifted consumer settings were replaced by the sink's own (create-or-update).
    config = (await js.consumer_info(subjects.EVENTS_STREAM, durable)).config
    assert config.max_ack_pending == 1000 and config.ack_wait == 30

    for event_id in ids[3:]:  # sent while the sink is down
        await publish(js, payload, event_id=event_id)
    async with running(JsonLinesSink(path, durable=durable, **FAST), nats_server.url):
        await wait_until(lambda: all(by_id(path, ids).values()))
        await wait_until(lambda: settled(js, durable))

    content = path.read_bytes()
    assert content.startswith(whole) and content.endswith(b"\n")  # kept as it was; the torn line is gone
    assert len(lines(path)) == content.count(b"\n")  # every line is whole JSON
    assert all(len(found) == 1 for found in by_id(path, ids).values()), by_id(path, ids)
    assert [line["event_id"] for line in lines(path) if line["event_id"] in ids] == ids


async def test_a_second_jsonl_sink_on_the_same_file_is_refused(js, nats_server, tmp_path):
    path = tmp_path / "metrics.jsonl"
    async with running(JsonLinesSink(path, durable=f"t-jsonl-{unique()}", **FAST), nats_server.url):
        await wait_until(lambda: path.exists())
        await asyncio.sleep(0.1)
        with pytest.raises(RuntimeError, match="another metrics sink"):
            await run(JsonLinesSink(path, durable=f"t-jsonl-{unique()}", **FAST), nats_server.url, asyncio.Event())


async def samples(pool, ids) -> list[asyncpg.Record]:
    return await pool.fetch(
        "SELECT metric_name, fields::text AS fields, event_id, created_at FROM metric_samples"
        " WHERE event_id = ANY($1::text[]) ORDER BY event_id", list(ids))


async def test_postgres_sink_stores_the_fields_as_a_json_object(js, nats_server, pool):
    durable = f"t-pg-{unique()}"
    ids = sorted(f"{unique('c')}:metric:eviction" for _ in range(2))
    await publish(js, {"scope": "server", "decay_days": 30}, event_id=ids[0])
    await publish(js, {"scope": "personal", "decay_days": 12}, event_id=ids[1])
    await publish(js, {"scope": "server", "decay_days": 30, "memory_id": 4}, event_id=unique("bad"))

    async with running(PostgresSink(pool, durable=durable, **FAST), nats_server.url):
        await wait_until(lambda: settled(js, durable))
        rows = await samples(pool, ids)

    assert [(r["metric_name"], msgspec.json.decode(r["fields"]), r["event_id"]) for r in rows] == [
        ("memory_eviction", {"scope": "server", "decay_days": 30}, ids[0]),
        ("memory_eviction", {"scope": "personal", "decay_days": 12}, ids[1]),
    ]
    assert await pool.fetchval("SELECT jsonb_typeof(fields) FROM metric_samples WHERE event_id = $1",
                               ids[0]) == "object"
    assert await pool.fetchval("SELECT count(*) FROM metric_samples WHERE fields ? 'memory_id'") == 0


async def test_postgres_sink_waits_out_a_database_outage(js, nats_server, pg_server, database_url):
    """The database disappears: one log line, the metric stays unacked, and is stored once later."""
    name = urlsplit(database_url).path.lstrip("/")
    durable = f"t-pg-{unique()}"
    event_id = f"{unique('c')}:metric:eviction"
    admin = await asyncpg.connect(pg_server.dsn())
    sink_pool = await create_pool(database_url, min_size=0, max_size=2)
    try:
        with capture_logs() as logs:
            sink = PostgresSink(sink_pool, durable=durable, retry_delay=0.1, max_retry_delay=0.2, **FAST)
            async with running(sink, nats_server.url):
                await wait_until(lambda: settled(js, durable))  # older metrics of the session are in
                await admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
                before = (await js.consumer_info(subjects.EVENTS_STREAM, durable)).delivered.consumer_seq
                await publish(js, {"scope": "server", "decay_days": 30}, event_id=event_id)

                async def retried() -> bool:  # delivered, nak'ed and delivered again, twice over
                    info = await js.consumer_info(subjects.EVENTS_STREAM, durable)
                    return info.delivered.consumer_seq >= before + 3
                await wait_until(retried)
                info = await js.consumer_info(subjects.EVENTS_STREAM, durable)
                assert info.num_ack_pending + info.num_pending >= 1  # not acked, not dropped
                failures = [e for e in logs if e["event"] == "metric_sink_db_failed"]
                assert len(failures) == 1, failures

                await admin.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB}")
                await wait_until(lambda: any(e["event"] == "metric_sink_db_recovered" for e in logs))
                await wait_until(lambda: settled(js, durable))
                rows = await samples(sink_pool, [event_id])
        assert [msgspec.json.decode(r["fields"]) for r in rows] == [{"scope": "server", "decay_days": 30}]
        assert len([e for e in logs if e["event"] == "metric_sink_db_failed"]) == 1
        assert len([e for e in logs if e["event"] == "metric_sink_db_recovered"]) == 1
    finally:
        await sink_pool.close()
        await admin.close()


async def test_postgres_sink_prunes_samples_past_the_retention(js, nats_server, pool):
    await pool.execute(
        "INSERT INTO metric_samples (metric_name, fields, created_at) VALUES"
        " ('memory_eviction', '{\"age\": 45}', now() - interval '45 days'),"
        " ('memory_eviction', '{\"age\": 31}', now() - interval '31 days'),"
        " ('memory_eviction', '{\"age\": 29}', now() - interval '29 days'),"
        " ('memory_eviction', '{\"age\": 0}', now())")
    with capture_logs() as logs:
        sink = PostgresSink(pool, retention_days=30, durable=f"t-pg-{unique()}", prune_batch=1, **FAST)
        async with running(sink, nats_server.url):  # prunes at start
            await wait_until(lambda: any(e["event"] == "metric_samples_pruned" for e in logs))
    left = await pool.fetch("SELECT (fields->>'age')::int AS age FROM metric_samples WHERE fields ? 'age'"
                            " ORDER BY 1")
    assert [r["age"] for r in left] == [0, 29]
    assert [e["deleted"] for e in logs if e["event"] == "metric_samples_pruned"] == [2]
    assert await sink.prune() == 0


async def test_faststream_run_serves_the_sinks_application(js, nats_server, tmp_path):
    """`faststream run worker.sinks.app:app`, configured from the environment, until SIGTERM."""
    path, prefix = tmp_path / "metrics.jsonl", f"t-fs-{unique()}"
    event_id = f"{unique('c')}:metric:eviction"
    env = dict(os.environ, NATS_URL=nats_server.url, SINKS_JSONL=str(path), SINKS_CONSUMER_PREFIX=prefix,
               PYTHONPATH=str(ROOT), LOG_FORMAT="json")
    env.pop("DATABASE_URL", None)
    log = tmp_path / "faststream.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(Path(sys.executable).with_name("faststream")), "run", "worker.sinks.app:app"],
                                env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        await wait_until(lambda: b"metric_sink_started" in log.read_bytes() or proc.poll() is not None, timeout=30)
        assert proc.poll() is None, log.read_text()
        await publish(js, {"scope": "personal", "decay_days": 9}, event_id=event_id)
        await wait_until(lambda: by_id(path, [event_id])[event_id], timeout=15)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(proc.wait, 30)
    [line] = by_id(path, [event_id])[event_id]
    assert line["fields"] == {"scope": "personal", "decay_days": 9}
    assert code == 0, log.read_text()
    assert b"metric_sink_stopped" in log.read_bytes()
    assert await settled(js, f"{prefix}-jsonl")


async def test_sinks_wait_out_a_missing_nats_logging_once_and_stop_when_asked(tmp_path):
    """Twice in one process: each application logs its own first error (the once-only state is
    the application's, not the process's, so a later one is not silenced)."""
    from worker.local.embedded import free_port
    from worker.sinks.process import run_sinks

    for attempt in range(2):
        stop = asyncio.Event()
        with capture_logs() as logs:
            task = asyncio.create_task(run_sinks(f"nats://127.0.0.1:{free_port()}", None,
                                                 tmp_path / f"m{attempt}.jsonl", 30, stop))
            await wait_until(lambda: any(e["event"] == "metric_sinks_nats_error" for e in logs))  # noqa: B023
            await asyncio.sleep(2.5)  # nats-py retries every second meanwhile: still one line
            assert not task.done()
            stop.set()
            await asyncio.wait_for(task, 10)
        assert len([e for e in logs if e["event"] == "metric_sinks_nats_error"]) == 1, attempt
        assert not any(e["event"] == "metric_sink_started" for e in logs)


def test_faststream_docs_gen_writes_the_sinks_asyncapi_document(tmp_path):
    """`faststream docs gen worker.sinks.app:app`: the document the unit tests hold to the contract."""
    from worker.sinks.metrics import EVICTION_SCHEMA

    out = tmp_path / "asyncapi.json"
    env = dict(os.environ, NATS_URL="nats://127.0.0.1:4222", SINKS_JSONL=str(tmp_path / "m.jsonl"),
               DATABASE_URL="postgresql://unused/db", PYTHONPATH=str(ROOT))
    done = subprocess.run([str(Path(sys.executable).with_name("faststream")), "docs", "gen", "worker.sinks.app:app",
                           "--out", str(out)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = msgspec.json.decode(out.read_bytes())
    assert doc["asyncapi"] == "3.0.0"
    assert sorted(c["address"] for c in doc["channels"].values()) == [subjects.METRICS_FILTER] * 2
    [item] = {msgspec.json.encode(s["items"]) for s in doc["components"]["schemas"].values()}
    assert msgspec.json.decode(item) == EVICTION_SCHEMA


@pytest.mark.parametrize("extra, named", [({}, "no metrics sink configured"),
                                          ({"SINKS_JSONL": "m.jsonl", "SINKS_METRICS_PORT": "abc"},
                                           "SINKS_METRICS_PORT must be a port number")])
def test_faststream_run_without_a_usable_configuration_says_what_to_set(tmp_path, extra, named):
    """`faststream run worker.sinks.app:app` with no sink configured (or a bad value): one line
    naming the variables, not a traceback."""
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DATABASE_URL", "SINKS_JSONL")}
    env.update(extra, PYTHONPATH=str(ROOT))
    done = subprocess.run([str(Path(sys.executable).with_name("faststream")), "run", "worker.sinks.app:app"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert named in done.stderr and "SINKS_JSONL" in done.stderr and "DATABASE_URL" in done.stderr, done.stderr
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
