"""The verdict of a fault run, reached without the worker's code: from the bot's history
(tests/faults/bot.py), the final PostgreSQL state and every message of MEMORY_EVENTS.

What it counts (each with examples, so a finding can be followed up):

- lost: commands JetStream acknowledged to the bot that have no stored result, or whose
  answer says saved while the memory row is not there;
- applied twice: a command with more than one memory row (its content is unique);
- answered differently: an answer (reply or result lookup) that is not the stored one (its
  status and memory id, for a create stored as its decision and facts; byte for byte, for a
  row that keeps its result);
- ids given to other memories: a memory id the bot was told it saved that the database now
  holds for different content (a commit lost in a failover whose sequence values were used
  again);
- above cap: a workspace holding more memories than the cap;
- out of order: in a workspace, a save after a refusal, or memory ids not rising in
  publish order (each workspace's commands are published one after the other);
- events missing (a saved command without its memory.saved, or without the
  cache.invalidate its result names, or the invalidation after the save), duplicated (by
  Nats-Msg-Id and by event_id), of no commit (a command with no stored result, a refused
  one, or a memory id the database never had) or stored before their transaction began;
- acked commands dead-lettered instead of applied (counted as lost in the table: the bot
  was told the save failed, though an operator can replay them);
- commands left unacknowledged in MEMORY_COMMANDS (a command is acknowledged only once its
  events are stored, so one left there may be an applied command whose events never were);
- time to serve again after the fault healed (from the schedule's probe).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import asyncpg
import nats
import nats.errors
import nats.js.errors
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from tests.faults.bot import Bot, Sent

SAVED = ("memory_saved_successfully", "memory_saved_with_eviction")
REFUSED = "memory_save_failed_limit_exceeded"
# Issue 15 moves the worker's own tables to a schema of their own; both layouts are read.
SEARCH_PATH = "memory_worker, public"

# A create's inbox row keeps its decision and what its save learned under the lock, not its
# result (db/migrations/009_decisions.sql); what the bot must have been told is read from
# them by these facts of the wire contract (docs/design.md), not by the worker's renderer.
OUTCOME_STATUS = {"saved": SAVED[0], "saved_with_eviction": SAVED[1], "at_cap": REFUSED, "over_cap": REFUSED}
# The cache entry a save makes stale: the workspace's state, or the user's entry.
STALE_CACHE = {"server": "tomori_state", "personal": "user"}


@dataclass(frozen=True)
class Stored:
    """A stored command as the checker reads it."""

    status: str  # a create status, or what else the row says (an unexpected status)
    memory_id: int | None  # of a save that wrote
    invalidated: tuple[tuple[str, str], ...]  # (cache, key) of every entry the answer names
    result: bytes | None  # the result as sent, for a row that keeps one

    def answers(self, data: bytes) -> bool:
        """Is `data` (a reply or a lookup's answer) this command's answer?"""
        if self.result is not None:
            return data == self.result
        body = _json(data)
        told = body.get("data")
        if not isinstance(told, dict):
            return False
        if self.status not in (*SAVED, REFUSED):  # a refusal the checker has no status for: a refusal
            return body.get("success") is False and told.get("memory_id") is None
        return (told.get("status"), told.get("memory_id")) == (self.status, self.memory_id)


def stored_of(result: str | None, decision: str | None, facts: str | None) -> Stored:
    """A processed_commands row's result, decision and facts (as JSON text) as the checker reads them."""
    if result is not None:
        body = _json(result.encode())
        data = body.get("data") if isinstance(body.get("data"), dict) else {}
        keys = tuple((k.get("cache"), k.get("key")) for k in body.get("invalidated") or [] if isinstance(k, dict))
        return Stored(str(data.get("status")), data.get("memory_id"), keys, result.encode())
    planned = _json((decision or "{}").encode())
    learned = _json((facts or "{}").encode())
    if planned.get("decided") != "save":
        return Stored(f"refused before the save: {planned.get('decided')}", None, (), None)
    outcome = learned.get("outcome")
    status = OUTCOME_STATUS.get(str(outcome), f"save ended {outcome}")
    if status not in SAVED:
        return Stored(status, None, (), None)
    return Stored(status, learned.get("memory_id"), ((STALE_CACHE.get(planned.get("scope"), "?"), planned.get("owner_id")),),
                  None)


async def stored_commands(db: asyncpg.Connection) -> dict[str, tuple[Stored, object]]:
    """Every stored command, with when its transaction ran, by command id."""
    rows = await db.fetch("SELECT command_id, result::text AS result, decision::text AS decision,"
                          " facts::text AS facts, processed_at FROM processed_commands")
    return {r["command_id"]: (stored_of(r["result"], r["decision"], r["facts"]), r["processed_at"]) for r in rows}


@dataclass
class Verdict:
    schedule: str
    commands: int = 0
    acked: int = 0
    stored: int = 0
    saved: int = 0
    refused: int = 0
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list] = field(default_factory=dict)
    events: int = 0
    recovery_s: float | None = None
    longest_gap_s: float | None = None
    caught_up_s: float | None = None
    injected: str = ""

    def found(self, what: str, examples: list) -> None:
        self.counts[what] += len(examples)
        if examples:
            self.examples.setdefault(what, []).extend(examples[:3])

    # The table's columns: a loss is a command or an event that should be there and is not.
    @property
    def lost(self) -> int:
        return (self.counts["acked but lost"] + self.counts["acked, dead-lettered"]
                + self.counts["saved without its row"] + self.counts["events missing"])

    @property
    def duplicated(self) -> int:
        return self.counts["applied twice"] + self.counts["events duplicated"]

    @property
    def out_of_order(self) -> int:
        return self.counts["out of order"] + self.counts["invalidation after save"]

    @property
    def problems(self) -> list[str]:
        return [f"{what}: {n} (e.g. {self.examples.get(what, [])})" for what, n in self.counts.items() if n]

    def record(self) -> dict:
        return {"schedule": self.schedule, "injected": self.injected, "commands": self.commands,
                "acked": self.acked, "stored": self.stored, "saved": self.saved, "refused": self.refused,
                "events": self.events, "lost": self.lost, "duplicated": self.duplicated,
                "out_of_order": self.out_of_order, "above_cap": self.counts["above cap"],
                "findings": {k: v for k, v in self.counts.items() if v},
                "examples": {k: [repr(x) for x in v] for k, v in self.examples.items()},
                "longest_gap_s": self.longest_gap_s, "recovery_s": self.recovery_s, "caught_up_s": self.caught_up_s}

    def line(self) -> str:
        return (f"FAULTS {self.schedule}: commands={self.commands} acked={self.acked} stored={self.stored} "
                f"saved={self.saved} refused={self.refused} events={self.events} lost={self.lost} "
                f"duplicated={self.duplicated} out_of_order={self.out_of_order} "
                f"above_cap={self.counts['above cap']} "
                f"other={ {k: v for k, v in self.counts.items() if v} } "
                f"longest_gap_s={_fmt(self.longest_gap_s)} recovery_s={_fmt(self.recovery_s)} "
                f"caught_up_s={_fmt(self.caught_up_s)} injected: {self.injected}")


