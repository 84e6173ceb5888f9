"""Fuzzed bad commands against the running worker (issue 4, docs/design.md, section 2 guarantee 6).

About sixty bad payloads (garbage bytes, bad envelopes, wrong types, huge strings, moderate
nesting, NUL, lone surrogates (read as U+FFFD), numbers beyond a double, a payload over the 64 KiB limit, unknown fields, numbers
beyond int64), a fixed catalogue plus seeded random mutations of valid commands, are
published on memory.create.<ws> and memory.manual.<ws> of one workspace, interleaved with
valid commands, back to back. Afterwards every valid command has its normal result, every
bad one was either answered (a refusal or, for forward-compatible unknown fields, its normal
result) or dead-lettered with its reason, and the worker is alive and answers a final command.

Deep nesting (10,000 levels) is sent to a worker of its own, on its own NATS server: had it
ever blocked its partition again, that must not spill into the shared e2e worker.
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec
import nats
import pytest

from contracts import subjects
from contracts.kinds.create import CREATE_STATUSES, INVALID_ARGS, INVALID_CONTENT, SAVED
from contracts.kinds.manual import (
    ADDED,
    ALL_DUPLICATES,
    BATCH_LIMIT_REACHED,
    BLACKLISTED,
    CONTENT_TOO_LONG,
    EMPTY_CONTENT,
    HOST_PROTECTED,
    LIMIT_REACHED,
    NOT_FOUND,
    PRIVACY_BLOCKED,
    REMOVED,
    TEACHING_DISABLED,
    UNCHANGED,
    UPDATED,
)
from contracts.result_parts import COMMAND_INVALID
from tests.conftest import WorkerProcess, clone_database, worker_env
from tests.e2e.bus import Inbox, command_payload, create_fields, publish_command, read_stream, unique
from tests.e2e.directory import server_memories
from tests.support.commands import manual_fields
from tests.support.directory import add_server
from tests.support.fuzz import inner_paths, replace_at
from worker.consuming import dead_letters
from worker.consuming.intake.handlers import CommandHandler, Invalid
from worker.consuming.probe import answerable
from worker.local.embedded import NatsServer

SEED = 20240404
PREFIXES = ("_INBOX.",)
MAX_COMMAND_BYTES = 65536
MANAGER = "130000000000000001"
MANUAL_STATUSES = {ADDED, UPDATED, UNCHANGED, REMOVED, PRIVACY_BLOCKED,
                   HOST_PROTECTED, EMPTY_CONTENT, CONTENT_TOO_LONG, LIMIT_REACHED,
                   BATCH_LIMIT_REACHED, ALL_DUPLICATES, NOT_FOUND, BLACKLISTED,
                   TEACHING_DISABLED}
SENTINEL = "\x01raw\x01"  # written as a lone surrogate escape
BEYOND = "\x01beyond\x01"  # written as a number beyond a double


@dataclass
class Case:
    """One published message and what must become of it."""

    label: str
    kind: str
    payload: bytes
    # "valid": its normal success; "dlq": dead-lettered (answered too when its reply_to is
    # readable); "answer": processed, answered with a refusal or a normal result.
    expect: str
    reply_to: str | None = None  # where its answer goes, if anywhere
    command_id: str | None = None
    statuses: frozenset[str] | None = None  # allowed data.status of the answer (None: any of its kind)
    content: str | None = None  # valid creates: the memory that must be stored


class Catalogue:
    def __init__(self, ws: str, inbox: Inbox, rng: random.Random) -> None:
        self.ws = ws
        self.inbox = inbox
        self.rng = rng
        self.token = subjects.encode_token(ws)
        self._lineage = 100

    def lineage(self) -> int:
        """Each command its own lineage: the cap of 5 never decides an outcome here."""
        self._lineage += 1
        return self._lineage

    def create(self, content: str = "fact", **extra: Any) -> tuple[str, dict]:
        cid = unique("fz-c-")
        return cid, command_payload(create_fields(self.ws, content, lineage_id=self.lineage(), **extra),
                                    command_id=cid, reply_to=self.inbox.subject(cid))

    def manual(self, content: str = "fact", **extra: Any) -> tuple[str, dict]:
        cid = unique("fz-m-")
        fields = {"workspace_id": self.ws, **manual_fields(actor=MANAGER, lineage_id=self.lineage(), content=content,
                                                           **extra)}
        return cid, command_payload(fields, command_id=cid, reply_to=self.inbox.subject(cid))

    # --- valid commands ---

    def valid(self, i: int) -> Case:
        if i % 2 == 0:
            content = f"valid create {i}"
            cid, payload = self.create(content)
            return Case(f"valid create {i}", "create", encode(payload), "valid", self.inbox.subject(cid), cid,
                        frozenset({SAVED}), content)
        content = f"valid manual add {i}"
        cid, payload = self.manual(content)
        return Case(f"valid manual {i}", "manual", encode(payload), "valid", self.inbox.subject(cid), cid,
                    frozenset({ADDED}), content)

    # --- bad commands with a known fate ---

    def dlq(self, label: str, kind: str, data: bytes) -> Case:
        return Case(label, kind, data, "dlq", *_probe_reply(data))

    def refused(self, label: str, kind: str, payload: dict, statuses: set[str]) -> Case:
        cid = payload["command_id"]
        return Case(label, kind, encode(payload), "answer", payload["reply_to"], cid, frozenset(statuses))

    def fixed(self) -> list[Case]:
        ws = self.ws
        cases = [self.dlq(f"garbage {n} bytes", "create", self.rng.randbytes(n)) for n in (1, 7, 100, 2000)]
        cases.append(self.dlq("garbage on manual", "manual", self.rng.randbytes(300)))
        cases += [self.dlq(f"json {raw!r}", kind, raw) for kind, raw in (
            ("create", b"[]"), ("create", b'"a string"'), ("manual", b"null"), ("create", b"12345678901234567890123"),
            ("manual", b'{"command_id": 5, "reply_to": 7}'), ("create", b"{}"), ("create", b""),
        )]

        def bad(label: str, kind: str, change) -> Case:
            cid, payload = (self.create if kind == "create" else self.manual)()
            change(payload)
            case = self.dlq(label, kind, splice(payload))
            if "reply_to" not in label:  # every refusal of a command a bot can frame is answered
                assert case.reply_to == payload["reply_to"], label
            return case

        cases += [
            bad("issued_at not a time", "create", lambda p: p.update(issued_at="last tuesday")),
            bad("command_id over 128", "create", lambda p: p.update(command_id="c" * 129)),
            bad("command_id empty", "manual", lambda p: p.update(command_id="")),
            bad("workspace mismatch", "create", lambda p: p.update(workspace_id=unique())),
            bad("reply_to wildcard", "create", lambda p: p.update(reply_to=p["reply_to"] + ".>")),
            bad("reply_to into the events", "manual", lambda p: p.update(reply_to=f"memory.saved.server.{ws}")),
            bad("persona missing", "create", lambda p: p.pop("persona")),
            bad("persona.id beyond int64", "create", lambda p: p["persona"].update(id=2**63)),
            bad("persona.lineage_id beyond int64", "create", lambda p: p["persona"].update(lineage_id=2**63)),
            bad("persona.name over 512", "create", lambda p: p["persona"].update(name="n" * 513)),
            bad("persona.name with NUL", "create", lambda p: p["persona"].update(name="To\x00mori")),
            bad("bot_user_id a number", "create", lambda p: p.update(bot_user_id=990000000000000001)),
            bad("participants not a list", "create", lambda p: p.update(participants={"id": "1"})),
            bad("channel.is_dm a string", "create", lambda p: p["channel"].update(is_dm="yes")),
            bad("command_id beyond a double", "create", lambda p: p.update(command_id=BEYOND)),
            bad("persona.lineage_id beyond a double", "create", lambda p: p["persona"].update(lineage_id=BEYOND)),
            bad("manual memory_id beyond a double", "manual", lambda p: p.update(memory_id=BEYOND)),
            bad("manual action unknown", "manual", lambda p: p.update(action="explode")),
            bad("manual scope unknown", "manual", lambda p: p.update(scope="galaxy")),
            bad("manual lineage beyond int64", "manual", lambda p: p.update(lineage_id=10**30)),
            bad("manual memory_id beyond uint64", "manual", lambda p: p.update(memory_id=2**64)),
            bad("manual content with NUL", "manual", lambda p: p.update(content="a\x00b")),
            bad("manual content over 20000", "manual", lambda p: p.update(content="x" * 20_001)),
            bad("manual tags over 100", "manual", lambda p: p.update(tags=["t"] * 101)),
            bad("manual actor a string", "manual", lambda p: p.update(actor=MANAGER)),
        ]
        # Over the 64 KiB limit though otherwise valid: refused for its size, and answered.
        cid, big = self.create("y" * 70_000)
        cases.append(self.dlq("70 KB payload", "create", encode(big)))
        assert len(cases[-1].payload) > MAX_COMMAND_BYTES

        # Decodable, so processed: the model's bad arguments are an ordinary refusal.
        args = INVALID_ARGS
        cases += [
            self.refused("tool_args content NUL", "create", self.create("a\x00b")[1], {args}),
            self.refused("tool_args target NUL", "create",
                         self.create("fact", scope="target_user", target="Al\x00ice")[1], {args}),
            self.refused("tool_args a list", "create", self.create(tool_args=[1, 2, 3])[1], {args}),
            self.refused("tool_args nested 100 deep", "create", self.create(tool_args=nested(100))[1], {args}),
            self.refused("tool_args content a number", "create", self.create(tool_args={
                "memory_content": 10**30, "memory_scope": "server_wide"})[1], {args}),
            self.refused("tool_args content 60000 chars", "create", self.create("z" * 60_000)[1],
                         {INVALID_CONTENT}),
            self.refused("tool_args scope unknown", "create", self.create("fact", scope="galaxy")[1], {args}),
            self.refused("tool_args discord id beyond int64", "create", self.create(tool_args={
                "memory_content": "fact", "memory_scope": "target_user", "target_user_discord_id": 10**25})[1],
                {args}),  # a legacy target name must be a string (TomoriBot trims it as one)
            self.refused("manual content too long", "manual", self.manual("w" * 5000)[1], {CONTENT_TOO_LONG}),
            self.refused("manual blank content", "manual", self.manual("   ")[1], {EMPTY_CONTENT}),
        ]
        # A lone surrogate escape (a string cut mid-pair) is read as U+FFFD: applied as sent.
        cases += [
            self.framed("tool_args content lone surrogate", "create",
                        lambda p: p["tool_args"].update(memory_content=SENTINEL), {SAVED}),
            self.framed("command_id lone surrogate", "create", lambda p: p.update(command_id=SENTINEL), {SAVED}),
            self.framed("manual content lone surrogate", "manual", lambda p: p.update(content=SENTINEL), {ADDED}),
            # A model's number beyond a double is its bad argument.
            self.framed("tool_args content beyond a double", "create",
                        lambda p: p["tool_args"].update(memory_content=BEYOND), {args}),
        ]
        # Unknown fields are ignored (forward compatibility): the command is simply applied.
        for kind in ("create", "manual"):
            cid, payload = (self.create if kind == "create" else self.manual)(f"with unknown fields ({kind})")
            payload["x_future"] = {"nested": nested(50), "n": 10**30, "s": "\x00"}
            if kind == "create":
                payload["persona"]["x_extra"] = [None, True, 1.5]
            cases.append(self.refused(f"unknown fields on {kind}", kind, payload,
                                      {SAVED} if kind == "create" else {ADDED}))
        return cases

    def framed(self, label: str, kind: str, change, statuses: set[str]) -> Case:
        """A command JSON.parse reads, with something msgspec alone refuses: processed."""
        cid, payload = (self.create if kind == "create" else self.manual)()
        change(payload)
        data = splice(payload)
        decoded = CommandHandler._decode(kind, self.token, data, PREFIXES)
        assert not isinstance(decoded, Invalid), (label, decoded)
        return Case(label, kind, data, "answer", decoded.reply_to, decoded.command_id, frozenset(statuses))

    # --- seeded random mutations: the worker's own decoder says what must happen ---

    WEIRD = [None, True, 0, -1, 2**31, 2**63, -(2**63) - 1, 10**30, 1.5, "", " ", "\x00", "x" * 600, [], {},
             [1, "a"], {"a": {"b": None}}, SENTINEL, BEYOND]

    def mutated(self, i: int) -> Case:
        kind = self.rng.choice(["create", "manual"])
        cid, payload = (self.create if kind == "create" else self.manual)(f"mutated {i}")
        for _ in range(self.rng.randint(1, 2)):
            path = self.rng.choice(inner_paths(payload))
            payload = replace_at(payload, path, self.rng.choice(self.WEIRD))
        data = splice(payload)
        decoded = CommandHandler._decode(kind, self.token, data, PREFIXES)
        if len(data) > MAX_COMMAND_BYTES or isinstance(decoded, Invalid):
            return self.dlq(f"mutated {i} ({kind})", kind, data)
        return Case(f"mutated {i} ({kind})", kind, data, "answer", decoded.reply_to, decoded.command_id)


def encode(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def splice(payload: Any) -> bytes:
    """JSON text with every SENTINEL string written as a lone surrogate escape, every BEYOND
    as 1e400."""
    return (encode(payload).replace(json.dumps(SENTINEL).encode(), b'"\\ud800"')
            .replace(json.dumps(BEYOND).encode(), b"1e400"))


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def _probe_reply(data: bytes) -> tuple[str | None, str | None]:
    command_id, reply_to = answerable(data, PREFIXES)
    return reply_to, command_id


def schedule(catalogue: Catalogue, rng: random.Random) -> list[Case]:
    bad = catalogue.fixed()
    bad += [catalogue.mutated(i) for i in range(60 - len(bad))]
    rng.shuffle(bad)
    out: list[Case] = []
    for i, case in enumerate(bad):
        out.append(case)
        if i % 2 == 1:
            out.append(catalogue.valid(i))
    return out


async def test_fuzzed_bad_commands_never_stop_the_worker(e2e_worker, nc, inbox, bot_db):
    ws = unique()
    await add_server(bot_db, ws)
    rng = random.Random(SEED)
    catalogue = Catalogue(ws, inbox, rng)
    cases = schedule(catalogue, rng)
    final_cid, final = catalogue.create("the last word")
    bad = [c for c in cases if c.expect != "valid"]
    assert len(bad) >= 60 and {c.kind for c in bad} == {"create", "manual"}
    assert {c.expect for c in bad} == {"dlq", "answer"}

    # Back to back on the two subjects of one workspace: one partition, processed in this order.
    for case in cases:
        await publish_command(nc, case.kind, ws, case.payload, msg_id=unique("fz-msg-"))
    await publish_command(nc, "create", ws, encode(final), msg_id=final_cid)

    final_reply = inbox.subject(final_cid)
    answered = [c for c in cases if c.reply_to]
    replies = await inbox.wait_for([final_reply] + [c.reply_to for c in answered], timeout=30.0)

    assert e2e_worker.proc.poll() is None, "the worker died"
    assert msgspec.json.decode(replies[final_reply])["data"]["status"] == SAVED

    # A mutation may leave two commands sharing a valid command id (" "): the later one is then
    # answered from the inbox with the earlier one's result, whatever its kind.
    ids = [c.command_id for c in cases]
    shared = {cid for cid in ids if ids.count(cid) > 1}
    for case in answered:
        result = msgspec.json.decode(replies[case.reply_to])
        status = result["data"]["status"]
        where = f"{case.label}: {result}"
        if case.expect == "dlq":
            assert status == COMMAND_INVALID and result["success"] is False, where
            assert result["error"] and result["data"]["reason"], where
            continue
        allowed = case.statuses or (frozenset(CREATE_STATUSES) if case.kind == "create" else MANUAL_STATUSES)
        if case.command_id in shared:
            allowed = frozenset(CREATE_STATUSES) | MANUAL_STATUSES
        assert status in allowed, where
        assert result["command_id"] == case.command_id, where
        if not result["success"]:
            assert result["error"] and result["data"]["reason"], where

    # Exactly the undecodable ones were dead-lettered, in publish order, each with its reason.
    dead = await read_stream(nc, subjects.DLQ_STREAM,
                             [subjects.dlq_subject(subjects.command_subject(k, ws)) for k in ("create", "manual")])
    expected_dead = [c for c in cases if c.expect == "dlq"]
    assert [m.data for m in dead] == [c.payload for c in expected_dead], (
        [c.label for c in expected_dead], len(dead))
    for msg, case in zip(dead, expected_dead, strict=True):
        assert msg.headers.get("Dlq-Reason") == dead_letters.INVALID_COMMAND, (case.label, msg.headers)
        assert msg.headers.get("Dlq-Error"), case.label
        assert msg.headers.get("Dlq-Original-Subject") == subjects.command_subject(case.kind, ws), case.label
        assert msg.headers.get("Dlq-Deliveries") == "1", case.label

    # The processed ones have one stored result each; nothing of the dead-lettered ones was stored.
    processed = {r[0] for r in await bot_db.fetch(
        "SELECT command_id FROM processed_commands WHERE command_id = ANY($1::text[])",
        [c.command_id for c in cases if isinstance(c.command_id, str)])}
    for case in cases:
        if case.expect != "dlq":
            assert case.command_id in processed, case.label
    dead_ids = {c.command_id for c in expected_dead if c.command_id} - {c.command_id for c in cases
                                                                        if c.expect != "dlq"}
    assert not dead_ids & processed, dead_ids & processed
    stored = {r["content"] for r in await server_memories(bot_db, ws)}
    for case in cases:
        if case.expect == "valid":
            assert case.content in stored, case.label
    assert "the last word" in stored


# --- deep nesting, on a worker of its own -----------------------------------------------------


@pytest.fixture
async def lone_worker(pg_server, template_db, tmp_root):
    """A worker on its own NATS server and database: a stuck partition here harms no other test."""
    root = tmp_root / f"lone-{uuid.uuid4().hex[:8]}"
    server = NatsServer(root / "nats").start()
    try:
        database_url = await clone_database(pg_server, template_db)
        worker = WorkerProcess(worker_env(server.url, database_url, MEMORY_PARTITIONS="1", ACK_WAIT_SECONDS="20"),
                               root / "worker.log")
        await asyncio.to_thread(worker.start)
        client = await nats.connect(server.url)
        try:
            yield worker, client
        finally:
            await client.close()
            await asyncio.to_thread(worker.stop)
    finally:
        server.stop()


async def test_deep_nesting_is_dead_lettered_and_the_partition_moves_on(lone_worker):
    worker, client = lone_worker
    box = await Inbox(client).start()
    ws = unique()
    deep_id, valid_id = unique("deep-"), unique("after-deep-")
    deep = command_payload(create_fields(ws, "never"), command_id=deep_id, reply_to=box.subject(deep_id))
    deep_bytes = encode(deep).replace(b'"tool_args": {', b'"tool_args": ' + b"[" * 10_000 + b"]" * 10_000
                                      + b', "x_was": {', 1)
    assert len(deep_bytes) < MAX_COMMAND_BYTES
    valid = command_payload(create_fields(ws, "after the deep one"), command_id=valid_id,
                            reply_to=box.subject(valid_id))
    await publish_command(client, "create", ws, deep_bytes, msg_id=deep_id)
    await publish_command(client, "create", ws, encode(valid), msg_id=valid_id)

    replies = await box.wait_for([box.subject(deep_id), box.subject(valid_id)], timeout=5.0)

    assert worker.proc.poll() is None
    refused = msgspec.json.decode(replies[box.subject(deep_id)])
    assert (refused["command_id"], refused["data"]["status"]) == (deep_id, COMMAND_INVALID), refused
    assert "nested too deeply" in refused["data"]["reason"]
    assert msgspec.json.decode(replies[box.subject(valid_id)])["data"]["status"] == SAVED
    dead = await read_stream(client, subjects.DLQ_STREAM, [subjects.dlq_subject(subjects.command_subject("create", ws))])
    assert [m.data for m in dead] == [deep_bytes]
    assert dead[0].headers.get("Dlq-Reason") == dead_letters.INVALID_COMMAND
