"""The chaos workload and its checks, shared by the worker-kill and the dependency-outage tests.

Workload (sizes scale with the number of commands N, seeded):
- "evict" workspaces: decay on (30 days), pre-filled to the cap (MAX_SERVER_MEMORIES=20)
  with legacy rows 40+ days old: each save evicts the oldest legacy row until none is left,
  then saves are refused (limit_exceeded), since fresh model rows are not dormant;
- "below" workspaces: decay off, pre-filled below the cap: saves until the cap, then refusals;
- personal owners: users pre-filled to MAX_PERSONAL_MEMORIES with old legacy rows, saved to
  from the evict workspaces (so their saves evict too).
Every command gets a unique content (`chaos note <command_id>`), so its effect can be found.

A server owner's commands all go through one partition, so their outcomes are predicted one
by one in publish order; a personal owner's commands come from several workspaces (several
partitions), so only their number per outcome is predicted.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg
import nats
import nats.errors
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts import subjects
from contracts.kinds.create import LIMIT_EXCEEDED, SAVED, SAVED_WITH_EVICTION
from db.migrate import migrate_dsn
from tests.support.answers import stored_answers
from tests.support.commands import create_bytes, create_fields
from tests.support.directory import add_triggerer
from tests.support.logs import log_events
from tests.support.partitions import partition_of
from tests.support.publishing import publish_until_stored
from worker.client.memory_client import lookup_result

CAP = 20
LINEAGE = 7
DECAY_DAYS = 30
BELOW_CAP_PREFILL = 14
BOT_ID = "990000000000000001"
GOOD_RETRIEVAL = {"rag_available": True, "embedding_model": "m", "embedding_credentials": True}
SAVED_STATUSES = (SAVED, SAVED_WITH_EVICTION)


# --------------------------------------------------------------------------- workload

@dataclass(frozen=True)
class Owner:
    scope: str  # server | personal
    owner_id: str  # workspace id, or the user's Discord id
    may_evict: bool
    ordered: bool  # all its commands go through one partition
    legacy: tuple[str, ...]  # pre-filled contents, oldest first (the eviction order)
    name: str = ""  # personal: the display name the model uses as target_user

    @property
    def key(self) -> tuple[str, str]:
        return self.scope, self.owner_id


@dataclass(frozen=True)
class Command:
    command_id: str
    workspace_id: str
    owner: Owner
    content: str

    @property
    def subject(self) -> str:
        return subjects.command_subject("create", self.workspace_id)

    def payload(self, reply_to: str | None) -> bytes:
        if self.owner.scope == "server":
            fields = create_fields(self.workspace_id, self.content, lineage_id=LINEAGE, retrieval=GOOD_RETRIEVAL)
        else:
            fields = create_fields(self.workspace_id, self.content, scope="target_user", target=self.owner.name,
                                   lineage_id=LINEAGE, retrieval=GOOD_RETRIEVAL,
                                   member_matches=[{"id": self.owner.owner_id, "display_name": self.owner.name}])
        return create_bytes(fields, command_id=self.command_id, reply_to=reply_to)


@dataclass
class Scenario:
    commands: list[Command]
    evict_workspaces: list[Owner]
    below_workspaces: list[Owner]
    personal_owners: list[Owner]

    @property
    def owners(self) -> list[Owner]:
        return self.evict_workspaces + self.below_workspaces + self.personal_owners

    @classmethod
    def build(cls, n: int, seed: int, tag: str = "c") -> Scenario:
        rng = random.Random(seed)
        run = uuid.uuid4().hex[:6]
        # About 30 commands per evict workspace: 20 evictions, then refusals. At most 100.
        n_evict = max(4, min(100, round(n * 0.7 / 30)))
        n_below = max(2, min(40, n // 30))
        n_users = max(2, min(20, n // 60))

        def legacy(prefix: str) -> tuple[str, ...]:
            return tuple(f"legacy {prefix} #{j}" for j in range(CAP))

        evict = [Owner("server", f"91{i:016d}", True, True, legacy(f"ws 91{i:016d}")) for i in range(n_evict)]
        below = [Owner("server", f"92{i:016d}", False, True, legacy(f"ws 92{i:016d}")[:BELOW_CAP_PREFILL])
                 for i in range(n_below)]
        users = [Owner("personal", f"93{i:016d}", True, False, legacy(f"user 93{i:016d}"), name=f"chaosuser{i}")
                 for i in range(n_users)]
        commands = []
        for i in range(n):
            cid = f"chaos-{tag}-{run}-{i:05d}"
            roll = rng.random()
            if roll < 0.10:
                owner = rng.choice(users)
                workspace = rng.choice(evict).owner_id  # decay on: personal saves may evict
            elif roll < 0.30:
                owner = rng.choice(below)
                workspace = owner.owner_id
            else:
                owner = rng.choice(evict)
                workspace = owner.owner_id
            commands.append(Command(cid, workspace, owner, f"chaos note {cid}"))
        return cls(commands, evict, below, users)

    def phases(self, count: int, partitions: int) -> list[list[Command]]:
        """The commands in `count` groups whose workspaces live in disjoint sets of partitions.

        Publishing group after group, and killing the worker while a group is being worked
        through, keeps every kill in the middle of work: the partitions a kill stalls (until
        ACK_WAIT_SECONDS redelivers their in-flight command) are not the next group's. The
        commands are re-ordered to the groups' order, which becomes the publish order (an
        owner's commands keep their relative order).
        """
        groups: list[list[Command]] = [[] for _ in range(count)]
        for cmd in self.commands:
            partition = partition_of(subjects.encode_token(cmd.workspace_id), partitions)
            groups[partition * count // partitions].append(cmd)
        self.commands = [cmd for group in groups for cmd in group]
        return groups

    async def prepare(self, dsn: str) -> None:
        """Migrate the database and write the bot's directory rows and the legacy memories."""
        await migrate_dsn(dsn)
        conn = await asyncpg.connect(dsn)
        now = datetime.now(UTC)

        def created(j: int) -> datetime:
            # Oldest first: row j is (CAP - j) * 10 days + 40 days old, never reinforced.
            return now - timedelta(days=40 + (CAP - j) * 10)

        try:
            async with conn.transaction():
                await add_triggerer(conn)
                for owner in self.evict_workspaces + self.below_workspaces:
                    server_id = await conn.fetchval(
                        "INSERT INTO servers (server_disc_id, memory_decay_enabled, memory_decay_days)"
                        " VALUES ($1, $2, $3) RETURNING server_id", owner.owner_id, owner.may_evict, DECAY_DAYS)
                    await conn.executemany(
                        "INSERT INTO server_memories (server_id, persona_lineage_id, content, source, created_at)"
                        " VALUES ($1, $2, $3, 'legacy', $4)",
                        [(server_id, LINEAGE, content, created(j)) for j, content in enumerate(owner.legacy)])
                for owner in self.personal_owners:
                    user_id = await conn.fetchval(
                        "INSERT INTO users (user_disc_id, user_nickname) VALUES ($1, $2) RETURNING user_id",
                        owner.owner_id, owner.name)
                    await conn.executemany(
                        "INSERT INTO personal_memories (user_id, persona_lineage_id, content, source, created_at)"
                        " VALUES ($1, $2, $3, 'legacy', $4)",
                        [(user_id, LINEAGE, content, created(j)) for j, content in enumerate(owner.legacy)])
        finally:
            await conn.close()

    def expected(self) -> tuple[dict[str, str], dict[tuple[str, str], Counter]]:
        """Per command (ordered owners) and per owner (all owners): the predicted statuses."""
        per_command: dict[str, str] = {}
        per_owner: dict[tuple[str, str], Counter] = {}
        by_owner: dict[tuple[str, str], list[Command]] = defaultdict(list)
        for cmd in self.commands:
            by_owner[cmd.owner.key].append(cmd)
        for owner in self.owners:
            count, eligible = len(owner.legacy), len(owner.legacy) if owner.may_evict else 0
            tally: Counter = Counter()
            for cmd in by_owner[owner.key]:
                if count < CAP:
                    status, count = SAVED, count + 1
                elif count == CAP and eligible:
                    status, eligible = SAVED_WITH_EVICTION, eligible - 1
                else:
                    status = LIMIT_EXCEEDED
                tally[status] += 1
                if owner.ordered:
                    per_command[cmd.command_id] = status
            per_owner[owner.key] = tally
        return per_command, per_owner


