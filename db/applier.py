"""The one place a command's effects (db/effects.py) meet the database: carried out in a
transaction that may write, foretold in a read-only one (a dry run).

A dry run's transaction is READ ONLY (MemoryRepository.owner_transaction), so any write in it,
here or anywhere else, fails loudly instead of being rolled back; what a dry run answers is
what the reads foretell: the ids the sequences give next (memory_next_id, a guess a concurrent
insert beats), the rows a lineage delete would remove (read with the facts, before deciding),
the rows a reinforcement would mark, and the inbox row as it would be stored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import assert_never, overload

import asyncpg

from contracts.codec import encode
from db import directory
from db.effects import (
    Applied,
    DeleteLineage,
    DeleteMemory,
    DirectoryRow,
    Effect,
    InboxRow,
    InsertPersonalMemories,
    InsertServerMemories,
    ModelEdit,
    PanelEdit,
    Reinforce,
    SeedBioMemory,
    StoreDecision,
    StoreResult,
)
from db.inbox import StoredInboxRow, decode_inbox_row
from db.transaction import Tx
from worker.domain.memory import MemoryEntry

__all__ = ["carry_out", "store"]


async def carry_out(tx: Tx, effects: Sequence[Effect]) -> Applied:
    """The effects in order; what they learned. In a dry run nothing is written: what they would learn."""
    inserted: list[int] = []
    removed: list[tuple[int, str]] = []
    marked = 0
    foretold: dict[str, int] = {}  # a dry run's inserts so far, by scope: the next ids are theirs
    for effect in effects:
        if tx.read_only:
            ids, gone, count = await _foretell(tx, effect, foretold)
        else:
            ids, gone, count = await _apply(tx, effect)
        inserted += ids
        removed += gone
        marked += count
    return Applied(tuple(inserted), tuple(removed), marked)


@overload
async def store(tx: Tx, row: StoreDecision) -> StoredInboxRow: ...
@overload
async def store(tx: Tx, row: StoreResult) -> None: ...
async def store(tx: Tx, row: InboxRow) -> StoredInboxRow | None:
    """The command's inbox row; the row as stored for a decision (its answer and events are
    rendered from it), None for a result, which the caller already holds. A dry run stores
    nothing and gets the row it would have stored."""
    match row:
        case StoreDecision():
            if tx.read_only:
                return _unstored(tx, row)
            raw = await tx.conn.fetchval(
                "INSERT INTO processed_commands (command_id, kind, workspace_id, decision, facts, applied_by)"
                " VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6) RETURNING memory_stored_command(processed_commands)",
                row.command_id, row.kind, row.workspace_id, encode(row.decision).decode(),
                None if row.facts is None else encode(row.facts).decode(), row.applied_by)
            return decode_inbox_row(raw)
        case StoreResult():
            if not tx.read_only:
                # `result` is a json column, which keeps the text as sent, so a first answer and
                # a repeat are byte-identical.
                await tx.conn.execute(
                    "INSERT INTO processed_commands (command_id, kind, workspace_id, status, result, events, applied_by)"
                    " VALUES ($1, $2, $3, $4, $5::json, $6::jsonb, $7)",
                    row.command_id, row.kind, row.workspace_id, row.status, row.result.decode(),
                    encode(list(row.events)).decode() if row.events else None, row.applied_by)
            return None
        case _:
            assert_never(row)


_Learned = tuple[list[int], list[tuple[int, str]], int]
_NOTHING: _Learned = ([], [], 0)


async def _apply(tx: Tx, effect: Effect) -> _Learned:
    conn = tx.conn
    match effect:
        case InsertServerMemories():
            server_id = await _key(tx, effect.server, directory.ensure_server)
            teacher = None if effect.teacher is None else await _key(tx, effect.teacher, directory.ensure_user)
            rows = await conn.fetch(
                "INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, user_id, content, tags,"
                " manually_written, source)"
                f" SELECT $1, $2, $3, $4, {_ENTRY_COLUMNS}, $7, $6 FROM jsonb_array_elements($5::jsonb)"
                " WITH ORDINALITY AS t(e, n) ORDER BY n RETURNING server_memory_id",
                server_id, effect.persona_id, effect.lineage_id, teacher, _entries(effect.entries), effect.source,
                effect.manually_written)
            return sorted(r[0] for r in rows), [], 0
        case InsertPersonalMemories():
            user_id = await _key(tx, effect.user, directory.ensure_user)
            rows = await conn.fetch(
                "INSERT INTO personal_memories (user_id, persona_lineage_id, content, tags, manually_written, source)"
                f" SELECT $1, $2, {_ENTRY_COLUMNS}, $5, $4 FROM jsonb_array_elements($3::jsonb)"
                " WITH ORDINALITY AS t(e, n) ORDER BY n RETURNING personal_memory_id",
                user_id, effect.lineage_id, _entries(effect.entries), effect.source, effect.manually_written)
            return sorted(r[0] for r in rows), [], 0
        case SeedBioMemory():
            memory_id: int = await conn.fetchval(_SEED_BIO, effect.user_id, effect.lineage_id, effect.content)
            return [memory_id], [], 0
        case DeleteMemory():
            table, key = _TABLES[effect.scope]
            await conn.execute(f"DELETE FROM {table} WHERE {key} = $1", effect.memory_id)
            return _NOTHING
        case DeleteLineage():
            table, key = _TABLES[effect.scope]
            rows = await conn.fetch(f"DELETE FROM {table} WHERE {_OWNER_COLUMN[effect.scope]} = $1"
                                    f" AND persona_lineage_id = $2 RETURNING {key}, content",
                                    effect.owner_key, effect.lineage_id)
            return [], sorted((r[0], r[1]) for r in rows), 0
        case ModelEdit():
            table, key = _TABLES[effect.scope]
            await conn.execute(
                f"UPDATE {table} SET content = $2, last_reinforced_at = now(), updated_at = now() WHERE {key} = $1",
                effect.memory_id, effect.content)
            return _NOTHING
        case PanelEdit():
            table, key = _TABLES[effect.scope]
            await conn.execute(
                f"UPDATE {table} SET content = $2, tags = $3, manually_written = true, updated_at = now()"
                f" WHERE {key} = $1", effect.memory_id, effect.content, list(effect.tags))
            return _NOTHING
        case Reinforce():
            count: int = await conn.fetchval(_REINFORCE, *_reinforced(effect))
            return [], [], count
        case _:
            assert_never(effect)


async def _foretell(tx: Tx, effect: Effect, foretold: dict[str, int]) -> _Learned:
    """What `effect` would learn, by reads alone."""
    match effect:
        case InsertServerMemories() | InsertPersonalMemories() | SeedBioMemory():
            scope, count = _inserts(effect)
            first: int = await tx.conn.fetchval("SELECT memory_next_id($1)", scope) + foretold.get(scope, 0)
            foretold[scope] = foretold.get(scope, 0) + count
            return list(range(first, first + count)), [], 0
        case DeleteLineage():
            return [], sorted(effect.rows), 0
        case Reinforce():
            count_marked: int = await tx.conn.fetchval(_REINFORCED_COUNT, *_reinforced(effect))
            return [], [], count_marked
        case DeleteMemory() | ModelEdit() | PanelEdit():
            return _NOTHING
        case _:
            assert_never(effect)


def _inserts(effect: InsertServerMemories | InsertPersonalMemories | SeedBioMemory) -> tuple[str, int]:
    """The scope an insert's ids come from, and how many it takes."""
    match effect:
        case InsertServerMemories():
            return "server", len(effect.entries)
        case InsertPersonalMemories():
            return "personal", len(effect.entries)
        case SeedBioMemory():
            return "personal", 1
        case _:
            assert_never(effect)


