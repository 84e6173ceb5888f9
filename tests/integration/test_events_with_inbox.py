"""A command's events kept with its inbox row and published after commit, before its ack
(db/migrations/006_events_in_inbox.sql; a create's rendered from the decision and facts its
row stores, worker/services/stored.py), on a real nats-server and PostgreSQL, through the
worker's own handler and partition consumers:

- events only after commit, each command's invalidations stored before the rest;
- nothing lost when the worker fails between commit and publish: the command is not acked,
  and the redelivery of the same message publishes the events stored with it;
- nothing stored twice: a republish within the duplicate window is stored once by its
  Nats-Msg-Id, and a different message with the same command id (a re-send under a derived
  message id, a replayed dead letter) publishes nothing, even past the duplicate window;
- the give-up path publishes an applied command's events before it acks, and never
  dead-letters it;
- creates (alone or batched) and panels publish from their inbox rows the same way (a
  create's row holds what its events are rendered from, a panel's the events themselves; the
  bio seed's: tests/integration/test_reinforce_and_seed.py).

The failure "between commit and publish" is a publisher that raises for a chosen command:
before storing anything (the worker died or lost NATS first), or after storing (the ack was
lost). tests/chaos kills real worker processes at any moment instead."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Sequence

import msgspec
import nats.errors
import nats.js.errors
import pytest
from nats.js.api import ConsumerConfig, DeliverPolicy

from contracts import subjects
from contracts.envelope import Envelope as CommandEnvelope
from contracts.registry import decoder_for
from db.inbox import EventRow
from db.repository import MemoryRepository
from tests.support import fresh_nats
from tests.support.commands import command_payload, create_fields, manual_fields, update_fields
from tests.support.services import service_table
from tests.support.waiting import wait_until
from worker.consuming.administration import streams
from worker.consuming.events.publisher import EventPublisher
from worker.consuming.intake.handlers import CommandHandler
from worker.consuming.intake.partitions import PartitionConsumers
from worker.consuming.limits import limits_from
from worker.shared.settings import Settings

from ..conftest import unique
from .helpers import inbox_row_events

server, nc = fresh_nats.server, fresh_nats.nc

PARTITIONS = 2
ACK_WAIT_S = 2
MAX_DELIVER = 2
LINEAGE = 7


class Faulty(EventPublisher):
    """The worker's publisher, failing for chosen commands: `before` raises without storing
    anything, `after` stores the events and then raises (as a lost ack would leave it). Each
    entry is (command id, how many publishes fail). Records what every publish carried, and
    checks that the command's inbox row was committed before any of its events went out."""

    def __init__(self, js, nc, pool) -> None:
        super().__init__(js, nc=nc, ack_timeout=5.0)
        self.pool = pool
        self.before: Counter[str] = Counter()
        self.after: Counter[str] = Counter()
        self.error: Exception = nats.errors.ConnectionClosedError()
        self.calls: list[tuple[str, list[str]]] = []
        self.uncommitted: list[str] = []

    async def publish_coalesced(self, events: Sequence[EventRow]) -> None:
        if not events:
            return
        cid = json.loads(bytes(events[0].payload))["command_id"]
        self.calls.append((cid, [e.headers["Nats-Msg-Id"] for e in events]))
        if not await self.pool.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = $1", cid):
            self.uncommitted.append(cid)
        if self.before[cid]:
            self.before[cid] -= 1
            raise self.error
        await super().publish_coalesced(events)
        if self.after[cid]:
            self.after[cid] -= 1
            raise self.error


@pytest.fixture
async def worker(nc, pool):
    """The worker's handler on the partition consumers, with a Faulty publisher."""
    js = nc.jetstream()
    await streams.provision(js, nc, partitions=PARTITIONS, ack_wait_s=ACK_WAIT_S)
    publisher = Faulty(js, nc, pool)
    repo, limits = MemoryRepository(pool), limits_from(Settings.from_env({}))
    handler = CommandHandler(nc, js, publisher, service_table(repo, limits, create_batch=32), repo.stored_command,
                             max_deliver=MAX_DELIVER,
                             reply_prefixes=("_INBOX.",))
    consumers = PartitionConsumers(js, nc, handler, PARTITIONS, ack_wait_s=float(ACK_WAIT_S))
    await consumers.start()
    yield publisher
    await consumers.stop(timeout=10)
    await handler.aclose(5)