# --------------------------------------------------------------------------- the bot

class Bot:
    """Publishes commands as a bot does (Nats-Msg-Id = command id, reply_to on its own inbox),
    without waiting for results; retries a publish with the same id until JetStream stores it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.prefix = f"_INBOX.chaos.{uuid.uuid4().hex}"
        self.replies: dict[str, list[bytes]] = defaultdict(list)
        self.publish_retries = 0
        self.published = 0
        self.duplicate_acks = 0
        self.disconnects = 0

    async def start(self) -> Bot:
        async def disconnected() -> None:
            self.disconnects += 1

        async def quiet(exc: Exception) -> None:  # reconnect noise during the NATS outage
            pass

        self.nc = await nats.connect(self.url, name="chaos-bot", max_reconnect_attempts=-1,
                                     reconnect_time_wait=0.25, connect_timeout=2,
                                     disconnected_cb=disconnected, error_cb=quiet)
        self.js = self.nc.jetstream()
        await self.nc.subscribe(f"{self.prefix}.*", cb=self._on_reply)
        return self

    async def close(self) -> None:
        await self.nc.close()

    async def _on_reply(self, msg) -> None:
        self.replies[msg.subject.rsplit(".", 1)[1]].append(msg.data)

    def reply_to(self, command_id: str) -> str:
        return f"{self.prefix}.{command_id}"

    async def publish(self, cmd: Command, *, give_up_after: float = 90.0) -> None:
        ack, failures = await publish_until_stored(self.js, cmd.subject, cmd.payload(self.reply_to(cmd.command_id)),
                                                   cmd.command_id, give_up_after=give_up_after)
        self.publish_retries += failures
        self.published += 1
        self.duplicate_acks += bool(ack.duplicate)

    async def publish_all(self, commands: list[Command]) -> None:
        for cmd in commands:
            await self.publish(cmd)

    async def lookup(self, workspace_id: str, command_id: str) -> bytes | None:
        """What a bot does when its reply went missing: ask the worker for the stored result."""
        return await lookup_result(self.nc, workspace_id, command_id)


# --------------------------------------------------------------------------- database probes

class Db:
    """The test's own view of the database; reconnects after an outage."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn: asyncpg.Connection | None = None

    async def _connection(self) -> asyncpg.Connection:
        if self.conn is None or self.conn.is_closed():
            self.conn = await asyncpg.connect(self.dsn, timeout=2)
        return self.conn

    async def fetch(self, sql: str, *args):
        return await (await self._connection()).fetch(sql, *args)

    async def fetchval(self, sql: str, *args):
        return await (await self._connection()).fetchval(sql, *args)

    async def processed(self, command_ids: list[str] | None = None) -> int | None:
        """Stored results so far (of these commands), or None while the database is away."""
        try:
            if command_ids is None:
                return await self.fetchval("SELECT count(*) FROM processed_commands")
            return await self.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = ANY($1::text[])",
                                       command_ids)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncio.TimeoutError):
            self.conn = None
            return None

    async def wait_processed(self, at_least: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while True:
            done = await self.processed()
            if done is not None and done >= at_least:
                return done
            if time.monotonic() > deadline:
                raise AssertionError(f"only {done} of {at_least} commands have a stored result after {timeout}s")
            await asyncio.sleep(0.05)

    async def close(self) -> None:
        if self.conn is not None and not self.conn.is_closed():
            await self.conn.close()


# --------------------------------------------------------------------------- stream reads

@dataclass(frozen=True)
class Event:
    seq: int
    subject: str
    msg_id: str | None
    data: bytes


async def read_events(nc, timeout: float = 60.0) -> list[Event]:
    """Every message of MEMORY_EVENTS, in stream order, through an ephemeral pull consumer."""
    js = nc.jetstream()
    name = f"chaos_{uuid.uuid4().hex}"
    await js.add_consumer(subjects.EVENTS_STREAM, ConsumerConfig(
        name=name, deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.NONE, inactive_threshold=60.0))
    pending = (await js.consumer_info(subjects.EVENTS_STREAM, name)).num_pending
    out: list[Event] = []
    if pending:
        sub = await js.pull_subscribe_bind(consumer=name, stream=subjects.EVENTS_STREAM)
        try:
            deadline = time.monotonic() + timeout
            while len(out) < pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"read {len(out)} of {pending} messages of {subjects.EVENTS_STREAM}")
                for msg in await sub.fetch(batch=min(1000, pending - len(out)), timeout=min(left, 10.0)):
                    out.append(Event(msg.metadata.sequence.stream, msg.subject,
                                     (msg.headers or {}).get("Nats-Msg-Id"), msg.data))
        finally:
            await sub.unsubscribe()
    stored = (await js.stream_info(subjects.EVENTS_STREAM)).state.messages
    if stored != len(out):
        raise AssertionError(f"{subjects.EVENTS_STREAM} holds {stored} messages, read {len(out)}")
    return sorted(out, key=lambda e: e.seq)


