"""Dry runs on real PostgreSQL, in both database modes (docs/design.md, section 3.6): for every
command kind, a dry run answers exactly what the real command then answers (the same bytes: a
memory it creates gets the id the dry run foretold), changes no row of any table, stores no
inbox row, returns no event, and writes WAL for nothing but its shadow record (read back with
pg_walinspect: the relations the WAL between the two positions touched), which keeps whose
memories it would have created."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import asyncpg
import msgspec
import pytest

from contracts.envelope import Envelope
from contracts.kinds.manual import ManualMemory
from contracts.kinds.reinforce import ReinforceMemories
from contracts.kinds.seed_bio import SeedBio
from contracts.kinds.shadow import ShadowReport
from contracts.kinds.update import UpdateMemory
from db.repository import MemoryRepository
from db.transaction import Tx
from tests.support.commands import envelope, manual_command, reinforce_command, seed_bio_command, update_command
from tests.support.services import service_table
from worker.domain.workspace import Limits
from worker.kinds.shadow.service import DryRunning
from worker.services.base import CommandService, Handled

from .helpers import GOOD_RETRIEVAL, personal_save, server_save
from .worlds import MODES, World, world

LINEAGE = 4343
LIMITS = Limits(max_server_memories=3, max_personal_memories=3, max_memory_length=80)
# Every table a command of any kind may write, in both layouts (the directory rows included).
WRITTEN_TABLES = ("server_memories", "personal_memories", "memory_worker.processed_commands", "servers", "users",
                  "memory_worker.bio_seeds")
# What a dry run may write: its shadow record.
SHADOW_RELATIONS = {"shadow_pairs", "shadow_pairs_pkey", "shadow_pairs_created_at"}


@pytest.fixture(scope="module", params=MODES)
async def db(request, pg_server, template_db):
    async with world(request.param, pg_server, template_db) as w:
        await w.pool.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        yield w


def services(pool) -> dict[str, CommandService[Any]]:
    return service_table(MemoryRepository(pool), LIMITS)


async def snapshot(db: World) -> dict[str, list[str]]:
    tables = {}
    for table in WRITTEN_TABLES:
        if await db.pool.fetchval("SELECT to_regclass($1)", table) is None:
            continue
        rows = await db.pool.fetch(f"SELECT to_jsonb(t)::text FROM {table} t")
        tables[table] = sorted(r[0] for r in rows)
    return tables


async def flushed_lsn(db: World) -> str:
    """The WAL position everything written so far reaches, flushed (pg_walinspect reads only
    flushed WAL; the worker's sessions commit asynchronously): a message of its own, flushed,
    which changes no relation."""
    return await db.pool.fetchval("SELECT pg_logical_emit_message(false, 'test_dry_run', '', true)::text")


async def relations_written(db: World, start: str, end: str) -> set[str]:
    """The relations of this database that transactions wrote to between two WAL positions
    (records without a transaction id left out: what a read may log, pruning a page or
    setting hint bits, changes no row)."""
    rows = await db.pool.fetch(
        "SELECT DISTINCT coalesce(c.relname, b.relfilenode::text)"
        " FROM pg_get_wal_block_info($1::text::pg_lsn, $2::text::pg_lsn) b"
        " LEFT JOIN pg_class c ON c.relfilenode = b.relfilenode"
        " WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())"
        "   AND b.xid <> 0", start, end)
    return {r[0] for r in rows}


async def dry_then_real(db: World, kind: str, cmd: Envelope) -> tuple[Handled, Handled]:
    """The dry run of `cmd`, checked to have had no effect, then `cmd` for real; both answers."""
    service = services(db.pool)[kind]
    before = await snapshot(db)
    start = await flushed_lsn(db)
    dry = await DryRunning(kind, service, MemoryRepository(db.pool)).run(
        msgspec.structs.replace(cmd, dry_run=True), 17)
    end = await flushed_lsn(db)
    assert dry.dry and dry.events == []
    assert await snapshot(db) == before, "a dry run changed a row"
    assert await relations_written(db, start, end) <= SHADOW_RELATIONS
    kept = await db.pool.fetchrow("SELECT kind, dry_status, dry_result FROM shadow_pairs WHERE command_id = $1",
                                  cmd.command_id)
    assert (kept["kind"], kept["dry_status"]) == (kind, dry.answer.status)
    assert msgspec.json.decode(kept["dry_result"]) == msgspec.json.decode(dry.answer.result)

    real = await service.run(cmd, 17)
    assert real.answer.result == dry.answer.result, "the dry run answered what the command then did not"
    assert not real.dry
    return dry, real


async def kept_owner(db: World, command_id: str) -> tuple[str, str] | None:
    """Whose memories the kept dry run would have created (the owner's lock key)."""
    row = await db.pool.fetchrow("SELECT owner_scope, owner_id FROM shadow_pairs WHERE command_id = $1", command_id)
    return None if row["owner_scope"] is None else (row["owner_scope"], row["owner_id"])


def manual(ws: str, **fields: Any) -> ManualMemory:
    return manual_command(ws, **{"actor": "300000000000000001", "lineage_id": LINEAGE, **fields})


def update(ws: str, memory_id: int, content: str) -> UpdateMemory:
    return update_command(ws, memory_id, content, lineage_id=LINEAGE)


async def test_a_create_that_saves_foretells_its_memory_id(db):
    ws, server_id = await db.workspace()
    persona = await db.persona(server_id, LINEAGE)
    cmd = server_save(ws, "likes green tea", lineage=LINEAGE, persona={"id": persona, "lineage_id": LINEAGE,
                                                                      "name": "Tomori"})
    dry, real = await dry_then_real(db, "create", cmd)
    assert real.answer.status == "memory_saved_successfully"
    assert len(real.events) > 0
    assert await kept_owner(db, cmd.command_id) == ("server", ws)


async def test_a_create_at_the_cap_evicts_in_its_dry_run_exactly_as_for_real(db):
    ws, server_id = await db.workspace()
    persona = await db.persona(server_id, LINEAGE)
    await db.decay(server_id, 30)  # the rows below are 90 days old
    for i in range(LIMITS.max_server_memories):
        await db.server_memory(server_id, LINEAGE, f"old fact {i}")
    dry, real = await dry_then_real(db, "create", server_save(ws, "a new fact", lineage=LINEAGE, retrieval=GOOD_RETRIEVAL,
                                                              persona={"id": persona, "lineage_id": LINEAGE,
                                                                       "name": "Tomori"}))
    assert real.answer.status == "memory_saved_with_eviction"


async def test_a_personal_create_and_a_refusal(db):
    ws, _ = await db.workspace()
    person, _ = await db.user()
    cmd = personal_save(ws, person, "Mika", "likes jazz", lineage=LINEAGE)
    _, real = await dry_then_real(db, "create", cmd)
    assert real.answer.status == "memory_saved_successfully"
    assert await kept_owner(db, cmd.command_id) == ("personal", person)
    blank = server_save(ws, "", lineage=LINEAGE)
    _, refused = await dry_then_real(db, "create", blank)
    assert refused.answer.status != "memory_saved_successfully"
    assert await kept_owner(db, blank.command_id) is None


async def test_an_unknown_workspace_is_registered_only_for_real(db):
    ws = f"9{uuid.uuid4().int % 10**17:017d}"
    _, real = await dry_then_real(db, "create", server_save(ws, "likes tea", lineage=LINEAGE))
    assert real.answer.status == "memory_saved_successfully"


async def test_an_update_edit_and_delete(db):
    ws, server_id = await db.workspace()
    first = await db.server_memory(server_id, LINEAGE, "likes tea")
    second = await db.server_memory(server_id, LINEAGE, "likes coffee")
    _, edited = await dry_then_real(db, "update", update(ws, first, "likes green tea"))
    assert edited.answer.status == "memory_updated_successfully"
    _, deleted = await dry_then_real(db, "update", update(ws, second, ""))
    assert deleted.answer.status == "memory_deleted_successfully"


async def test_the_panels_add_edit_remove_and_import(db):
    ws, server_id = await db.workspace()
    add = manual(ws, action="add_batch", contents=["likes tea", "likes jam"])
    _, added = await dry_then_real(db, "manual", add)
    assert added.answer.status == "added"
    assert await kept_owner(db, add.command_id) == ("server", ws)
    memory_id = await db.server_memory(server_id, LINEAGE, "likes cake")
    _, edited = await dry_then_real(db, "manual", manual(ws, action="edit", memory_id=memory_id, content="likes pie"))
    assert edited.answer.status == "updated"
    _, removed = await dry_then_real(db, "manual", manual(ws, action="remove", memory_id=memory_id))
    assert removed.answer.status == "removed"
    _, imported = await dry_then_real(db, "manual", manual(ws, action="import", mode="replace",
                                                           entries=[{"content": "likes scones"}]))
    assert imported.answer.status == "imported"


async def test_a_reinforcement_counts_what_it_would_mark(db):
    ws, server_id = await db.workspace()
    ids = [await db.server_memory(server_id, LINEAGE, f"fact {i}") for i in range(2)]
    cmd = reinforce_command(ws, [("server", i) for i in [*ids, 10**12]], lineage_id=LINEAGE)
    _, real = await dry_then_real(db, "reinforce", cmd)
    assert msgspec.json.decode(real.answer.result)["data"]["count"] == 2


async def test_a_bio_seed(db):
    ws, _ = await db.workspace()
    host, _ = await db.user()
    identity, _ = await db.proxy([host])
    cmd = seed_bio_command(ws, identity, "a fox who likes tea")
    _, real = await dry_then_real(db, "seed_bio", cmd)
    assert real.answer.status == "seeded"
    assert await kept_owner(db, cmd.command_id) == ("personal", identity)


async def test_a_dry_run_of_a_command_seen_before_answers_the_stored_result_and_changes_nothing(db):
    ws, server_id = await db.workspace()
    persona = await db.persona(server_id, LINEAGE)
    cmd = server_save(ws, "likes oolong", lineage=LINEAGE, persona={"id": persona, "lineage_id": LINEAGE,
                                                                  "name": "Tomori"})
    first = await services(db.pool)["create"].run(cmd, 3)
    before = await snapshot(db)
    again = await DryRunning("create", services(db.pool)["create"], MemoryRepository(db.pool)).run(
        msgspec.structs.replace(cmd, dry_run=True), 4)
    assert again.answer.result == first.answer.result and again.events == []
    assert await snapshot(db) == before


async def test_a_restarted_sequence_is_foretold_too(db):
    """A sequence restarted (or set with is_called false) hands out its last value first."""
    ws, server_id = await db.workspace()
    persona = await db.persona(server_id, LINEAGE)
    restart = await db.pool.fetchval("SELECT coalesce(max(server_memory_id), 0) + 1000 FROM server_memories")
    await db.pool.execute(f"ALTER SEQUENCE {await db.pool.fetchval(_SEQUENCE)} RESTART WITH {restart}")
    _, real = await dry_then_real(db, "create", server_save(ws, "likes matcha", lineage=LINEAGE,
                                                            persona={"id": persona, "lineage_id": LINEAGE,
                                                                     "name": "Tomori"}))
    assert msgspec.json.decode(real.answer.result)["data"]["memory_id"] == restart


_SEQUENCE = "SELECT pg_get_serial_sequence('public.server_memories', 'server_memory_id')"


# A Discord id no other test uses: the directory row of the write no service asked for.
FORGOTTEN = "199999999999999999"


class ForgottenWrite(MemoryRepository):
    """Every owner transaction ends with a write no effect asked for: what a write added to a
    service outside the applier would be."""

    @asynccontextmanager
    async def owner_transaction(self, owners: Iterable[tuple[str, str]], **options: Any) -> AsyncIterator[Tx]:
        async with super().owner_transaction(owners, **options) as tx:
            yield tx
            await tx.conn.execute("INSERT INTO servers (server_disc_id) VALUES ($1) ON CONFLICT DO NOTHING", FORGOTTEN)


async def command_of(db: World, kind: str) -> Envelope:
    """A command of `kind` that changes rows when it runs for real."""
    ws, server_id = await db.workspace()
    if kind == "update":
        return update(ws, await db.server_memory(server_id, LINEAGE, "likes tea"), "likes green tea")
    if kind == "manual":
        return manual(ws, action="add_batch", contents=["likes tea"])
    if kind == "reinforce":
        return msgspec.convert({**envelope(ws), "lineage_id": LINEAGE, "memories": [
            {"scope": "server", "memory_id": await db.server_memory(server_id, LINEAGE, "likes jam")}]},
            ReinforceMemories)
    if kind == "seed_bio":
        host, _ = await db.user()
        identity, _ = await db.proxy([host])
        return SeedBio(command_id=uuid.uuid4().hex, issued_at=datetime.now(UTC), workspace_id=ws,
                       identity_user_id=identity, is_new_identity=True, bio="a fox who likes tea")
    return ShadowReport(command_id=uuid.uuid4().hex, issued_at=datetime.now(UTC), workspace_id=ws,
                        shadowed_id=uuid.uuid4().hex, kind="create", result={"success": True})


@pytest.mark.parametrize("kind", ["update", "manual", "reinforce", "seed_bio", "shadow"])
async def test_a_write_outside_the_applier_fails_a_dry_run_and_goes_through_a_real_one(db, kind):
    """A dry run's transaction is read-only: a write nobody foretold is refused, not rolled back."""
    await db.pool.execute("DELETE FROM servers WHERE server_disc_id = $1", FORGOTTEN)
    cmd = await command_of(db, kind)
    service = service_table(ForgottenWrite(db.pool), LIMITS)[kind]
    with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
        await service.run(msgspec.structs.replace(cmd, dry_run=True))
    assert await db.pool.fetchval("SELECT count(*) FROM servers WHERE server_disc_id = $1", FORGOTTEN) == 0
    await service.run(cmd)
    assert await db.pool.fetchval("SELECT count(*) FROM servers WHERE server_disc_id = $1", FORGOTTEN) == 1