class Bot:
    """Publishes commands straight to MEMORY_COMMANDS and collects the worker's answers."""

    def __init__(self, nc) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.inbox = f"_INBOX.bot.{unique()}"
        self.answers: list[dict] = []
        self.sent: dict[str, CommandEnvelope] = {}  # by command id: what was sent, decoded

    async def __aenter__(self) -> Bot:
        self.sub = await self.nc.subscribe(self.inbox, cb=self._answer)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.sub.unsubscribe()

    async def _answer(self, msg) -> None:
        self.answers.append(json.loads(msg.data))

    async def send(self, kind: str, fields: dict, *, command_id: str, msg_id: str | None = None) -> None:
        data = json.dumps(command_payload(fields, command_id=command_id, reply_to=self.inbox)).encode()
        self.sent[command_id] = decoder_for(kind).decode(data)
        await self.js.publish(subjects.command_subject(kind, fields["workspace_id"]), data,
                              headers={"Nats-Msg-Id": msg_id or command_id}, stream=subjects.COMMANDS_STREAM)

    async def answered(self, command_id: str, times: int = 1, timeout: float = 30.0) -> dict:
        await wait_until(lambda: sum(a["command_id"] == command_id for a in self.answers) >= times,
                         timeout=timeout, what=f"{times} answer(s) to {command_id}")
        return next(a for a in self.answers if a["command_id"] == command_id)


async def stored_events(js, command_id: str) -> list[tuple[str, str, int]]:
    """(subject, Nats-Msg-Id, stream sequence) of every MEMORY_EVENTS message of a command, in
    stream order (metrics carry no command id: they are matched by their stored ids)."""
    sub = await js.pull_subscribe(">", stream=subjects.EVENTS_STREAM,
                                  config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL))
    out = []
    while (await sub.consumer_info()).num_pending:
        try:
            msgs = await sub.fetch(200, timeout=2)
        except (nats.errors.TimeoutError, asyncio.TimeoutError):
            continue
        for m in msgs:
            body = json.loads(m.data)
            if body.get("command_id") == command_id:
                out.append((m.subject, m.headers["Nats-Msg-Id"], m.metadata.sequence.stream))
    await sub.unsubscribe()
    return out


async def acked(js) -> None:
    async def nothing_pending() -> bool:
        for p in range(PARTITIONS):
            info = await js.consumer_info(subjects.COMMANDS_STREAM, streams.partition_consumer_name(p))
            if info.num_ack_pending or info.num_pending:
                return False
        return True

    await wait_until(nothing_pending, timeout=30.0, what="every command acknowledged")


async def inbox_events(pool, bot: Bot, command_id: str) -> list[str]:
    """The Nats-Msg-Ids of the events the command's inbox row publishes for a redelivery."""
    return [e.headers["Nats-Msg-Id"] for e in await inbox_row_events(pool, bot.sent[command_id])]


def save(ws: str, content: str) -> dict:
    return create_fields(ws, content, lineage_id=LINEAGE)


async def test_events_go_out_after_commit_invalidations_first_and_once(nc, worker, pool):
    js = nc.jetstream()
    async with Bot(nc) as bot:
        ws, cid = unique(), unique("c-")
        await bot.send("create", save(ws, "{user} likes tea"), command_id=cid)
        answer = await bot.answered(cid)
    assert answer["data"]["status"] == "memory_saved_successfully", answer
    events = await stored_events(js, cid)
    assert [s for s, _, _ in events] == [subjects.invalidate_subject("tomori_state", ws),
                                         subjects.saved_subject("server", ws)]
    assert [i for _, i, _ in events] == await inbox_events(pool, bot, cid)
    assert worker.uncommitted == []


