"""Creates saved together (CreateMemoryService.run_batch, worker/kinds/create/service.py) on
real PostgreSQL: each command ends exactly as it would on its own (a batch of one), in one
transaction."""

from __future__ import annotations

import asyncio

import asyncpg
import msgspec
import pytest

from contracts.codec import RESULT_DECODER
from contracts.kinds.create import LIMIT_EXCEEDED, PRIVACY_RESTRICTED, SAVED, SAVED_WITH_EVICTION
from db.repository import MemoryRepository
from db.requests import CreateBatchRequest
from tests.support.directory import add_server, add_user
from tests.support.planned import planned_batch
from worker.consuming import metrics
from worker.domain.workspace import Limits
from worker.kinds.create.outcome import SaveOutcome
from worker.kinds.create.record import InvalidArgs, SavePlan
from worker.kinds.create.service import CreateMemoryService, DuplicateInBatch
from worker.services.stored import answer

from ..conftest import unique
from .helpers import (
    GOOD_RETRIEVAL,
    add_server_memories,
    inbox_row_events,
    personal_save,
    server_save,
)

LIMITS = Limits(max_server_memories=3, max_personal_memories=3)


def services(pool) -> tuple[CreateMemoryService, CreateMemoryService]:
    """One that runs each create alone, one that runs those in flight together."""
    repo = MemoryRepository(pool)
    return (CreateMemoryService(repo, LIMITS),
            CreateMemoryService(repo, LIMITS, max_batch=64, observe=metrics.CREATE_BATCH.observe))


def _comparable(result_json: bytes, *ids_and_names: str) -> dict:
    """A result with what differs between two equivalent commands (ids, names) blanked out."""
    text = result_json.decode()
    for value in ids_and_names:
        text = text.replace(value, "<id>")
    doc = msgspec.json.decode(text.encode())
    doc["data"].pop("memory_id", None)
    _forget_ref_id(doc)
    return doc


def _forget_ref_id(doc: dict) -> None:
    """The notice's embed names the new memory's id too."""
    ref = ((doc.get("notice") or {}).get("embed") or {}).get("ref")
    if ref:
        ref.pop("id")


def _blank(text: str, *ids: str) -> str:
    for value in ids:
        text = text.replace(value, "<id>")
    return text


def _comparable_event(payload, *ids: str) -> dict:
    doc = msgspec.json.decode(_blank(bytes(payload).decode(), *ids).encode())
    for volatile in ("memory_id", "occurred_at", "replaced_by"):
        doc.pop(volatile, None)
    if isinstance(doc.get("evicted"), dict):
        doc["evicted"].pop("memory_id", None)
    _forget_ref_id(doc)
    return doc


async def _world(conn, tag: str) -> dict:
    """One of each situation, under fresh ids: an evicting server save, a plain one, a personal
    save, and a user at full privacy."""
    at_cap, plain = unique(), unique()
    server_id = await add_server(conn, at_cap, decay=True)
    await add_server_memories(conn, server_id, 7, [90, 80, 70])
    await add_server(conn, plain)
    member, private = unique(), unique()
    await add_user(conn, member)
    await add_user(conn, private, privacy=2)
    return {
        "evicting": server_save(at_cap, f"{tag} replaces the oldest", retrieval=GOOD_RETRIEVAL),
        "plain": server_save(plain, f"{tag} a plain fact"),
        "personal": personal_save(plain, member, "Mika", f"{tag} Mika likes tea"),
        "refused": personal_save(plain, private, "Rin", f"{tag} Rin likes coffee"),
        "ids": [at_cap, plain, member, private],
    }


async def test_a_batch_ends_each_command_as_running_it_alone_would(pool):
    single, batched = services(pool)
    async with pool.acquire() as conn:
        alone, together = await _world(conn, "same"), await _world(conn, "same")
    kinds = ("evicting", "plain", "personal", "refused")

    one_by_one = [await single.run(alone[k]) for k in kinds]
    in_batch = await batched.run_batch([together[k] for k in kinds])

    for kind, a, b in zip(kinds, one_by_one, in_batch, strict=True):
        ids_a = [alone[kind].command_id, *alone["ids"]]
        ids_b = [together[kind].command_id, *together["ids"]]
        assert _comparable(b.answer.result, *ids_b) == _comparable(a.answer.result, *ids_a), kind
        assert [_blank(e.subject, *ids_b) for e in b.events] == [_blank(e.subject, *ids_a) for e in a.events], kind
        assert ([_comparable_event(e.payload, *ids_b) for e in b.events]
                == [_comparable_event(e.payload, *ids_a) for e in a.events]), kind
        assert not b.duplicate
    statuses = [RESULT_DECODER.decode(h.answer.result).data.status for h in in_batch]
    assert statuses == [SAVED_WITH_EVICTION, SAVED, SAVED, PRIVACY_RESTRICTED]
    evicted = RESULT_DECODER.decode(in_batch[0].answer.result)
    assert evicted.data.content_forgotten == "old #0"
    assert evicted.notice is not None and "forgotten" in evicted.notice["title"]  # the eviction notice, with what the lock found

    # Committed: every answer is the stored row's, byte for byte, and its inbox row builds
    # the events it published again (for a redelivery), byte for byte.
    repo = MemoryRepository(pool)
    for kind, handled in zip(kinds, in_batch):
        cmd = together[kind]
        stored = await repo.stored_command(cmd.command_id, cmd.workspace_id)
        assert stored is not None and answer(stored).result == handled.answer.result, kind
        assert await inbox_row_events(pool, cmd) == handled.events