def _fmt(x: float | None) -> str:
    return "none" if x is None else f"{x:.1f}"


async def connect_db(dsn: str) -> asyncpg.Connection:
    return await asyncpg.connect(dsn, server_settings={"search_path": SEARCH_PATH})


async def unacknowledged(nc: nats.NATS) -> list[tuple[str, int]]:
    """(consumer, commands) of every MEMORY_COMMANDS consumer holding commands not yet acknowledged."""
    infos = await nc.jetstream().consumers_info("MEMORY_COMMANDS")
    return [(i.name, i.num_ack_pending + i.num_pending) for i in infos if i.num_ack_pending + i.num_pending]


async def wait_settled(db_dsn: str, history: list[Sent], nc: nats.NATS, timeout_s: float) -> float | None:
    """Wait until every acknowledged command has a stored result (or is one of the dead
    letters) and every command in MEMORY_COMMANDS is acknowledged (its events stored);
    returns when that was (time.monotonic()), or None if it never was within timeout_s."""
    acked = {s.command_id for s in history if s.acked_at is not None}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            db = await connect_db(db_dsn)
            try:
                stored = {r["command_id"] for r in await db.fetch("SELECT command_id FROM processed_commands")}
            finally:
                await db.close()
            left = len(await unacknowledged(nc))
            dead = (await nc.jetstream().stream_info("MEMORY_DLQ")).state.messages
            if len(acked - stored) <= dead and left == 0:
                return time.monotonic()
        except (OSError, asyncpg.PostgresError, nats.errors.Error, TimeoutError):
            pass
        await asyncio.sleep(0.25)
    return None