async def test_a_failure_between_commit_and_publish_loses_nothing(nc, worker, pool):
    """The publish fails before anything is stored: the command is not acked, is delivered
    again, and that redelivery (the same stream message) publishes the stored events."""
    js = nc.jetstream()
    async with Bot(nc) as bot:
        ws, cid = unique(), unique("c-")
        worker.before[cid] = 1
        await bot.send("create", save(ws, "survives a crash"), command_id=cid)
        answer = await bot.answered(cid)
    assert answer["data"]["status"] == "memory_saved_successfully", answer
    await acked(js)
    # Published twice: the first attempt failed, the redelivery published the same events.
    calls = [ids for c, ids in worker.calls if c == cid]
    assert len(calls) == 2 and calls[0] == calls[1] == await inbox_events(pool, bot, cid)
    events = await stored_events(js, cid)
    assert [i for _, i, _ in events] == calls[0]
    assert await pool.fetchval("SELECT count(*) FROM server_memories m JOIN servers s USING (server_id)"
                               " WHERE s.server_disc_id = $1", ws) == 1


async def test_events_stored_before_a_lost_ack_are_stored_once_when_republished(nc, worker, pool):
    js = nc.jetstream()
    async with Bot(nc) as bot:
        ws, cid = unique(), unique("c-")
        worker.after[cid] = 1
        await bot.send("create", save(ws, "stored before the ack was lost"), command_id=cid)
        await bot.answered(cid)
    await acked(js)
    assert len([c for c, _ in worker.calls if c == cid]) == 2
    events = await stored_events(js, cid)
    assert len(events) == 2 and len({i for _, i, _ in events}) == 2


async def test_another_message_with_the_same_command_id_publishes_nothing_even_past_the_duplicate_window(
        nc, worker, pool):
    """A bot re-sending under a derived message id, or a dead letter replayed, after the
    events were stored: the inbox answers, and nothing is published again. The stream's
    duplicate window is cut to a second here, so a republish would be stored twice."""
    js = nc.jetstream()
    config = (await js.stream_info(subjects.EVENTS_STREAM)).config
    config.duplicate_window = 1.0
    await js.update_stream(config)
    async with Bot(nc) as bot:
        ws, cid = unique(), unique("c-")
        await bot.send("create", save(ws, "said once"), command_id=cid)
        first = await bot.answered(cid)
        await acked(js)
        await asyncio.sleep(1.5)  # past the duplicate window: a republish would be a second copy
        await bot.send("create", save(ws, "said once"), command_id=cid, msg_id=f"{cid}:resend")
        await bot.answered(cid, times=2)
    await acked(js)
    answers = [a for a in bot.answers if a["command_id"] == cid]
    assert answers[0] == answers[1] == first
    assert len([c for c, _ in worker.calls if c == cid]) == 1
    events = await stored_events(js, cid)
    assert len(events) == 2 and len({i for _, i, _ in events}) == 2


async def test_the_same_message_redelivered_past_the_duplicate_window_still_publishes(nc, worker, pool):
    """The rule's other side: the message that applied the command publishes its events
    however late it comes back (here its first publish failed and the window is a second)."""
    js = nc.jetstream()
    config = (await js.stream_info(subjects.EVENTS_STREAM)).config
    config.duplicate_window = 0.2
    await js.update_stream(config)
    async with Bot(nc) as bot:
        ws, cid = unique(), unique("c-")
        worker.before[cid] = 1
        await bot.send("create", save(ws, "late but published"), command_id=cid)
        await bot.answered(cid)
    await acked(js)
    events = await stored_events(js, cid)
    assert [i for _, i, _ in events] == await inbox_events(pool, bot, cid) and len(events) == 2


