"""Explicit SQL. The owner lock is taken only by the SQL function memory_lock_owner(), which
two places call: memory_create_batch() (the create hot path: one round trip, one transaction)
and MemoryRepository.owner_transaction() (the panels, updates, reinforcement and bio seeds: a
Python transaction that reads and decides under the lock, and writes through db/applier.py)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

import asyncpg
import msgspec

from contracts.codec import encode
from contracts.events import Source
from db.connection import SERVER_SETTINGS, Timeouts
from db.requests import CreateBatchRequest, CreateContextRequest, ManualContextRequest, UpdateTargetRequest
from worker.kinds.create.record import CreateDecision, SaveSettled
from worker.kinds.update.record import UpdateDecision, UpdateRecord, UpdateSettled


class EventRow(msgspec.Struct, frozen=True):
    """One event as a command's inbox row keeps it (processed_commands.events) and as it is
    published: its subject, its headers (Nats-Msg-Id = its event id) and its JSON payload."""

    subject: str
    headers: dict[str, str]
    payload: msgspec.Raw


class _Stored(msgspec.Struct, frozen=True):
    """What every inbox row has, whatever its kind."""

    command_id: str
    kind: str
    workspace_id: str | None
    tenant: str
    event_time: str
    status: str | None = None
    result: str | None = None
    events: list[EventRow] | None = None
    applied_by: int | None = None


class StoredCommand(_Stored, frozen=True):
    """A command as its inbox row stores it: the one shape every reader gets
    (memory_stored_command(), db/functions/memory_stored_command.sql).

    A create keeps its `decision` and what its save learned under the lock (`facts`), an
    update its own (`update`: its decision and facts, another union, read by the row's kind:
    decode_stored); their answer and events are rendered from them (worker/services/stored.py).
    Every other kind keeps its `result` as sent, with its `status`, and its `events` whole (so
    does a create stored before db/migrations/009_decisions.sql, which keeps its result).
    `applied_by` is the MEMORY_COMMANDS stream sequence of the delivery that applied it (None:
    unknown, or no delivery); `event_time` when its transaction ran."""

    decision: CreateDecision | None = None
    facts: SaveSettled | None = None
    update: UpdateRecord | None = None


_NULL = msgspec.Raw(b"null")


class _StoredRow(_Stored, frozen=True):
    """memory_stored_command() as it comes: its decision and facts left as JSON until its kind
    says whose union they are."""

    decision: msgspec.Raw = _NULL
    facts: msgspec.Raw = _NULL

    def decoded(self) -> StoredCommand:
        decision: CreateDecision | None = None
        facts: SaveSettled | None = None
        update: UpdateRecord | None = None
        if bytes(self.decision) != b"null":
            if self.kind == "update":
                update = UpdateRecord(_UPDATE_DECISION.decode(self.decision),
                                      None if bytes(self.facts) == b"null" else _UPDATE_FACTS.decode(self.facts))
            else:
                decision = _CREATE_DECISION.decode(self.decision)
                facts = None if bytes(self.facts) == b"null" else _SAVE_FACTS.decode(self.facts)
        shared = {name: getattr(self, name) for name in _Stored.__struct_fields__}
        return StoredCommand(**shared, decision=decision, facts=facts, update=update)


_CREATE_DECISION = msgspec.json.Decoder(CreateDecision)
_SAVE_FACTS = msgspec.json.Decoder(SaveSettled)
_UPDATE_DECISION = msgspec.json.Decoder(UpdateDecision)
_UPDATE_FACTS = msgspec.json.Decoder(UpdateSettled)
_STORED_ROW = msgspec.json.Decoder(_StoredRow)


def decode_stored(raw: str | bytes) -> StoredCommand:
    """A memory_stored_command() value: a create's decision and facts, or an update's, decoded as
    the row's kind says."""
    return _STORED_ROW.decode(raw).decoded()


