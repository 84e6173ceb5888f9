"""What a hostile or careless bot may publish, under the published permissions (issue 14).

One nats-server runs deploy/nats/accounts.conf verbatim; a real worker (`memoryctl run`) logs
in as `memory-worker`, as Tomori's account's worker runs (its bot's REPLY_SUBJECT_PREFIXES,
TENANT and TENANT_LINEAGES; deploy/README.md, "Adding a bot"). What a bot may do to another
bot's data is in tests/integration/test_bots_apart.py. Bots publish as
`bot-tomori`, the operator works as `memory-operator`, the sink as `metrics-sink`. Every
message the command stream stores must leave it (applied, answered or dead-lettered), and the
worker must keep answering. The boundary fuzz of sizes, subject shapes and command kinds is
at the end of this module, on the same server and worker.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.registry import COMMAND_KINDS
from tests.cluster.nats_deploy import connect_as, connect_options
from tests.conftest import clone_database, unique
from tests.support.commands import FIELDS, envelope
from tests.support.partitions import partition_of
from tests.support.secured import secured_worker
from tests.support.waiting import wait_until
from worker.cli import commands as commands_cli
from worker.cli import dlq as dlq_cli
from worker.consuming.administration import streams

# The recommended setting (deploy/README.md, "Bots apart"): the account's own bot's prefix.
REPLY_PREFIXES = "_INBOX.bot.tomori."
TOMORI_INBOX = "_INBOX.bot.tomori"


@pytest.fixture(scope="module")
async def secured(tmp_root, pg_server, template_db):
    run = uuid.uuid4().hex[:6]
    async with secured_worker(tmp_root / f"nats-hostile-{run}", tmp_root / f"hostile-worker-{run}.log",
                              await clone_database(pg_server, template_db),
                              MEMORY_PARTITIONS="2", MAX_DELIVER="2", REPLY_SUBJECT_PREFIXES=REPLY_PREFIXES,
                              TENANT="tomori", TENANT_LINEAGES="7") as secured:
        yield secured


@pytest.fixture
async def bot(secured):
    errors: list[Exception] = []
    client = await connect_as(secured.url, "bot-tomori", errors=errors)
    client.errors = errors
    box = Replies(client)
    await box.start()
    yield box
    await client.close()


@pytest.fixture
async def as_admin(secured):
    """Looks into MEMORY_COMMANDS and MEMORY_DLQ (the provisioning user's rights): what is left, what was dead-lettered."""
    client = await connect_as(secured.url, "memory-admin")
    yield client.jetstream()
    await client.close()


class Replies:
    """The bot's results, by command id, on its private inbox."""

    def __init__(self, nc) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.got: dict[str, dict] = {}

    async def start(self) -> None:
        async def on_reply(msg) -> None:
            self.got[msg.subject.rsplit(".", 1)[1]] = json.loads(msg.data)

        await self.nc.subscribe(f"{TOMORI_INBOX}.results.*", cb=on_reply)

    @staticmethod
    def reply_to(cid: str) -> str:
        return f"{TOMORI_INBOX}.results.{cid}"

    async def answer(self, cid: str, timeout: float = 15.0) -> dict:
        await wait_until(lambda: cid in self.got, timeout=timeout)
        return self.got[cid]


def command(kind: str, ws: str, cid: str | None = None, reply_to: str | None = "auto", **extra) -> tuple[str, dict]:
    """A valid command of `kind` for workspace `ws`, as JSON-ready dict."""
    cid = cid or unique(f"{kind}-")
    body = {**envelope(ws, command_id=cid, reply_to=Replies.reply_to(cid) if reply_to == "auto" else reply_to),
            **FIELDS[kind](ws, cid), **extra}
    return cid, body


async def publish(bot: Replies, subject: str, payload: bytes, msg_id: str):
    return await bot.js.publish(subject, payload, headers={"Nats-Msg-Id": msg_id}, stream=subjects.COMMANDS_STREAM)


async def stream_has(js, seq: int) -> bool:
    try:
        await js.get_msg(subjects.COMMANDS_STREAM, seq)
        return True
    except NotFoundError:
        return False


async def nothing_waits(js) -> bool:
    """Every command consumer has nothing pending and nothing in hand."""
    for info in await js.consumers_info(subjects.COMMANDS_STREAM):
        if info.num_pending or info.num_ack_pending:
            return False
    return True


def cli_args(module, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.add_parsers(parser.add_subparsers(dest="command"))
    return parser.parse_args(list(argv))


# --------------------------------------------------------------------------------------------


async def test_literal_wildcard_subjects_are_dead_lettered_and_leave_the_stream(secured, bot, as_admin):
    stored = []
    for kind in COMMAND_KINDS:
        for token in ("*", ">"):
            subject = f"memory.{kind}.{token}"
            cid, body = command(kind, unique())
            ack = await publish(bot, subject, json.dumps(body).encode(), cid)  # the bot's permission allows it
            result = await bot.answer(cid)
            assert result["data"]["status"] == "memory_command_invalid", (subject, result)
            assert repr(subject) in result["data"]["reason"], result
            letter = await as_admin.get_last_msg(subjects.DLQ_STREAM, f"dlq.memory.{kind}.{subjects.encode_token(token)}")
            assert letter.headers["Dlq-Original-Subject"] == subject
            assert letter.headers["Dlq-Reason"] == "invalid_command"
            stored.append(ack.seq)
    # Acknowledged, each leaves at the worker's next purge of what was consumed.
    for seq in stored:
        await wait_until(lambda seq=seq: _gone(as_admin, seq), timeout=10, interval=0.1)
    await wait_until(lambda: nothing_waits(as_admin), timeout=10)
    assert (await as_admin.consumer_info(subjects.COMMANDS_STREAM, streams.UNPLACED_CONSUMER)).num_ack_pending == 0
    assert bot.nc.errors == []


async def test_a_command_at_max_payload_is_dead_lettered_by_reference_and_cannot_be_replayed(secured, bot, as_admin):
    ws = unique()
    cid, body = command("create", ws)
    body["x_pad"] = ""
    header_bytes = len(headers_of(cid))
    pad = bot.nc.max_payload - header_bytes - len(json.dumps(body).encode()) - 100  # the window below the limit
    body["x_pad"] = "p" * pad
    data = json.dumps(body).encode()
    await publish(bot, subjects.command_subject("create", ws), data, cid)
    result = await bot.answer(cid)
    assert result["data"]["status"] == "memory_command_invalid" and "over the limit" in result["data"]["reason"]

    letter = await as_admin.get_last_msg(subjects.DLQ_STREAM, f"dlq.memory.create.{ws}")
    assert letter.headers["Dlq-Payload"] == "excerpt"
    assert int(letter.headers["Dlq-Original-Size"]) == len(data)
    assert data.startswith(letter.data) and len(letter.data) == int(letter.headers["Dlq-Excerpt-Bytes"])

    # The worker is still connected and answers the next command.
    after, body = command("create", ws)
    await publish(bot, subjects.command_subject("create", ws), json.dumps(body).encode(), after)
    assert (await bot.answer(after))["data"]["status"] == "memory_saved_successfully"

    lines: list[str] = []
    options = connect_options("memory-operator")
    assert await dlq_cli.run(cli_args(dlq_cli, "dlq", "show", str(letter.seq)), secured.url, out=lines.append,
                             connect_options=options) == 0
    assert any(line.startswith("kept by reference") and str(len(data)) in line for line in lines), lines
    lines.clear()
    assert await dlq_cli.run(cli_args(dlq_cli, "dlq", "replay", str(letter.seq)), secured.url, out=lines.append,
                             connect_options=options) == 1
    assert any(f"cannot replay {letter.seq}: only the first" in line for line in lines), lines
    assert (await as_admin.get_msg(subjects.DLQ_STREAM, letter.seq)).headers["Dlq-Payload"] == "excerpt"


async def test_a_lookup_whose_token_postgres_cannot_hold_is_answered_unknown(secured, bot):
    ws = unique()
    for token in ("%00", "a%00b", "%FF", "%C3"):
        reply = await bot.nc.request(f"memory.result.{subjects.encode_token(ws)}.{token}", b"", timeout=5)
        assert reply.data == b"null", token
        reply = await bot.nc.request(f"memory.result.%00.{token}", b"", timeout=5)
        assert reply.data == b"null", token
    cid, body = command("create", ws)
    await publish(bot, subjects.command_subject("create", ws), json.dumps(body).encode(), cid)
    stored = await bot.answer(cid)
    looked_up = await bot.nc.request(subjects.result_subject(ws, cid), b"", timeout=5)
    assert json.loads(looked_up.data) == stored


async def dead_letters_of(js, ws: str) -> int:
    state = (await js.stream_info(subjects.DLQ_STREAM, subjects_filter=f"dlq.memory.*.{ws}")).state
    return sum((state.subjects or {}).values())


async def test_a_bot_filling_its_dead_letters_cannot_hold_up_another_workspace_s_lookups(secured, bot, as_admin):
    """Garbage costs a bot nothing to publish and each one is a dead letter that every outcome
    lookup of its workspace reads. Another workspace's lookup is answered while the flooded
    workspace's are still being looked up, and every one of those is answered truly."""
    flooded, other = unique(), unique()
    answered, body = command("create", other)
    await publish(bot, subjects.command_subject("create", other), json.dumps(body).encode(), answered)
    done = await bot.answer(answered)
    assert done["data"]["status"] == "memory_saved_successfully"
    refused, body = command("create", flooded, reply_to="bot.private.1")  # dead-lettered: reply_to not allowed
    await publish(bot, subjects.command_subject("create", flooded), json.dumps(body).encode(), refused)
    garbage = [publish(bot, subjects.command_subject("create", flooded), b"not json %d" % i, unique("junk-"))
               for i in range(999)]
    for start in range(0, len(garbage), 100):
        await asyncio.gather(*garbage[start:start + 100])
    await wait_until(lambda: _at_least(dead_letters_of(as_admin, flooded), 1000), timeout=60)

    order: list[str] = []
    answers: dict[str, list[dict]] = {}

    async def on_answer(msg) -> None:
        asker = msg.subject.rsplit(".", 1)[1]
        order.append(asker)
        answers.setdefault(asker, []).append(json.loads(msg.data))

    inbox = f"{TOMORI_INBOX}.lookups"
    sub = await bot.nc.subscribe(f"{inbox}.*", cb=on_answer)
    try:
        never_sent = [unique("never-") for _ in range(10)]
        for cid in [refused] * 10 + never_sent:
            await bot.nc.publish(subjects.result_subject(flooded, cid), b'{"answer": "outcome"}',
                                 reply=f"{inbox}.{subjects.encode_token(cid)}")
        await bot.nc.publish(subjects.result_subject(other, answered), b"", reply=f"{inbox}.other")
        await wait_until(lambda: len(order) == 21, timeout=60)
    finally:
        await sub.unsubscribe()

    last_of_flooded = max(i for i, asker in enumerate(order) if asker != "other")
    assert order.index("other") < last_of_flooded, order
    assert answers["other"] == [done]
    assert len(answers[refused]) == 10
    for outcome in answers[refused]:
        assert (outcome["outcome"], outcome["dead_letter"]["reason"]) == ("dead_lettered", "invalid_command"), outcome
    for cid in never_sent:
        [outcome] = answers[cid]
        assert (outcome["command_id"], outcome["outcome"]) == (cid, "unknown"), outcome


async def _at_least(count, wanted: int) -> bool:
    return await count >= wanted


async def test_reply_subjects_are_limited_to_the_listed_bots(secured, bot, as_admin):
    ws = unique()
    stranger, body = command("create", ws, reply_to=f"_INBOX.bot.stranger.results.{unique()}")
    await publish(bot, subjects.command_subject("create", ws), json.dumps(body).encode(), stranger)
    mine, body = command("create", ws)
    await publish(bot, subjects.command_subject("create", ws), json.dumps(body).encode(), mine)
    assert (await bot.answer(mine))["data"]["status"] == "memory_saved_successfully"
    # The stranger's command came first on the same workspace: it has been dead-lettered by now.
    letter = await as_admin.get_last_msg(subjects.DLQ_STREAM, f"dlq.memory.create.{ws}")
    assert json.loads(letter.data)["command_id"] == stranger
    assert "reply_to must start with one of _INBOX.bot.tomori., got" in letter.headers["Dlq-Error"]


async def test_the_operator_lists_shows_and_drops_waiting_commands(secured, bot, as_admin):
    await asyncio.to_thread(secured.worker.stop)  # nothing consumes: the commands wait, as stuck ones would
    try:
        ws = unique()
        keep, keep_body = command("create", ws)
        drop, drop_body = command("create", ws)
        kept = await publish(bot, subjects.command_subject("create", ws), json.dumps(keep_body).encode(), keep)
        dropped = await publish(bot, subjects.command_subject("create", ws), json.dumps(drop_body).encode(), drop)
        partition = streams.partition_consumer_name(partition_of(subjects.encode_token(ws), 2))
        options = connect_options("memory-operator")

        async def ctl(*argv: str) -> tuple[int, list[str]]:
            lines: list[str] = []
            code = await commands_cli.run(cli_args(commands_cli, "commands", *argv), secured.url, out=lines.append,
                                          connect_options=options)
            return code, lines

        code, lines = await ctl("list")
        assert code == 0
        text = "\n".join(lines)
        assert f"{partition} (first" in text and str(kept.seq) in text and drop in text, text
        assert any(line.startswith(streams.UNPLACED_CONSUMER) for line in lines), text
        code, lines = await ctl("list", "--json")
        listed = json.loads("\n".join(lines))
        [waiting] = [c for c in listed["consumers"] if c["consumer"] == partition]
        assert code == 0 and listed["stream"] == subjects.COMMANDS_STREAM and listed["messages"] >= 2
        assert [(c["seq"], c["command_id"]) for c in waiting["commands"]][-2:] == [(kept.seq, keep),
                                                                                  (dropped.seq, drop)]
        assert streams.UNPLACED_CONSUMER in [c["consumer"] for c in listed["consumers"]]
        code, lines = await ctl("show", str(dropped.seq))
        assert code == 0 and f"seq {dropped.seq}" in lines[0] and any(drop in line for line in lines)
        code, lines = await ctl("drop", "--dry-run", str(dropped.seq))
        assert code == 0 and lines[-1] == "dry run: 1 command(s) would be dropped, nothing deleted"
        assert await stream_has(as_admin, dropped.seq)
        code, lines = await ctl("drop", str(dropped.seq), "999999999")
        assert code == 1 and "999999999" in lines[-1]  # a wrong sequence: nothing done
        assert await stream_has(as_admin, dropped.seq)
        code, lines = await ctl("drop", str(dropped.seq))  # no terminal to ask on, no --yes: refused
        assert code == 2 and "Add --yes" in lines[-1] and await stream_has(as_admin, dropped.seq)
        code, lines = await ctl("drop", "--yes", str(dropped.seq))
        assert code == 0 and not await stream_has(as_admin, dropped.seq)
    finally:
        await asyncio.to_thread(secured.worker.start)
    assert (await bot.answer(keep, timeout=30))["data"]["status"] == "memory_saved_successfully"
    looked_up = await bot.nc.request(subjects.result_subject(ws, drop), b"", timeout=5)
    assert looked_up.data == b"null" and drop not in bot.got


async def test_a_metrics_sink_may_reset_its_own_consumers(secured):
    errors: list[Exception] = []
    sink = await connect_as(secured.url, "metrics-sink", errors=errors)
    try:
        js = sink.jetstream()
        for name in ("metrics-sink-jsonl", "metrics-sink-postgres"):
            await js.add_consumer(subjects.EVENTS_STREAM, ConsumerConfig(
                name=name, durable_name=name, filter_subject="metrics.>", deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.EXPLICIT))
            # The documented reset (deploy/README.md): delete the consumer; the next start reads from the beginning.
            assert await js.delete_consumer(subjects.EVENTS_STREAM, name)
        with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
            await sink.request(f"$JS.API.CONSUMER.DELETE.{subjects.EVENTS_STREAM}.bot-tomori-saved", b"", timeout=1)
    finally:
        await sink.close()
    assert any("permissions violation" in str(e).lower() for e in errors)


# --------------------------------------------------------------------------------------------
# The boundary fuzz: sizes at and around MAX_COMMAND_BYTES and max_payload, every subject
# shape, every command kind. Each message is refused at publish, or stored and then leaves the
# stream answered or dead-lettered; a valid command sent right after each is answered.

MAX_COMMAND_BYTES = 65536  # the worker's default
SHAPES = {"*": "*", ">": ">", "empty": "", "a*b": "a*b", "a>b": "a>b", "control \\x01": "a\x01b",
          "DEL \\x7f": "\x7f", "%00": "%00", "bad escape %ZZ": "%ZZ", "%FF (not UTF-8)": "%FF",
          "raw non-ASCII": "é", "3,000 bytes": "x" * 3000, "4,000 bytes (control line)": "y" * 4000}


def headers_of(cid: str) -> bytes:
    """The headers as nats-py sends them with a JetStream publish naming its stream."""
    return f"NATS/1.0\r\nNats-Msg-Id: {cid}\r\nNats-Expected-Stream: {subjects.COMMANDS_STREAM}\r\n\r\n".encode()


def sized(ws: str, total: int, header_bytes: int = 0) -> tuple[str, bytes]:
    """A valid create of exactly `total` bytes of body (padded with an unknown field), or of
    `total` bytes body and headers together when header_bytes is given."""
    cid, body = command("create", ws)
    body["x_pad"] = ""
    base = len(json.dumps(body).encode()) + len(headers_of(cid)) * bool(header_bytes)
    body["x_pad"] = "p" * (total - base)
    data = json.dumps(body).encode()
    assert len(data) + (base - len(json.dumps({**body, "x_pad": ""}).encode()) if header_bytes else 0) == total
    return cid, data


def boundary_cases(max_payload: int) -> list[tuple[str, str, str, bytes]]:
    """(label, subject, command id, payload)."""
    cases = []
    for total, what in ((MAX_COMMAND_BYTES - 1, "MAX_COMMAND_BYTES - 1"), (MAX_COMMAND_BYTES, "MAX_COMMAND_BYTES"),
                        (MAX_COMMAND_BYTES + 1, "MAX_COMMAND_BYTES + 1"), (max_payload - 1500, "max_payload - 1500"),
                        (max_payload - 200, "max_payload - 200")):
        ws = unique()
        cid, data = sized(ws, total)
        cases.append((f"create of {what} bytes", subjects.command_subject("create", ws), cid, data))
    for total, what in ((max_payload - 100, "max_payload - 100"), (max_payload - 1, "max_payload - 1"),
                        (max_payload, "max_payload"), (max_payload + 1, "max_payload + 1")):
        ws = unique()
        cid, data = sized(ws, total, header_bytes=1)
        cases.append((f"create of {what} bytes with its header", subjects.command_subject("create", ws), cid, data))
    ws = unique()
    cid, body = command("create", ws)
    cases.append(("create body of max_payload + 1 bytes", subjects.command_subject("create", ws), cid,
                  json.dumps({**body, "x_pad": "p" * max_payload}).encode()))
    for kind in COMMAND_KINDS:
        ws = unique()
        cid, body = command(kind, ws)
        cases.append((f"valid {kind}", subjects.command_subject(kind, ws), cid, json.dumps(body).encode()))
        cases.append((f"{kind} not JSON", subjects.command_subject(kind, ws), unique("nojson-"), b"{not json"))
        for label, token in SHAPES.items():
            cid, body = command(kind, token or "w")
            cases.append((f"{kind} on token {label}", f"memory.{kind}.{token}", cid, json.dumps(body).encode()))
        cid, body = command(kind, "a")
        cases.append((f"{kind} with a fourth token", f"memory.{kind}.a.b", cid, json.dumps(body).encode()))
    cid, body = command("create", "w")
    cases.append(("unknown kind memory.forget", "memory.forget.w", cid, json.dumps(body).encode()))
    return cases


async def publish_case(secured, subject: str, cid: str, data: bytes):
    """The PubAck, or what refused the message at publish."""
    publisher = await connect_as(secured.url, "bot-tomori", max_reconnect_attempts=0)  # it may be closed
    try:
        return await publisher.jetstream().publish(subject, data, headers={"Nats-Msg-Id": cid},
                                                   stream=subjects.COMMANDS_STREAM, timeout=1)
    except Exception as exc:
        return f"refused at publish: {type(exc).__name__}" + (" (the server closed the publisher's connection)"
                                                               if publisher.is_closed else "")
    finally:
        await publisher.close()


async def outcome_of(secured, bot: Replies, as_admin, subject: str, cid: str, data: bytes, sent) -> str:
    """A stored message left the stream: dead-lettered (found by its stream sequence), answered, or both."""
    from worker.consuming.dead_letters import letter_id, letter_subject
    from worker.consuming.probe import answerable

    if isinstance(sent, str):
        return sent
    try:
        await wait_until(lambda: _gone(as_admin, sent.seq), timeout=20, interval=0.1)
    except AssertionError:
        stored = await as_admin.get_msg(subjects.COMMANDS_STREAM, sent.seq)
        consumers = [(c.name, c.num_pending, c.num_ack_pending, c.num_redelivered)
                     for c in await as_admin.consumers_info(subjects.COMMANDS_STREAM)]
        raise AssertionError(f"{subject!r} (stream seq {sent.seq}, stored as {stored.subject!r}) never left the "
                             f"stream; consumers {consumers}; the worker's log ends:\n"
                             + secured.worker.log_text()[-3000:]) from None
    try:
        letter = await as_admin.get_last_msg(subjects.DLQ_STREAM, letter_subject(subject))
        letter = letter if letter.headers.get("Nats-Msg-Id") == letter_id(sent.seq) else None
    except NotFoundError:
        letter = None
    parts = []
    if letter is not None:
        parts.append(f"dead-lettered {letter.headers['Dlq-Reason']}"
                     + (" by reference" if letter.headers.get("Dlq-Payload") == "excerpt" else ""))
    # Answered where a reply subject can be read from it (always, when not dead-lettered).
    if letter is None or answerable(data, tuple(REPLY_PREFIXES.split(",")))[1]:
        parts.append(f"answered {(await bot.answer(cid))['data']['status']}")
    return ", ".join(parts)


async def _gone(js, seq: int) -> bool:
    return not await stream_has(js, seq)


async def test_boundary_fuzz_every_message_is_answered_or_dead_lettered(secured, bot, as_admin):
    # Each case, then a valid create right after it; their fates are awaited together.
    sent = []
    for label, subject, cid, data in boundary_cases(bot.nc.max_payload):
        ack = await publish_case(secured, subject, cid, data)
        after, body = command("create", unique())
        await publish(bot, subjects.command_subject("create", body["workspace_id"]), json.dumps(body).encode(), after)
        sent.append((label, subject, cid, data, ack, after))
    outcomes = await asyncio.gather(*(outcome_of(secured, bot, as_admin, subject, cid, data, ack)
                                      for _, subject, cid, data, ack, _ in sent))
    rows = []
    for (label, _, _, data, _, after), outcome in zip(sent, outcomes, strict=True):
        assert (await bot.answer(after))["data"]["status"] == "memory_saved_successfully", label
        rows.append((label, len(data), outcome))
    print("\n" + "\n".join(f"| {label} | {size} | {outcome} |" for label, size, outcome in rows))
    assert secured.worker.proc.poll() is None
    await wait_until(lambda: nothing_waits(as_admin), timeout=10)
    stored = [r for r in rows if not r[2].startswith("refused")]
    assert len(stored) >= 60, rows
    assert "permissions violation" not in secured.worker.log_text().lower()