async def test_giving_up_on_an_applied_command_publishes_its_events_and_never_dead_letters_it(nc, worker, pool):
    """Publishing keeps failing with an error that counts (not an outage) past MAX_DELIVER,
    and even while giving up: the command is never acked nor dead-lettered until its events
    are stored; then it is answered with its stored result."""
    js = nc.jetstream()
    worker.error = nats.js.errors.APIError(code=500, description="refused")
    async with Bot(nc) as bot:
        ws, cid = unique(), unique("c-")
        worker.before[cid] = MAX_DELIVER + 2  # every attempt, then the first two give-ups
        await bot.send("create", save(ws, "outlasts the retries"), command_id=cid)
        answer = await bot.answered(cid, timeout=60.0)
    await acked(js)
    assert answer["data"]["status"] == "memory_saved_successfully", answer
    assert len([c for c, _ in worker.calls if c == cid]) == MAX_DELIVER + 3
    assert [i for _, i, _ in await stored_events(js, cid)] == await inbox_events(pool, bot, cid)
    dlq = await js.stream_info(subjects.DLQ_STREAM)
    assert dlq.state.messages == 0


async def test_every_command_kind_keeps_its_events_with_its_inbox_row(nc, worker, pool):
    """Creates (several at once, so some share a batch), a panel add and the model's edit of it:
    each command's inbox row publishes the events it published (a create's and an update's
    rendered again), once, invalidations first."""
    js = nc.jetstream()
    ws = unique()
    async with Bot(nc) as bot:
        creates = [unique("c-") for _ in range(6)]
        await asyncio.gather(*(bot.send("create", save(f"{ws}-{i}", f"fact {i}"), command_id=cid)
                               for i, cid in enumerate(creates)))
        panel = unique("m-")
        await bot.send("manual", {"workspace_id": ws, **manual_fields(actor="300000000000000001", lineage_id=LINEAGE,
                                                                    content="a panel fact")}, command_id=panel)
        for cid in [*creates, panel]:
            assert (await bot.answered(cid))["success"], bot.answers
        edit = unique("u-")
        memory_id = (await bot.answered(panel))["data"]["memory_id"]
        await bot.send("update", update_fields(ws, memory_id, "an edited fact", lineage_id=LINEAGE), command_id=edit)
        assert (await bot.answered(edit))["data"]["status"] == "memory_updated_successfully", bot.answers
    await acked(js)
    for cid in [*creates, panel, edit]:
        events = await stored_events(js, cid)
        assert [i for _, i, _ in events] == await inbox_events(pool, bot, cid) != []
        assert events[0][0].startswith(subjects.INVALIDATE_PREFIX)
async def test_a_stored_row_naming_no_event_subject_is_never_published(nc):
    """Events are published from stored rows (a command's inbox row): a row whose subject is not
    one of MEMORY_EVENTS' is refused, with the rest of its
    command's events, and nothing at all is published for that command (issue 35)."""
    js = nc.jetstream()
    await streams.ensure_stream(js, streams.events_stream())
    trapped: list[str] = []

    async def caught(msg) -> None:
        trapped.append(msg.subject)

    await nc.subscribe("$JS.API.STREAM.PURGE.>", cb=caught)
    ws = unique()
    rows = [EventRow(subjects.saved_subject("server", ws), {"Nats-Msg-Id": unique("e-")}, msgspec.Raw(b"{}")),
            EventRow(f"$JS.API.STREAM.PURGE.{subjects.EVENTS_STREAM}", {}, msgspec.Raw(b"{}"))]
    publisher = EventPublisher(js, nc=nc)
    with pytest.raises(ValueError, match="not an event subject"):
        await publisher.publish(rows)
    assert not await publisher.publish_together([rows])  # a batch holding it: each command on its own
    with pytest.raises(ValueError, match="not an event subject"):
        await publisher.publish_coalesced(rows)
    await nc.flush()
    assert trapped == []
    with pytest.raises(nats.js.errors.NotFoundError):
        await js.get_last_msg(subjects.EVENTS_STREAM, subjects.saved_subject("server", ws))
    await publisher.stop()