class WorkspaceRow(msgspec.Struct, frozen=True):
    server_id: int
    self_teaching_enabled: bool
    personal_memories_enabled: bool
    memory_decay_enabled: bool
    memory_decay_days: int
    member_teaching_enabled: bool = True  # read by the panel context only
    secret_guard_enabled: bool | None = None  # read by the create context only; None: the operator's default
    # Notice settings: read by the create context only.
    tool_notice_verbosity: str = "minimal"
    tool_notice_hidden_keys: list[str] = []
    thought_log_channel_id: str | None = None
    private_channel_ids: list[str] = []


class HostRow(msgspec.Struct, frozen=True):
    disc_id: str
    privacy_level: int
    blacklisted: bool


class UserRow(msgspec.Struct, frozen=True):
    user_id: int
    disc_id: str
    nickname: str | None
    privacy_level: int
    persona_nickname: str | None
    proxy_hosts: list[HostRow] | None = None  # set for proxy identities
    # Naming (directory_user_naming, directory_persona_naming for the command's lineage).
    prefix_override: str | None = None
    suffix_override: str | None = None
    addressing_style: str | None = None
    persona_naming: bool = False  # a naming row for the lineage exists (its fields may all be null)
    persona_prefix: str | None = None
    persona_suffix: str | None = None
    blacklisted: bool = False  # in the command's workspace


class IdentityRow(msgspec.Struct, frozen=True):
    user_id: int
    disc_id: str
    hosts: list[HostRow]
    privacy_level: int = 0


class PanelRow(msgspec.Struct, frozen=True):
    memory_id: int
    lineage_id: int
    content: str
    tags: list[str]
    manually_written: bool
    taught_by: str | None
    source: Source


class LineageRow(msgspec.Struct, frozen=True):
    """A row of the owner and exact lineage an import compares with and a replace deletes."""

    memory_id: int
    content: str
    tags: list[str]


class ManualContextRow(msgspec.Struct, frozen=True):
    workspace: WorkspaceRow | None
    actor_privacy_level: int
    actor_blacklisted: bool
    identity: IdentityRow | None
    identity_hosted_by_actor: bool
    owner_user_id: int | None
    count: int
    target: PanelRow | None
    existing: list[str]
    lineage_rows: list[LineageRow] = []


class SeedContextRow(msgspec.Struct, frozen=True):
    identity: IdentityRow | None
    already_seeded: bool
    lineage0_count: int


class CreateContextRow(msgspec.Struct, frozen=True):
    stored: StoredCommand | None  # the command, if it was seen before
    workspace: WorkspaceRow | None
    users: list[UserRow]


class _ContextRow(msgspec.Struct, frozen=True):
    """memory_create_context() as it comes (its stored command decoded by kind afterwards)."""

    stored: _StoredRow | None
    workspace: WorkspaceRow | None
    users: list[UserRow]

    def decoded(self) -> CreateContextRow:
        return CreateContextRow(None if self.stored is None else self.stored.decoded(), self.workspace, self.users)


class LockedMemoryRow(msgspec.Struct, frozen=True):
    lineage_id: int
    content: str
    source: Source
    manually_written: bool


class UpdateTargetRow(msgspec.Struct, frozen=True):
    """memory_update_target(): the memory (null: not within the owner and lineage) and, for a
    personal memory, the user's privacy level (null: no users row), blacklisting and a proxy
    identity's hosts."""

    memory: LockedMemoryRow | None
    privacy_level: int | None = None
    blacklisted: bool = False
    hosts: list[HostRow] | None = None


class BatchRow(msgspec.Struct, frozen=True):
    """One op's row of memory_create_batch(), in op order: the command as stored, by this op
    or (`duplicate`) by another delivery before it."""

    duplicate: bool
    stored: StoredCommand


_CONTEXTS = msgspec.json.Decoder(list[_ContextRow])
_UPDATE_TARGET = msgspec.json.Decoder(UpdateTargetRow)
_MANUAL_CONTEXT = msgspec.json.Decoder(ManualContextRow)
_SEED_CONTEXT = msgspec.json.Decoder(SeedContextRow)