def _json(data: bytes) -> dict:
    try:
        body = json.loads(data)
    except ValueError:
        return {"undecodable": data[:80].decode(errors="replace")}
    return body if isinstance(body, dict) else {"not_an_object": body}


async def read_stream(nc: nats.NATS, stream: str, timeout_s: float = 90.0) -> list[dict]:
    """Every message of the stream in order: seq, subject, msg_id, timestamp, body. Read
    again from the start if the cluster answers 503 mid-way (a leader moving after a heal)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await _read_once(nc, stream, deadline)
        except (nats.js.errors.ServiceUnavailableError, nats.js.errors.NotFoundError, nats.errors.TimeoutError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1.0)


async def _read_once(nc: nats.NATS, stream: str, deadline: float) -> list[dict]:
    js = nc.jetstream()
    name = f"faults_{uuid.uuid4().hex}"
    await js.add_consumer(stream, ConsumerConfig(
        name=name, deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.NONE, inactive_threshold=60.0))
    pending = (await js.consumer_info(stream, name)).num_pending
    out: list[dict] = []
    if not pending:
        return out
    sub = await js.pull_subscribe_bind(consumer=name, stream=stream)
    try:
        while len(out) < pending and time.monotonic() < deadline:
            try:
                msgs = await sub.fetch(batch=min(500, pending - len(out)), timeout=5)
            except nats.errors.TimeoutError:
                continue
            for m in msgs:
                out.append({"seq": m.metadata.sequence.stream, "subject": m.subject,
                            "msg_id": (m.headers or {}).get("Nats-Msg-Id"),
                            "time": m.metadata.timestamp, "body": _json(m.data)})
    finally:
        await sub.unsubscribe()
    if len(out) < pending:
        raise AssertionError(f"read {len(out)} of {pending} messages of {stream}")
    return sorted(out, key=lambda e: e["seq"])


async def check(schedule: str, bot: Bot, db_dsn: str, events_nc: nats.NATS, *, cap: int) -> Verdict:
    v = Verdict(schedule)
    history = [s for s in bot.history]
    by_id = {s.command_id: s for s in history}
    v.commands = len(history)
    v.acked = sum(s.acked_at is not None for s in history)

    db = await connect_db(db_dsn)
    try:
        rows = await stored_commands(db)
        memories = await db.fetch("SELECT m.server_memory_id AS id, m.content, s.server_disc_id AS workspace"
                                  " FROM server_memories m JOIN servers s USING (server_id)")
        per_owner = await db.fetch("SELECT s.server_disc_id AS workspace, count(*) AS n FROM server_memories m"
                                   " JOIN servers s USING (server_id) GROUP BY 1 HAVING count(*) > $1", cap)
    finally:
        await db.close()
    results = {cid: stored for cid, (stored, _) in rows.items()}
    processed_at = {cid: when for cid, (_, when) in rows.items()}
    v.stored = len(results)
    status = {cid: r.status for cid, r in results.items()}
    v.saved = sum(s in SAVED for s in status.values())
    v.refused = sum(s == REFUSED for s in status.values())

    rows_of: dict[str, list] = defaultdict(list)
    for m in memories:
        rows_of[m["content"]].append(m)

    # Commands: lost, dead-lettered (not applied, but kept for an operator's replay),
    # applied twice, answered differently.
    dead = {m["body"].get("command_id") for m in await read_stream(events_nc, "MEMORY_DLQ")}
    v.found("acked but lost", [s.command_id for s in history if s.acked_at is not None
                               and s.command_id not in results and s.command_id not in dead])
    v.found("acked, dead-lettered", [s.command_id for s in history if s.acked_at is not None
                                     and s.command_id not in results and s.command_id in dead])
    v.found("unexpected status", [(cid, st) for cid, st in status.items() if st not in (*SAVED, REFUSED)])
    v.found("stored but never sent", [cid for cid in results if cid not in by_id])
    v.found("applied twice", [(s.command_id, len(rows_of[s.content])) for s in history if len(rows_of[s.content]) > 1])
    v.found("refused but applied", [cid for cid, st in status.items() if st == REFUSED and rows_of[by_id[cid].content]])
    v.found("saved without its row", [cid for cid, st in status.items() if st in SAVED
                                      and not any(m["id"] == results[cid].memory_id
                                                  and m["workspace"] == by_id[cid].workspace_id
                                                  for m in rows_of[by_id[cid].content])])
    differ = []
    for s in history:
        answers = {data for _, data in s.replies}
        if s.command_id in results and not answers:
            looked_up = await bot.lookup(s)
            if looked_up:
                answers.add(looked_up)
        for data in answers:
            try:
                answer = json.loads(data)
            except ValueError:
                differ.append((s.command_id, data[:80]))
                continue
            if s.command_id in dead and s.command_id not in results and answer.get("success") is False:
                continue  # the dead letter's error answer; counted above
            if s.command_id not in results or not results[s.command_id].answers(data):
                differ.append((s.command_id, answer if s.command_id not in results else "differs"))
    v.found("answered differently", differ)

    memory_by_id = {m["id"]: m for m in memories}
    reused: set[tuple[str, int]] = set()  # (command, id) once, however often it was answered
    for s in history:
        for _, data in s.replies:
            try:
                answer = json.loads(data)
            except ValueError:
                continue
            told = answer.get("data") if isinstance(answer, dict) else None
            if isinstance(told, dict) and told.get("status") in SAVED and told.get("memory_id") in memory_by_id:
                if memory_by_id[told["memory_id"]]["content"] != s.content:
                    reused.add((s.command_id, told["memory_id"]))
    v.found("ids given to other memories", sorted(reused))

    # The cap, and per-workspace order (publish order is index order within a workspace).
    v.found("above cap", [(r["workspace"], r["n"]) for r in per_owner])
    order = []
    by_workspace: dict[str, list[Sent]] = defaultdict(list)
    for s in history:
        by_workspace[s.workspace_id].append(s)
    for ws, sent in by_workspace.items():
        seen_refusal, last_id = False, -1
        for s in sent:
            st = status.get(s.command_id)
            if st == REFUSED:
                seen_refusal = True
            elif st in SAVED:
                mid = results[s.command_id].memory_id
                if mid is None:  # "saved without its row" names it
                    continue
                if seen_refusal or mid <= last_id:
                    order.append((ws, s.command_id))
                last_id = max(last_id, mid)
    v.found("out of order", order)

    # Events.
    events = await read_stream(events_nc, "MEMORY_EVENTS")
    v.events = len(events)
    v.found("events duplicated",
            [(i, n) for i, n in Counter(e["msg_id"] for e in events).items() if n > 1]
            + [(i, n) for i, n in Counter(e["body"].get("event_id") for e in events
                                          if "event_id" in e["body"]).items() if n > 1])
    saved_seq: dict[str, int] = {}
    invalidated_seq: dict[tuple[str, str, str], int] = {}
    no_commit, early = [], []
    memory_ids = {m["id"] for m in memories}
    for e in events:
        body, cid = e["body"], e["body"].get("command_id")
        if e["subject"].startswith("metrics."):
            continue
        if cid not in results or status[cid] not in SAVED:
            no_commit.append((e["subject"], cid))
            continue
        if e["time"] < processed_at[cid]:
            early.append((e["subject"], cid))
        if e["subject"].startswith("memory.saved."):
            saved_seq.setdefault(cid, e["seq"])
            if body.get("memory_id") not in memory_ids or body.get("memory_id") != results[cid].memory_id:
                no_commit.append((e["subject"], cid, body.get("memory_id")))
        elif e["subject"].startswith("cache.invalidate."):
            invalidated_seq.setdefault((cid, body.get("cache"), body.get("key")), e["seq"])
    missing, late = [], []
    for cid, st in status.items():
        if st not in SAVED:
            continue
        if cid not in saved_seq:
            missing.append((cid, "memory.saved"))
        for cache, key in results[cid].invalidated:
            seq = invalidated_seq.get((cid, cache, key))
            if seq is None:
                missing.append((cid, f"cache.invalidate {cache}"))
            elif cid in saved_seq and seq > saved_seq[cid]:
                late.append(cid)
    v.found("events missing", missing)
    v.found("invalidation after save", late)
    v.found("events of no commit", no_commit)
    v.found("events before their commit", early)
    v.found("commands unacknowledged", await unacknowledged(events_nc))
    return v