async def dead_letters(nc) -> int:
    return (await nc.jetstream().stream_info(subjects.DLQ_STREAM)).state.messages


async def wait_commands_acknowledged(nc, timeout: float) -> int:
    """Wait until every command in MEMORY_COMMANDS is acknowledged; returns how many are not.
    A command is acknowledged only once its events are stored in MEMORY_EVENTS, so 0 also
    means no applied command's events are still waiting (what the outbox backlog was)."""
    js = nc.jetstream()
    deadline = time.monotonic() + timeout
    while True:
        left = sum(info.num_ack_pending + info.num_pending
                   for info in await js.consumers_info(subjects.COMMANDS_STREAM))
        if left == 0 or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.1)


# --------------------------------------------------------------------------- worker log

def log_counts(text: str) -> dict[str, int]:
    """What the worker's own log says the chaos did to it."""
    entries = log_events(text)
    commands = [e for e in entries if e.get("event") == "command"]
    return {
        "redelivered": sum(1 for e in commands if e.get("deliveries", 1) > 1),
        # Committed by a worker that died before acknowledging: answered from the inbox.
        "committed_before_crash": sum(1 for e in commands if e.get("deliveries", 1) > 1 and e.get("duplicate")),
        # Commands whose events MEMORY_EVENTS did not store after commit (handed back, republished).
        "events_not_stored": sum(1 for e in entries if e.get("events_not_stored")),
        "waiting_for_dependency": sum(1 for e in entries if e.get("event") == "waiting_for_dependency"),
        "nats_disconnected": sum(1 for e in entries if e.get("event") == "nats_disconnected"),
        "nats_reconnected": sum(1 for e in entries if e.get("event") == "nats_reconnected"),
        # Failures counted toward MAX_DELIVER (not classified as a dependency being away).
        "command_retry": sum(1 for e in entries if e.get("event") == "command_retry"),
        "dead_lettered": sum(1 for e in commands if e.get("status") == "dead_lettered"),
    }