def _init_connection(timeouts: Timeouts) -> Callable[[asyncpg.Connection], Awaitable[None]]:
    async def init(conn: asyncpg.Connection) -> None:
        timeouts.arm(conn)
        # asyncpg hands jsonb over as text; keeping it text lets msgspec decode it straight into
        # Structs, and lets a stored result be replied without a decode/encode round.
        for typ in ("json", "jsonb"):
            await conn.set_type_codec(typ, encoder=lambda v: v, decoder=lambda v: v, schema="pg_catalog")

    return init


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Release without asyncpg's default reset query (a round trip on every release).

    Pool connections never change session state: locks are transaction-scoped, nothing is
    SET, LISTENed or left open; asyncpg still rolls back a transaction left open.
    """


WORKER_TIMEOUTS = Timeouts(connect_s=10.0, command_s=20.0)


async def create_pool(dsn: str, *, min_size: int = 2, max_size: int = 20,
                      timeouts: Timeouts = WORKER_TIMEOUTS, tenant: str = "") -> asyncpg.Pool:
    """`tenant`: the bot this worker serves; every inbox row its connections store
    says so (db/migrations/004_tenants.sql). Give MemoryRepository the same."""
    tenant_setting = {TENANT_SETTING: tenant} if tenant else {}
    return await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, init=_init_connection(timeouts), reset=_keep_session,
        timeout=timeouts.connect_s, command_timeout=timeouts.command_s,
        # The lock and statement timeouts turn a stuck database into a retryable error
        # instead of a partition that silently stops; the command timeout does the same
        # for a database that stopped answering at all.
        server_settings={"lock_timeout": "5s", "statement_timeout": "15s",
                         "application_name": "memory-worker", **SERVER_SETTINGS, **timeouts.server_settings(),
                         **tenant_setting},
    )


def leaves_connection_usable(exc: BaseException) -> bool:
    """Whether a connection whose call raised `exc` may serve another call.

    Only an error the server reported, on a session it keeps, leaves the protocol at a clean
    point. A call cut short (the command timeout, a cancelled task), a protocol fault
    (asyncpg's InternalClientError) or a lost connection may leave a reply half read or a
    cancel request in flight; with the release hook that skips asyncpg's reset query
    (`_keep_session`), such a connection would go back to the pool as it is, and its next
    user would get `cannot switch to state 12; another operation (2) is in progress`.
    """
    return isinstance(exc, asyncpg.PostgresError) and not isinstance(
        exc, (asyncpg.PostgresConnectionError, asyncpg.AdminShutdownError, asyncpg.CannotConnectNowError))


@asynccontextmanager
async def connection(pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
    """A pooled connection that is closed, not reused, when a call on it fails uncleanly."""
    async with pool.acquire() as conn:
        try:
            yield conn
        except BaseException as exc:
            if not leaves_connection_usable(exc):
                # A connection the server closed is back in the pool's hands already (asyncpg
                # detaches it on close): nothing left to drop, and the first error stands.
                with suppress(asyncpg.InterfaceError):
                    conn.terminate()
            raise


# The session setting the inbox's and outbox's tenant columns default to (db/migrations/004_tenants.sql).
TENANT_SETTING = "memory_worker.tenant"


def lock_order(owners: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The one order in which a transaction takes several owner locks ((scope, Discord id)
    pairs): two transactions locking overlapping owners then never deadlock."""
    return sorted(set(owners))


class Tx:
    """The reads inside one owner-locked transaction (see MemoryRepository.owner_transaction).
    Writes are the applier's (db/applier.py), which carries out a command's effects, or, in a
    read-only transaction (a dry run), foretells them."""

    def __init__(self, conn: asyncpg.Connection, tenant: str = "", *, read_only: bool = False) -> None:
        self.conn = conn
        self.tenant = tenant  # the repository's: what seen_before() compares a stored row's with
        self.read_only = read_only  # the transaction is READ ONLY: a dry run's

    @property
    def shadow_pairs(self) -> ShadowPairs:
        return ShadowPairs(self.conn, self.tenant)

    async def stored(self, command_id: str) -> StoredCommand | None:
        """The command as stored, if it was seen before."""
        raw = await self.conn.fetchval(
            "SELECT memory_stored_command(pc) FROM processed_commands pc WHERE pc.command_id = $1", command_id)
        return None if raw is None else decode_stored(raw)

    async def manual_context(self, request: ManualContextRequest) -> ManualContextRow:
        raw = await self.conn.fetchval("SELECT memory_manual_context($1::jsonb)", encode(request).decode())
        return _MANUAL_CONTEXT.decode(raw)

    async def seed_context(self, identity: str, workspace_id: str) -> SeedContextRow:
        raw = await self.conn.fetchval("SELECT memory_seed_context($1, $2)", identity, workspace_id)
        return _SEED_CONTEXT.decode(raw)

    async def update_target(self, request: UpdateTargetRequest) -> UpdateTargetRow:
        raw = await self.conn.fetchval("SELECT memory_update_target($1::jsonb)", encode(request).decode())
        return _UPDATE_TARGET.decode(raw)

    async def personal_owners(self, memory_ids: Sequence[int], lineage_id: int) -> list[str]:
        """The Discord ids owning these personal memories (of the lineage or lineage 0)."""
        rows = await self.conn.fetch(
            "SELECT DISTINCT u.user_disc_id FROM personal_memories m JOIN users u ON u.user_id = m.user_id"
            " WHERE m.personal_memory_id = ANY($1::bigint[]) AND m.persona_lineage_id IN ($2, 0)",
            list(memory_ids), lineage_id)
        return [r[0] for r in rows]

    async def lock_owners(self, owners: Iterable[tuple[str, str]]) -> None:
        for scope, owner_id in lock_order(owners):
            await self.conn.execute("SELECT memory_lock_owner($1, $2)", scope, owner_id)


class ShadowPairRow(msgspec.Struct, frozen=True):
    """A shadowed command's dry run, as memory_worker.shadow_pairs keeps it, with whose it is."""

    tenant: str
    workspace_id: str
    kind: str
    dry_status: str | None
    dry_result: dict[str, Any] | None
    intended: str | None = None
    owner: tuple[str, str] | None = None  # whose memories it would have created: (scope, Discord id)


class ShadowPairs:
    """memory_worker.shadow_pairs (db/migrations/012_shadow_pairs.sql, 013_shadow_outcomes.sql):
    a dry run's answer, then the bot's own outcome beside it. Only the repository's tenant's
    rows are written."""

    def __init__(self, conn: asyncpg.Connection | _Calls, tenant: str) -> None:
        self._conn = conn
        self._tenant = tenant

    async def record_dry_run(self, command_id: str, kind: str, workspace_id: str, status: str,
                             result_json: bytes, intended: str | None = None,
                             owner: tuple[str, str] | None = None) -> None:
        """The dry run's answer: the one row a dry run writes (a redelivery's is dropped).
        `intended`: why a difference here would be on purpose (secret_guard), or None;
        `owner`: the lock key of the owner whose memories it would have created, or None."""
        scope, owner_id = owner if owner is not None else (None, None)
        await self._conn.execute(
            "INSERT INTO shadow_pairs (command_id, tenant, kind, workspace_id, dry_status, dry_result, dry_at, intended,"
            " owner_scope, owner_id) VALUES ($1, $2, $3, $4, $5, $6::jsonb, now(), $7, $8, $9)"
            " ON CONFLICT (command_id) DO NOTHING",
            command_id, self._tenant, kind, workspace_id, status, result_json.decode(), intended, scope, owner_id)

    async def pair_of(self, command_id: str, *, lock: bool = True) -> ShadowPairRow | None:
        """The pair under this command id, whichever workspace and bot it is of (the caller
        refuses another's), locked until the report is stored (`lock` false: read only, for a
        report's own dry run; a row lock is a write)."""
        row = await self._conn.fetchrow(
            "SELECT tenant, workspace_id, kind, dry_status, dry_result::text, intended, owner_scope, owner_id"
            " FROM shadow_pairs WHERE command_id = $1" + (" FOR UPDATE" if lock else ""), command_id)
        if row is None:
            return None
        return ShadowPairRow(row[0], row[1], row[2], row[3], None if row[4] is None else msgspec.json.decode(row[4]),
                             row[5], None if row[6] is None else (row[6], row[7]))

    async def inserted_between(self, owner: tuple[str, str], first: int, last: int, skip: Sequence[int]) -> bool:
        """Does the owner's table hold a row of this owner with an id from `first` to `last`,
        other than `skip`'s? (An insert between a dry run, which foresaw `first`, and the bot's
        own write, which got `skip`.)"""
        scope, owner_id = owner
        table, key = _TABLES[scope]
        owners, owner_key, disc_id = (("servers", "server_id", "server_disc_id") if scope == "server"
                                      else ("users", "user_id", "user_disc_id"))
        found: bool = await self._conn.fetchval(
            f"SELECT EXISTS (SELECT 1 FROM {table} m JOIN {owners} o ON o.{owner_key} = m.{owner_key}"
            f" WHERE o.{disc_id} = $1 AND m.{key} BETWEEN $2 AND $3 AND m.{key} <> ALL($4::bigint[]))",
            owner_id, first, last, list(skip))
        return found

    async def record_report(self, command_id: str, kind: str, workspace_id: str, *, bot_status: str | None,
                            bot_result: bytes | None, bot_error: str | None, outcome: str,
                            differences: bytes) -> bool:
        """The bot's outcome beside its dry run (a repeat of the report overwrites it with the
        same); a report of no dry run gets a row of its own. Whether it was stored: another
        tenant's or workspace's row under the same id is left alone."""
        status = await self._conn.execute(
            "INSERT INTO shadow_pairs AS p (command_id, tenant, kind, workspace_id, bot_status, bot_result, bot_error,"
            " outcome, differences, reported_at)"
            " VALUES ($1, $9, $2, $3, $4, $5::jsonb, $6, $7, $8::jsonb, now())"
            " ON CONFLICT (command_id) DO UPDATE SET bot_status = excluded.bot_status,"
            " bot_result = excluded.bot_result, bot_error = excluded.bot_error, outcome = excluded.outcome,"
            " differences = excluded.differences, reported_at = excluded.reported_at"
            " WHERE p.tenant = excluded.tenant AND p.workspace_id = excluded.workspace_id",
            command_id, kind, workspace_id, bot_status, None if bot_result is None else bot_result.decode(),
            bot_error, outcome, differences.decode(), self._tenant)
        return bool(status.endswith(" 1"))


_TABLES = {"server": ("server_memories", "server_memory_id"), "personal": ("personal_memories", "personal_memory_id")}


class _Calls:
    """The pool's one-call shortcuts (fetchval, fetchrow, fetch, execute), each on a
    connection() so that a call failing uncleanly does not hand its connection on."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def fetchval(self, sql: str, *args: Any) -> Any:
        async with connection(self._pool) as conn:
            return await conn.fetchval(sql, *args)

    async def fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        async with connection(self._pool) as conn:
            return await conn.fetchrow(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        async with connection(self._pool) as conn:
            rows: list[asyncpg.Record] = await conn.fetch(sql, *args)
            return rows

    async def execute(self, sql: str, *args: Any) -> str:
        async with connection(self._pool) as conn:
            status: str = await conn.execute(sql, *args)
            return status


class MemoryRepository:
    def __init__(self, pool: asyncpg.Pool, tenant: str = "") -> None:
        """`tenant`: as given to create_pool for `pool`."""
        self._raw_pool = pool
        self._pool: _Calls | asyncpg.Connection = _Calls(pool)  # what each call runs on
        self.tenant = tenant

    @asynccontextmanager
    async def session(self) -> AsyncIterator[MemoryRepository]:
        """This repository with every call on one pooled connection, acquired once (and closed,
        not reused, should a call fail uncleanly): for a create's or a batch's context read
        and writes, which run one after the other. Taking and giving back a pooled connection
        costs about as much client CPU as a short call itself (asyncpg's pool shields each
        release in a task of its own), so a create alone paid it twice.

        The session is a shallow copy: the same class (a test's subclass keeps its overrides)
        and attributes, but its own `_pool`; state a subclass keeps in its attributes is shared
        with the session only through mutable objects."""
        async with connection(self._raw_pool) as conn:
            bound = copy.copy(self)  # the same repository (a test's subclass too), on `conn`
            bound._pool = conn
            yield bound

    @asynccontextmanager
    async def owner_transaction(self, owners: Iterable[tuple[str, str]], *,
                                read_only: bool = False) -> AsyncIterator[Tx]:
        """One transaction holding the advisory locks of `owners` ((scope, Discord id) pairs)
        from its first statement to commit or rollback. A caller that learns its owners inside
        the transaction (reinforcement) passes none and calls Tx.lock_owners once, with all.
        `read_only`: a dry run's, READ ONLY from its BEGIN: PostgreSQL refuses every write in
        it (and a row lock), wherever it comes from, so a dry run cannot write, not even to
        roll back. The advisory locks and the reads are the same as a real run's."""
        async with connection(self._raw_pool) as conn:
            transaction = conn.transaction(readonly=read_only)
            await transaction.start()
            try:
                tx = Tx(conn, self.tenant, read_only=read_only)
                await tx.lock_owners(owners)
                yield tx
            except BaseException:
                await transaction.rollback()
                raise
            await transaction.commit()

    async def create_contexts(self, requests: Sequence[CreateContextRequest]) -> list[CreateContextRow]:
        """memory_create_context() of one or several commands in one round trip, in order."""
        raw = await self._pool.fetchval("SELECT memory_create_contexts($1::jsonb)", encode(requests).decode())
        return [row.decoded() for row in _CONTEXTS.decode(raw)]

    async def create_batch(self, batch: CreateBatchRequest) -> list[BatchRow]:
        """memory_create_batch(): the decisions of several creates stored and carried out, one
        transaction; a row per op, in order."""
        rows = await self._pool.fetch("SELECT duplicate, stored FROM memory_create_batch($1::jsonb)",
                                      encode(batch).decode())
        return [BatchRow(row[0], decode_stored(row[1])) for row in rows]

    async def create_dry_batch(self, batch: CreateBatchRequest) -> list[BatchRow]:
        """memory_create_dry_batch(): the same decisions under the same locks, nothing written;
        a row per op, in order, each the command as it would have been stored."""
        rows = await self._pool.fetch("SELECT duplicate, stored FROM memory_create_dry_batch($1::jsonb)",
                                      encode(batch).decode())
        return [BatchRow(row[0], decode_stored(row[1])) for row in rows]

    async def stored_command(self, command_id: str, workspace_id: str) -> StoredCommand | None:
        """A command of this workspace and tenant as stored (never another's)."""
        raw = await self._pool.fetchval(
            "SELECT memory_stored_command(pc) FROM processed_commands pc WHERE pc.command_id = $1"
            " AND pc.workspace_id = $2 AND pc.tenant = $3", command_id, workspace_id, self.tenant)
        return None if raw is None else decode_stored(raw)

    @property
    def shadow_pairs(self) -> ShadowPairs:
        return ShadowPairs(self._pool, self.tenant)

    async def prune(self, inbox_days: int, batch: int) -> int:
        """Remove at most `batch` inbox rows past their retention (worker/consuming/administration/inbox_prune.py)."""
        pruned: int = await self._pool.fetchval("SELECT memory_prune($1, $2)", inbox_days, batch)
        return pruned