def _unstored(tx: Tx, row: StoreDecision) -> StoredInboxRow:
    """The inbox row a decision would be stored as, decoded as a stored one is, by its kind."""
    return decode_inbox_row(encode({
        "command_id": row.command_id, "kind": row.kind, "workspace_id": row.workspace_id, "tenant": tx.tenant,
        # memory_event_time()'s format: the time the events of a stored row would carry.
        "event_time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"),
        "decision": row.decision, "facts": row.facts}))


async def _key(tx: Tx, row: DirectoryRow, ensure: Callable[[asyncpg.Connection, str], Awaitable[int]]) -> int:
    return row.key if row.key is not None else await ensure(tx.conn, row.disc_id)


def _entries(entries: Sequence[MemoryEntry]) -> str:
    return encode(list(entries)).decode()


def _reinforced(effect: Reinforce) -> tuple[str, int, list[int], list[int]]:
    return effect.workspace_id, effect.lineage_id, list(effect.server_ids), list(effect.personal_ids)


_TABLES = {"server": ("server_memories", "server_memory_id"), "personal": ("personal_memories", "personal_memory_id")}
_OWNER_COLUMN = {"server": "server_id", "personal": "user_id"}
# A MemoryEntry's columns, read from each element `e` of a JSON array of entries.
_ENTRY_COLUMNS = "e ->> 'content', ARRAY(SELECT jsonb_array_elements_text(e -> 'tags'))"
# The bio row and its seed mark, in one statement.
_SEED_BIO = (
    "WITH m AS (INSERT INTO personal_memories (user_id, persona_lineage_id, content, tags, manually_written, source)"
    " VALUES ($1, $2, $3, '{}', false, 'bio_seed') RETURNING personal_memory_id),"
    " s AS (INSERT INTO bio_seeds (user_id, memory_id) SELECT $1, personal_memory_id FROM m)"
    " SELECT personal_memory_id FROM m")
# The rows a reinforcement marks as used, and how many it would mark (a dry run): one predicate each.
_REINFORCED_SERVER = ("w.server_id = m.server_id AND w.server_disc_id = $1"
                      " AND m.persona_lineage_id = $2 AND m.server_memory_id = ANY($3::bigint[])")
_REINFORCED_PERSONAL = "persona_lineage_id IN ($2, 0) AND personal_memory_id = ANY($4::bigint[])"
_REINFORCE = (
    "WITH s AS (UPDATE server_memories m SET last_reinforced_at = now(),"
    f" reinforcement_count = reinforcement_count + 1 FROM servers w WHERE {_REINFORCED_SERVER} RETURNING 1),"
    " p AS (UPDATE personal_memories SET last_reinforced_at = now(),"
    f" reinforcement_count = reinforcement_count + 1 WHERE {_REINFORCED_PERSONAL} RETURNING 1)"
    " SELECT (SELECT count(*) FROM s) + (SELECT count(*) FROM p)")
_REINFORCED_COUNT = (f"SELECT (SELECT count(*) FROM server_memories m, servers w WHERE {_REINFORCED_SERVER})"
                     f" + (SELECT count(*) FROM personal_memories WHERE {_REINFORCED_PERSONAL})")