# --------------------------------------------------------------------------- the checks

@dataclass
class Report:
    commands: int = 0
    stored: int = 0
    statuses: Counter = field(default_factory=Counter)
    events: int = 0
    expected_events: int = 0
    lost: int = 0
    duplicated: int = 0
    unexpected: int = 0
    replies_missing: int = 0
    replies_repeated: int = 0
    problems: list[str] = field(default_factory=list)

    def problem(self, text: str, examples: list | None = None) -> None:
        if examples:
            text += f" (e.g. {examples[:3]})"
        self.problems.append(text)


async def verify(scenario: Scenario, db: Db, bot: Bot, *, replies_required: bool) -> Report:
    """Every check of the chaos runs; problems are listed, not raised one at a time."""
    rep = Report(commands=len(scenario.commands))
    by_id = {c.command_id: c for c in scenario.commands}
    cids = list(by_id)

    # 1. Exactly one stored result per command (the inbox), and nothing else stored.
    # A command's result: the answer rendered from its row, as a repeat and the lookup get it.
    answers = await stored_answers(db)
    rep.stored = len(answers)
    missing = [c for c in cids if c not in answers]
    if missing:
        rep.problem(f"{len(missing)} commands have no stored result", missing)
    if extra := [c for c in answers if c not in by_id]:
        rep.problem(f"{len(extra)} stored results of commands nobody sent", extra)
    results = {c: result for c, result in answers.items() if c in by_id}
    rep.statuses = Counter(r["data"]["status"] for r in results.values())
    if odd := {s: n for s, n in rep.statuses.items() if s not in (*SAVED_STATUSES, LIMIT_EXCEEDED)}:
        rep.problem(f"unexpected statuses {odd}",
                    [(c, r["data"]) for c, r in results.items() if r["data"]["status"] in odd])

    # 2. Outcomes as predicted: one-by-one for server owners (publish order), counts for all.
    per_command, per_owner = scenario.expected()
    wrong = [(c, want, results[c]["data"]["status"]) for c, want in per_command.items()
             if c in results and results[c]["data"]["status"] != want]
    if wrong:
        rep.problem(f"{len(wrong)} results differ from the publish-order prediction (cid, want, got)", wrong)
    got_per_owner: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for cid, result in results.items():
        got_per_owner[by_id[cid].owner.key][result["data"]["status"]] += 1
    bad_owner = [(k, dict(v), dict(got_per_owner[k])) for k, v in per_owner.items() if +v != +got_per_owner[k]]
    if bad_owner and not missing:
        rep.problem(f"{len(bad_owner)} owners' outcome counts differ from the model (owner, want, got)", bad_owner)

    # 3. Effects: one memory row per saved command (by its unique content), none per refusal.
    memories = await db.fetch(
        "SELECT 'server' AS scope, s.server_disc_id AS owner, m.server_memory_id AS id, m.content, m.source"
        " FROM server_memories m JOIN servers s USING (server_id)"
        " UNION ALL SELECT 'personal', u.user_disc_id, m.personal_memory_id, m.content, m.source"
        " FROM personal_memories m JOIN users u USING (user_id)")
    rows_by_content: dict[str, list] = defaultdict(list)
    for m in memories:
        rows_by_content[m["content"]].append(m)
    not_once, refused_but_stored, wrong_place = [], [], []
    for cid, result in results.items():
        cmd = by_id[cid]
        found = rows_by_content.get(cmd.content, [])
        if result["data"]["status"] in SAVED_STATUSES:
            if len(found) != 1:
                not_once.append((cid, len(found)))
            elif (found[0]["id"] != result["data"]["memory_id"] or found[0]["source"] != "model"
                  or (found[0]["scope"], found[0]["owner"]) != cmd.owner.key):
                wrong_place.append((cid, dict(found[0]), result["data"]["memory_id"]))
        elif found:
            refused_but_stored.append((cid, len(found)))
    if not_once:
        rep.problem(f"{len(not_once)} saved commands do not have exactly one memory row", not_once)
    if wrong_place:
        rep.problem(f"{len(wrong_place)} saved rows differ from their result (id, source or owner)", wrong_place)
    if refused_but_stored:
        rep.problem(f"{len(refused_but_stored)} refused commands left a memory row", refused_but_stored)
    contents = {c.content for c in scenario.commands}
    stray = [m["content"] for m in memories if m["source"] == "model" and m["content"] not in contents]
    if stray:
        rep.problem(f"{len(stray)} model rows of no command", stray)

    # 4. Evictions: each removed exactly one distinct legacy row, the oldest left, and the
    #    remaining legacy rows are the initial ones minus the forgotten ones.
    remaining = defaultdict(set)
    for m in memories:
        if m["source"] == "legacy":
            remaining[(m["scope"], m["owner"])].add(m["content"])
    forgotten = defaultdict(list)
    for cid, result in results.items():
        if result["data"]["status"] == SAVED_WITH_EVICTION:
            forgotten[by_id[cid].owner.key].append(result["data"]["content_forgotten"])
    initial_legacy = sum(len(o.legacy) for o in scenario.owners)
    evictions = sum(len(v) for v in forgotten.values())
    left = sum(len(v) for v in remaining.values())
    if left != initial_legacy - evictions:
        rep.problem(f"legacy rows left {left} != initial {initial_legacy} - evictions {evictions}")
    for owner in scenario.owners:
        gone = forgotten.get(owner.key, [])
        if len(set(gone)) != len(gone):
            rep.problem(f"{owner.key}: the same legacy row was forgotten twice", sorted(gone))
        if set(gone) != set(owner.legacy[:len(gone)]):
            rep.problem(f"{owner.key}: forgotten rows are not the {len(gone)} oldest", sorted(gone))
        if remaining.get(owner.key, set()) != set(owner.legacy) - set(gone):
            rep.problem(f"{owner.key}: remaining legacy rows != initial - forgotten")

    # 5. Caps: no owner above its cap.
    over = await db.fetch(
        "SELECT 'server' AS scope, server_id::text AS owner, count(*) AS n FROM server_memories"
        " GROUP BY server_id, persona_lineage_id HAVING count(*) > $1"
        " UNION ALL SELECT 'personal', user_id::text, count(*) FROM personal_memories"
        " GROUP BY user_id HAVING count(*) > $1", CAP)
    if over:
        rep.problem(f"{len(over)} owners above the cap of {CAP}", [dict(r) for r in over])

    # 6. Events: exactly the expected ids, each stored once; invalidation before saved.
    expected_ids: dict[str, str] = {}  # event id -> command id
    invalidations: dict[str, list[str]] = defaultdict(list)  # command id -> its invalidation ids
    # Eviction metrics have opaque ids: only the decision stored with the command's inbox row
    # links them to their command.
    metric_ids: dict[str, list[str]] = defaultdict(list)
    for row in await db.fetch("SELECT command_id, decision ->> 'metric_event_id' AS id FROM processed_commands"
                              " WHERE facts ? 'evicted_id'"):
        metric_ids[row["command_id"]].append(row["id"])
    for cid, result in results.items():
        if result["data"]["status"] not in SAVED_STATUSES:
            continue
        keys = result.get("invalidated") or []
        if len(keys) != 1:
            rep.problem(f"{cid}: result carries {len(keys)} invalidated keys, want 1")
        for key in keys:
            eid = f"{cid}:invalidate:{key['cache']}:{key['key']}"
            expected_ids[eid] = cid
            invalidations[cid].append(eid)
        expected_ids[f"{cid}:saved"] = cid
        if result["data"]["status"] == SAVED_WITH_EVICTION:
            expected_ids[f"{cid}:evicted"] = cid
            if len(metric_ids[cid]) != 1:
                rep.problem(f"{cid}: {len(metric_ids[cid])} eviction metrics stored with the command, want 1")
            expected_ids.update(dict.fromkeys(metric_ids[cid], cid))
    events = await read_events(bot.nc)
    rep.events, rep.expected_events = len(events), len(expected_ids)
    by_msg_id = Counter(e.msg_id for e in events)
    by_event_id = Counter(json.loads(e.data).get("event_id") for e in events if not e.subject.startswith("metrics."))
    lost = [i for i in expected_ids if i not in by_msg_id]
    dups = {i: n for i, n in by_msg_id.items() if n > 1}
    dup_payload = {i: n for i, n in by_event_id.items() if n > 1}
    unexpected = [i for i in by_msg_id if i not in expected_ids]
    rep.lost = len(lost)
    rep.duplicated = sum(n - 1 for n in dups.values()) + sum(n - 1 for n in dup_payload.values())
    rep.unexpected = len(unexpected)
    if lost:
        rep.problem(f"{len(lost)} events lost", lost)
    if dups or dup_payload:
        rep.problem(f"{rep.duplicated} duplicated events", list(dups.items()) + list(dup_payload.items()))
    if unexpected:
        refused = [i for i in unexpected if i and i.split(":")[0] in results]
        rep.problem(f"{len(unexpected)} events nobody expected ({len(refused)} of refused or unknown commands)",
                    unexpected)
    first_seq: dict[str, int] = {}
    for e in events:
        first_seq.setdefault(e.msg_id, e.seq)
    late_invalidation = []
    saved_mismatch = []
    for e in events:
        if e.subject.startswith("memory.saved."):
            body = json.loads(e.data)
            cid = body["command_id"]
            result = results.get(cid)
            if result is None or body["memory_id"] != result["data"]["memory_id"] \
                    or body["content"] != by_id[cid].content:
                saved_mismatch.append(cid)
            if any(first_seq.get(i, 1 << 62) > e.seq for i in invalidations[cid]):
                late_invalidation.append(cid)
    if saved_mismatch:
        rep.problem(f"{len(saved_mismatch)} memory.saved events differ from the stored result", saved_mismatch)
    if late_invalidation:
        rep.problem(f"{len(late_invalidation)} commands' cache.invalidate stored after memory.saved",
                    late_invalidation)

    # 7. Replies: what the bot got equals what is stored; a missing reply is fetched from the
    #    worker's result lookup, as MemoryClient does after a timeout.
    differ, unanswered = [], []
    for cid, result in results.items():
        got = bot.replies.get(cid, [])
        if len(got) > 1:
            rep.replies_repeated += 1
        if not got:
            rep.replies_missing += 1
            looked_up = await bot.lookup(by_id[cid].workspace_id, cid)
            if looked_up is None:
                unanswered.append(cid)
            else:
                got = [looked_up]
        if any(json.loads(r) != result for r in got):
            differ.append(cid)
    if differ:
        rep.problem(f"{len(differ)} replies differ from the stored result", differ)
    if unanswered:
        rep.problem(f"{len(unanswered)} commands neither answered nor found by result lookup", unanswered)
    if replies_required and rep.replies_missing:
        rep.problem(f"{rep.replies_missing} commands got no reply on their reply_to",
                    [c for c in results if not bot.replies.get(c)])
    return rep