async def test_commands_of_one_owner_in_a_batch_see_each_other_in_order(pool):
    _, batched = services(pool)
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=False)
        await add_server_memories(conn, server_id, 7, [10, 5])  # one place left under the cap of 3

    handled = await batched.run_batch([server_save(ws, "takes the last place"), server_save(ws, "finds it full")])

    results = [RESULT_DECODER.decode(h.answer.result) for h in handled]
    assert [r.data.status for r in results] == [SAVED, LIMIT_EXCEEDED]
    assert results[1].data.current_count == 3
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == 3


async def test_a_command_already_handled_is_answered_from_the_inbox_inside_a_batch(pool):
    single, batched = services(pool)
    ws = unique()
    first = server_save(ws, "said once")
    original = await single.run(first)

    handled = await batched.run_batch([first, server_save(ws, "something new")])

    assert handled[0].duplicate and handled[0].answer.result == original.answer.result
    assert not handled[1].duplicate
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories m JOIN servers s USING (server_id)"
                                   " WHERE s.server_disc_id = $1", ws) == 2


async def test_one_command_id_twice_in_a_batch_is_refused_as_a_batch(pool):
    _, batched = services(pool)
    cmd = server_save(unique(), "delivered twice")
    with pytest.raises(DuplicateInBatch):
        await batched.run_batch([cmd, cmd])


async def test_concurrent_creates_share_transactions_and_each_gets_its_answer(pool):
    """Through the coalescer: 40 creates at once over 8 workspaces at a cap of 3, decay off:
    per workspace exactly 3 saved and the rest refused, and they did share transactions."""
    _, batched = services(pool)
    runs_before, creates_before = _batch_counts()
    workspaces = [unique() for _ in range(8)]
    cmds = [server_save(workspaces[i % 8], f"fact {i}") for i in range(40)]

    handled = await asyncio.gather(*(batched.run(cmd) for cmd in cmds))

    by_ws: dict[str, list[str]] = {}
    for cmd, h in zip(cmds, handled):
        by_ws.setdefault(cmd.workspace_id, []).append(RESULT_DECODER.decode(h.answer.result).data.status)
    for statuses in by_ws.values():
        assert sorted(statuses) == sorted([SAVED] * 3 + [LIMIT_EXCEEDED] * 2)
    runs, creates = (after - before for after, before in zip(_batch_counts(), (runs_before, creates_before)))
    assert creates == 40 and runs < 40


def _batch_counts() -> tuple[float, float]:
    """(database runs, creates in them) so far, from the memory_create_batch_size histogram."""
    sample = metrics.REGISTRY.get_sample_value
    return sample("memory_create_batch_size_count") or 0.0, sample("memory_create_batch_size_sum") or 0.0


async def test_a_batch_that_fails_on_one_command_writes_nothing_at_all(pool):
    """One transaction: a bad op after a good one rolls the good one back too (the coalescer
    then runs each command on its own)."""
    _, batched = services(pool)
    ws = unique()
    good = server_save(ws, "would be saved")
    planned = await planned_batch(pool, [good], LIMITS)
    (op,) = planned.ops
    assert isinstance(op.decision, SavePlan), op.decision
    # persona_id is an integer column: this one is out of its range, so the second save fails.
    broken = msgspec.structs.replace(op, command_id=unique("broken"),
                                     decision=msgspec.structs.replace(op.decision, persona_id=2**40))
    batch = CreateBatchRequest(planned.owners, [op, broken])

    with pytest.raises(asyncpg.DataError):
        await MemoryRepository(pool).create_batch(batch)

    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = $1",
                                   good.command_id) == 0
        assert await conn.fetchval("SELECT count(*) FROM server_memories m JOIN servers s USING (server_id)"
                                   " WHERE s.server_disc_id = $1", ws) == 0
    # And the same command alone still goes through.
    assert RESULT_DECODER.decode((await batched.run(good)).answer.result).data.status == SAVED


async def test_a_refusal_stored_meanwhile_by_another_delivery_is_its_answer_and_the_batch_goes_on(pool):
    """A refusal writes nothing but its inbox row, so a racing delivery's row is simply its
    answer: the batch's other saves commit, nothing runs twice."""
    ws = unique()
    good, refused = server_save(ws, "saved in the same batch"), server_save(unique(), "")  # blank: refused
    batch = await planned_batch(pool, [good, refused], LIMITS)
    assert isinstance(batch.ops[0].decision, SavePlan) and isinstance(batch.ops[1].decision, InvalidArgs), batch
    # The other delivery of `refused` stores its answer between the context read and the batch.
    async with pool.acquire() as conn:
        await conn.execute("INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)"
                           " VALUES ($1, 'create', $2, 'x', '{\"stored\": \"first\"}')",
                           refused.command_id, refused.workspace_id)
    repo = MemoryRepository(pool)

    rows = await repo.create_batch(batch)

    assert not rows[0].duplicate and rows[0].stored.facts is not None
    assert rows[0].stored.facts.outcome == SaveOutcome.SAVED
    assert rows[1].duplicate and answer(rows[1].stored).result == b'{"stored": "first"}'
    committed = await repo.stored_command(good.command_id, ws)
    assert committed is not None and answer(committed).result == answer(rows[0].stored).result
