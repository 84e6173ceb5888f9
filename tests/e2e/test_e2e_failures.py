"""Commands that fail in processing (docs/design.md, sections 3.3 and 9).

A failure that persists through `max_deliver` attempts (3 for the e2e worker) is
dead-lettered with `Dlq-Reason: max_deliver_exhausted` and answered with
`memory_save_failed_db_error`. To get one without taking the shared database down, a
trigger (the bot's database side) fails inserts of marked contents with a retryable
serialization failure, or with a data error that no retry can fix.

A model's odd content is not such a failure: it is an ordinary refusal, answered at once.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import nats
import pytest

from contracts import subjects
from contracts.kinds.create import DB_ERROR, INVALID_ARGS
from tests.e2e.bus import (
    Inbox,
    command_payload,
    create_fields,
    encode,
    publish_command,
    read_stream,
    unique,
)
from tests.e2e.directory import FAILING_INSERTS, personal_memories, server_memories
from tests.support.directory import add_server, add_user
from tests.support.logs import log_events


async def _fail(nc, inbox, ws: str, content: str) -> dict:
    cid = unique("doomed-")
    payload = encode(command_payload(create_fields(ws, content), command_id=cid, reply_to=inbox.subject(cid)))
    published_at = datetime.now(UTC)
    await publish_command(nc, "create", ws, payload, msg_id=cid)
    reply = (await inbox.wait_for([inbox.subject(cid)], timeout=30.0))[inbox.subject(cid)]
    dead = await read_stream(nc, subjects.DLQ_STREAM, [subjects.dlq_subject(subjects.command_subject("create", ws))])
    return {"ws": ws, "command_id": cid, "payload": payload, "published_at": published_at,
            "result": msgspec.json.decode(reply), "dead": dead}


@pytest.fixture(scope="module")
async def failing_inserts(bot_db):
    await bot_db.execute(FAILING_INSERTS)


@pytest.fixture(scope="module")
async def exhausted(e2e_worker, module_nc, bot_db, module_inbox, failing_inserts):
    """One command that fails on every delivery: its reply, DLQ entry and timings."""
    nc, inbox = module_nc, module_inbox
    ws = unique()
    await add_server(bot_db, ws)
    return await _fail(nc, inbox, ws, "transient failure every time")


async def test_a_failure_no_retry_can_fix_is_dead_lettered_at_once(e2e_worker, module_nc, module_inbox, bot_db,
                                                                    failing_inserts):
    ws = unique()
    await add_server(bot_db, ws)
    outcome = await _fail(module_nc, module_inbox, ws, "permanent failure, whatever the retries")
    assert outcome["result"]["data"]["status"] == DB_ERROR
    [dead] = outcome["dead"]
    assert dead.headers["Dlq-Reason"] == "permanent_error"
    assert dead.headers["Dlq-Deliveries"] == "1"
    assert "provoked permanent failure" in dead.headers["Dlq-Error"]


# Module-scoped twins of the suite's `nc` and `inbox`, for the module fixture above.
@pytest.fixture(scope="module")
async def module_nc(nats_server):
    client = await nats.connect(nats_server.url)
    yield client
    await client.drain()


@pytest.fixture(scope="module")
async def module_inbox(module_nc, e2e_worker):
    box = await Inbox(module_nc).start()
    yield box
    await box.stop()


async def test_exhausted_command_is_dead_lettered_and_answered_db_error(e2e_worker, exhausted, bot_db):
    result = exhausted["result"]
    assert result["data"]["status"] == DB_ERROR, result
    assert result["success"] is False and result["command_id"] == exhausted["command_id"]
    assert result["error"] and result["data"]["reason"]
    assert await server_memories(bot_db, exhausted["ws"]) == []
    [dead] = exhausted["dead"]
    assert dead.data == exhausted["payload"]
    assert dead.headers.get("Dlq-Reason") == "max_deliver_exhausted", dead.headers
    assert dead.headers.get("Dlq-Deliveries") == "3"
    assert dead.headers.get("Dlq-Original-Subject") == subjects.command_subject("create", exhausted["ws"])
    assert "provoked transient failure" in dead.headers.get("Dlq-Error", ""), dead.headers


async def test_dlq_first_failed_at_is_the_first_failure(e2e_worker, exhausted):
    [dead] = exhausted["dead"]
    first_failed = datetime.fromisoformat(dead.headers["Dlq-First-Failed-At"])
    assert first_failed >= exhausted["published_at"] - timedelta(seconds=1)
    # Ordered against the worker's own log, not timed: the header holds the first failure,
    # which came before the second attempt failed (the last failure came after it).
    retries = {line["deliveries"]: datetime.fromisoformat(line["timestamp"])
               for line in log_events(e2e_worker.log_text(), "command_retry", command_id=exhausted["command_id"])}
    assert first_failed <= retries[1] < retries[2], (first_failed, retries)


@pytest.mark.parametrize("where", ["memory_content", "target_user"])
async def test_nul_character_in_arguments_is_an_ordinary_refusal(e2e_worker, memory, bot_db, nc, where):
    ws, bob = unique(), unique()
    await add_server(bot_db, ws)
    await add_user(bot_db, bob)
    members = [{"id": bob, "display_name": "Bob", "username": "bob"}]
    if where == "memory_content":
        fields = create_fields(ws, "tea\x00time", member_matches=members)
        allowed = {INVALID_ARGS}
    else:
        fields = create_fields(ws, "{user} likes tea", scope="target_user", target="Bo\x00b", member_matches=members)
        allowed = {INVALID_ARGS}

    result = await memory.create(fields)

    assert await server_memories(bot_db, ws) == [] and await personal_memories(bot_db, bob) == []
    dead = await read_stream(nc, subjects.DLQ_STREAM, [subjects.dlq_subject(subjects.command_subject("create", ws))])
    assert dead == [], [m.headers for m in dead]
    assert result.data.status in allowed, result
    assert result.error == f"Invalid parameters: Parameter '{where}' must not contain NUL characters"
