"""A real eviction through the running worker reaches both metrics sinks (docs/design.md, sections 3.5, 7).

The sinks run as `memoryctl sinks` runs them (`worker.sinks.process.run_sinks`), with consumers of
their own on MEMORY_EVENTS, against the worker's NATS and database.
"""

from __future__ import annotations

import asyncio

import msgspec

from contracts.kinds.create import SAVED_WITH_EVICTION
from tests.e2e.bus import RAG, create_fields, unique
from tests.e2e.directory import add_old_server_memories, eviction_metric_ids
from tests.support.directory import add_server
from tests.support.waiting import wait_until
from worker.sinks.process import run_sinks

LINEAGE = 13


async def test_an_eviction_reaches_both_sinks_with_only_scope_and_decay_days(
        e2e_worker, memory, bot_db, nats_server, e2e_database_url, tmp_path):
    path = tmp_path / "metrics.jsonl"
    stop = asyncio.Event()
    sinks = asyncio.create_task(run_sinks(nats_server.url, e2e_database_url, path, 30, stop,
                                          consumer_prefix=f"e2e-sinks-{unique()}"))
    try:
        ws = unique()
        server_id = await add_server(bot_db, ws, decay=True, decay_days=45)
        await add_old_server_memories(bot_db, server_id, LINEAGE, [(f"legacy secret {i}", 60) for i in range(5)])
        result = await memory.create(create_fields(ws, "{user} likes green tea", lineage_id=LINEAGE, retrieval=RAG))
        assert result.data.status == SAVED_WITH_EVICTION, result
        [event_id] = await eviction_metric_ids(bot_db, result.command_id)

        def jsonl_lines() -> list[dict]:
            if not path.exists():
                return []
            return [line for line in map(msgspec.json.decode, path.read_bytes().split(b"\n")[:-1])
                    if line["event_id"] == event_id]

        async def rows():
            return await bot_db.fetch("SELECT metric_name, fields::text AS fields FROM metric_samples"
                                      " WHERE event_id = $1", event_id)

        await wait_until(jsonl_lines, timeout=10)
        await wait_until(rows, timeout=10)
        assert not sinks.done()
    finally:
        stop.set()
        await asyncio.wait_for(sinks, 10)

    expected = {"scope": "server", "decay_days": 45}
    [line] = jsonl_lines()
    assert set(line) == {"metric", "fields", "event_id", "received_at"}
    assert (line["metric"], line["fields"]) == ("memory_eviction", expected)
    [row] = await rows()
    assert (row["metric_name"], msgspec.json.decode(row["fields"])) == ("memory_eviction", expected)
    # Nothing private anywhere: no content, no workspace or memory ids in what the sinks keep.
    for text in (msgspec.json.encode(line["fields"]).decode(), row["fields"]):
        assert "secret" not in text and "tea" not in text and ws not in text
        assert str(result.data.memory_id) not in text and str(server_id) not in text
