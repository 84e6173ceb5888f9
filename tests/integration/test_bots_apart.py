"""Bots apart (issue 29): two bots under the shipped configuration, as hostile bots would try.

One nats-server runs deploy/nats/accounts.conf verbatim (with tenant-kaede.conf and the
permission files it includes): Tomori's account MEMORY and Kaede's account MEMORY_KAEDE, each
with its own worker (`memoryctl run` with TENANT and TENANT_LINEAGES), both workers on one
shared database. Each bot does what it is for, and tries to reach the other's data: every
such try is refused by the server (a permissions violation, or a JetStream API error where
the request itself is allowed), and what is allowed carries only the bot's own data.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg
import msgspec
import nats
import nats.errors
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.kinds.create import PRIVACY_RESTRICTED, SAVED
from contracts.kinds.manual import BLACKLISTED
from contracts.kinds.reinforce import ReinforceMemories
from contracts.result_parts import COMMAND_INVALID, InvalidCommandResult
from db import applier
from db.effects import StoreResult
from db.inbox import EventRow
from db.pool import create_pool
from db.repository import MemoryRepository
from tests.cluster.nats_deploy import PASSWORDS, NatsNode, connect_as, connect_options, eventually, single_node
from tests.conftest import WorkerProcess, clone_database, unique, worker_env
from tests.e2e.bus import create_fields
from tests.memoryctl import memoryctl
from tests.support.commands import manual_fields, reinforce_command, reinforce_fields
from tests.support.directory import add_server, add_user, blacklist
from tests.support.waiting import wait_until
from worker.client.cache_node import CacheNode
from worker.client.memory_client import MemoryClient
from worker.local.embedded import _nats_server_binary
from worker.services import stored as stored_commands
from worker.services.stored import seen_before


@dataclass(frozen=True)
class Tenant:
    name: str
    lineage: int

    @property
    def bot(self) -> str:
        return f"bot-{self.name}"

    @property
    def worker_user(self) -> str:
        return "memory-worker" if self.name == "tomori" else f"memory-worker-{self.name}"

    @property
    def admin_user(self) -> str:
        return "memory-admin" if self.name == "tomori" else f"memory-admin-{self.name}"

    @property
    def inbox(self) -> str:
        return f"_INBOX.bot.{self.name}"

    def worker_settings(self) -> dict[str, str]:
        """The worker of this bot's account, as deploy/README.md ("Adding a bot") runs it."""
        return {"NATS_USER": self.worker_user, "NATS_PASSWORD": PASSWORDS[self.worker_user], "TENANT": self.name,
                "TENANT_LINEAGES": str(self.lineage), "REPLY_SUBJECT_PREFIXES": f"{self.inbox}."}


TOMORI = Tenant("tomori", 7)
KAEDE = Tenant("kaede", 8)
PAIRS = [(TOMORI, KAEDE), (KAEDE, TOMORI)]
MANAGER = "130000000000000001"


@dataclass
class Apart:
    node: NatsNode
    database_url: str
    workers: dict[str, WorkerProcess]

    @property
    def url(self) -> str:
        return self.node.url


@pytest.fixture(scope="module")
async def apart(tmp_root, pg_server, template_db):
    run = uuid.uuid4().hex[:6]
    database_url = await clone_database(pg_server, template_db)
    node = single_node(tmp_root / f"nats-apart-{run}")
    workers: dict[str, WorkerProcess] = {}
    try:
        for tenant in (TOMORI, KAEDE):
            workers[tenant.name] = WorkerProcess(
                worker_env(node.url, database_url, MEMORY_PARTITIONS="2", MAX_DELIVER="2", **tenant.worker_settings()),
                tmp_root / f"apart-{tenant.name}-{run}.log")
        await asyncio.gather(*(asyncio.to_thread(w.start) for w in workers.values()))
        yield Apart(node, database_url, workers)
    finally:
        for worker in workers.values():
            await asyncio.to_thread(worker.stop)
        node.stop()
        node.kill()


@pytest.fixture
async def db(apart):
    conn = await asyncpg.connect(apart.database_url)
    yield conn
    await conn.close()


class Bot:
    """One bot's connection, its MemoryClient and the asynchronous errors the server sent it."""

    def __init__(self, tenant: Tenant, nc, memory: MemoryClient, errors: list[Exception]) -> None:
        self.tenant, self.nc, self.memory, self.errors = tenant, nc, memory, errors
        self.js = nc.jetstream()

    def violations(self) -> list[str]:
        return [str(e).lower() for e in self.errors if "permissions violation" in str(e).lower()]

    async def denied(self, *what: str) -> None:
        """Each of `what` (e.g. 'subscription to "x"') was reported as a permissions violation."""
        wanted = [f"permissions violation for {w}".lower() for w in what]

        async def reported() -> bool:
            return all(any(w in v for v in self.violations()) for w in wanted)

        try:
            await eventually(reported, 5, f"violations {wanted}")
        except AssertionError:
            raise AssertionError(f"expected violations {wanted}, {self.tenant.bot} got {self.errors}") from None


async def connect_bot(apart: Apart, tenant: Tenant) -> Bot:
    errors: list[Exception] = []
    nc = await connect_as(apart.url, tenant.bot, errors=errors)
    memory = await MemoryClient(nc, timeout=15).start()
    return Bot(tenant, nc, memory, errors)


@pytest.fixture
async def bots(apart):
    pair = {t.name: await connect_bot(apart, t) for t in (TOMORI, KAEDE)}
    yield pair
    for bot in pair.values():
        await bot.memory.close()
        await bot.nc.close()


async def saved_events(bot: Bot, until_command: str) -> list[dict]:
    """The bot's memory.saved events through its own consumer (made by its worker), up to the
    one of `until_command`."""
    sub = await bot.js.pull_subscribe_bind(durable=f"{bot.tenant.bot}-saved", stream=subjects.EVENTS_STREAM)
    seen: list[dict] = []
    try:
        for _ in range(30):
            try:
                msgs = await sub.fetch(50, timeout=2)
            except nats.errors.TimeoutError:
                continue
            for msg in msgs:
                seen.append(json.loads(msg.data))
                await msg.ack()
            if any(e["command_id"] == until_command for e in seen):
                return seen
    finally:
        await sub.unsubscribe()
    raise AssertionError(f"{bot.tenant.bot} never read the event of {until_command}: {seen}")


async def as_worker(apart: Apart, tenant: Tenant):
    """A connection with the rights of the tenant's worker, to publish what it publishes."""
    return await connect_as(apart.url, tenant.worker_user)


async def as_admin(apart: Apart, tenant: Tenant):
    """A connection with the rights of the tenant's provisioning user, to look into its account's streams."""
    return await connect_as(apart.url, tenant.admin_user)


async def server_memories(db, ws: str) -> list[tuple[int, str]]:
    rows = await db.fetch("SELECT m.persona_lineage_id, m.content FROM server_memories m JOIN servers s"
                          " ON s.server_id = m.server_id WHERE s.server_disc_id = $1 ORDER BY 1, 2", ws)
    return [(r[0], r[1]) for r in rows]


# --------------------------------------------------------------------------------------------
# Results, lookups and events: each bot's own only


async def test_each_bot_gets_only_its_own_results_lookups_and_events(apart, bots, db):
    tomori, kaede = bots["tomori"], bots["kaede"]
    ws = unique()  # one guild, both bots in it
    mine = {}
    for bot in (tomori, kaede):
        result = await bot.memory.create(create_fields(ws, f"{bot.tenant.name}'s secret", lineage_id=bot.tenant.lineage))
        assert result.data.status == SAVED, result
        mine[bot.tenant.name] = result.command_id
    assert await server_memories(db, ws) == [(7, "tomori's secret"), (8, "kaede's secret")]
    assert await db.fetchval("SELECT count(*) FROM servers WHERE server_disc_id = $1", ws) == 1

    for bot, other in ((tomori, kaede), (kaede, tomori)):
        name, other_name = bot.tenant.name, other.tenant.name
        # The lookup of its own command answers the stored result; of the other's, nothing.
        own = json.loads((await bot.nc.request(subjects.result_subject(ws, mine[name]), b"", timeout=5)).data)
        assert own["data"]["status"] == SAVED and own["command_id"] == mine[name]
        theirs = await bot.nc.request(subjects.result_subject(ws, mine[other_name]), b"", timeout=5)
        assert theirs.data == b"null"
        outcome = await bot.nc.request(subjects.result_subject(ws, mine[other_name]), b'{"answer": "outcome"}',
                                       timeout=5)
        assert json.loads(outcome.data)["outcome"] == "unknown"
        # Its consumer reads its own event; the other bot's is in no stream of this account.
        events = await saved_events(bot, mine[name])
        assert mine[other_name] not in {e["command_id"] for e in events}
        assert not any(f"{other_name}'s secret" in json.dumps(e) for e in events)
        nc = await as_admin(apart, bot.tenant)
        try:
            last = await nc.jetstream().get_last_msg(subjects.EVENTS_STREAM, subjects.saved_subject("server", ws))
            assert json.loads(last.data)["command_id"] == mine[name]
            info = await nc.jetstream().stream_info(subjects.EVENTS_STREAM, subjects_filter=f"memory.*.server.{ws}")
            assert info.state.subjects == {subjects.saved_subject("server", ws): 1}
        finally:
            await nc.close()

    # Kaede re-using Tomori's command id (which it could only guess) is refused, not answered
    # with Tomori's result.
    reused = await kaede.memory.create(create_fields(ws, "a guess", lineage_id=KAEDE.lineage,
                                                     command_id=mine["tomori"]))
    assert reused.data.status == COMMAND_INVALID and "another bot" in reused.error
    assert b"tomori's secret" not in msgspec.json.encode(reused)
    assert await server_memories(db, ws) == [(7, "tomori's secret"), (8, "kaede's secret")]
    assert tomori.violations() == [] and kaede.violations() == []


# --------------------------------------------------------------------------------------------
# Nothing outside the bot's own account


@pytest.mark.parametrize(("tenant", "other"), PAIRS, ids=["tomori-tries-kaede", "kaede-tries-tomori"])
async def test_a_bot_reaches_nothing_of_the_other_bot(apart, bots, tenant, other):
    bot = bots[tenant.name]
    ws = unique()
    watcher = await as_admin(apart, other)
    try:
        before = (await watcher.jetstream().stream_info(subjects.COMMANDS_STREAM)).state.last_seq
        other_consumer = f"{other.bot}-saved"
        # Reading: the other bot's inbox, any inbox, every event, everything.
        for subject in (f"{other.inbox}.>", "_INBOX.>", "memory.saved.>", ">"):
            await bot.nc.subscribe(subject)
        # The other bot's consumer (by name), the events stream by sequence, any stream's info.
        for subject in (f"$JS.API.CONSUMER.CREATE.{subjects.EVENTS_STREAM}.{other_consumer}.memory.saved.>",
                        f"$JS.API.CONSUMER.MSG.NEXT.{subjects.EVENTS_STREAM}.{other_consumer}",
                        f"$JS.API.CONSUMER.INFO.{subjects.EVENTS_STREAM}.{other_consumer}",
                        f"$JS.API.STREAM.MSG.GET.{subjects.EVENTS_STREAM}",
                        f"$JS.API.DIRECT.GET.{subjects.EVENTS_STREAM}",
                        f"$JS.API.STREAM.INFO.{subjects.COMMANDS_STREAM}",
                        # Writing: events, dead letters and results in anyone's name.
                        subjects.saved_subject("server", ws), f"cache.invalidate.tomori_state.{ws}",
                        subjects.dlq_subject(subjects.command_subject("create", ws)), f"{other.inbox}.results.forged"):
            await bot.nc.publish(subject, b'{"seq": 1}')
        await bot.denied(f'subscription to "{other.inbox}.>"', 'subscription to "_inbox.>"',
                         'subscription to "memory.saved.>"', 'subscription to ">"',
                         f'publish to "$js.api.consumer.create.{subjects.EVENTS_STREAM}.{other_consumer}.memory.saved.>"',
                         f'publish to "$js.api.consumer.msg.next.{subjects.EVENTS_STREAM}.{other_consumer}"',
                         f'publish to "$js.api.consumer.info.{subjects.EVENTS_STREAM}.{other_consumer}"',
                         f'publish to "$js.api.stream.msg.get.{subjects.EVENTS_STREAM}"',
                         f'publish to "$js.api.direct.get.{subjects.EVENTS_STREAM}"',
                         f'publish to "$js.api.stream.info.{subjects.COMMANDS_STREAM}"',
                         f'publish to "{subjects.saved_subject("server", ws)}"',
                         f'publish to "cache.invalidate.tomori_state.{ws}"',
                         f'publish to "{subjects.dlq_subject(subjects.command_subject("create", ws))}"',
                         f'publish to "{other.inbox}.results.forged"')

        # The allowed controls: its own command in the same guild is answered, by its own
        # worker, and never reaches the other bot's command stream.
        result = await bot.memory.create(create_fields(ws, "mine", lineage_id=tenant.lineage))
        assert result.data.status == SAVED
        info = await bot.js.consumer_info(subjects.EVENTS_STREAM, f"{tenant.bot}-saved")
        assert info.config.deliver_subject is None
        assert (await watcher.jetstream().stream_info(subjects.COMMANDS_STREAM)).state.last_seq == before
    finally:
        await watcher.close()


# --------------------------------------------------------------------------------------------
# The worker as a confused deputy (issue 35): reply subjects a bot picks. NATS never checks a
# publish's reply subject, and the worker publishes with rights no bot has: a lookup's reply
# subject and a command's reply_to are held to REPLY_SUBJECT_PREFIXES (the bot's inbox).

STREAMS = (subjects.COMMANDS_STREAM, subjects.EVENTS_STREAM, subjects.DLQ_STREAM)


def reply_tricks(tenant: Tenant, other: Tenant, ws: str) -> list[str]:
    """Where a bot would have the worker publish: the JetStream API (purge, delete), another
    bot's inbox, a cache node's, the event, metric, dead-letter and command subjects."""
    return [*(f"$JS.API.STREAM.PURGE.{s}" for s in STREAMS), *(f"$JS.API.STREAM.DELETE.{s}" for s in STREAMS),
            f"$JS.API.CONSUMER.DELETE.{subjects.COMMANDS_STREAM}.memory-worker-p0",
            f"$JS.API.CONSUMER.DELETE.{subjects.EVENTS_STREAM}.{tenant.bot}-saved",
            f"{other.inbox}.results.stolen", "_INBOX.cache.a.stolen",
            subjects.saved_subject("server", ws), subjects.invalidate_subject("tomori_state", ws),
            subjects.METRIC_EVICTION_SUBJECT, subjects.dlq_subject(subjects.command_subject("create", ws)),
            subjects.command_subject("create", ws)]


@dataclass
class AccountState:
    streams: dict[str, tuple[int, int]]  # stream -> (messages, last sequence)
    consumers: dict[str, list[str]]

    @classmethod
    async def of(cls, js) -> AccountState:
        infos = {s: (await js.stream_info(s)).state for s in STREAMS}
        return cls({s: (i.messages, i.last_seq) for s, i in infos.items()},
                   {s: sorted(c.name for c in await js.consumers_info(s)) for s in STREAMS})


async def stored_after(js, stream: str, seq: int) -> list:
    """The messages `stream` stored after sequence `seq`."""
    found = []
    while True:
        try:
            raw = await js.get_msg(stream, seq + 1, subject=">", next=True)
        except NotFoundError:
            return found
        found.append(raw)
        seq = raw.seq


@pytest.mark.parametrize(("tenant", "other"), PAIRS, ids=["tomori", "kaede"])
async def test_no_reply_subject_makes_the_worker_publish_outside_the_bots_inbox(apart, bots, tenant, other):
    bot = bots[tenant.name]
    ws = unique()
    tricks = reply_tricks(tenant, other, ws)
    admin, worker_rights = await as_admin(apart, tenant), await as_worker(apart, tenant)
    received: list[str] = []

    async def caught(msg) -> None:
        received.append(msg.subject)

    try:
        ajs = admin.jetstream()
        # Subscribers on the inboxes among the targets (the worker's user may read any inbox of
        # its account); the streams stand for the rest.
        for subject in (f"{other.inbox}.>", "_INBOX.cache.>"):
            await worker_rights.subscribe(subject, cb=caught)
        await worker_rights.flush()
        mine = await MemoryClient(bot.nc, timeout=15).start()
        try:
            # A stored result to look up.
            known = await mine.create(create_fields(ws, "looked up", lineage_id=tenant.lineage))
            assert known.data.status == SAVED
        finally:
            await mine.close()
        before = await AccountState.of(ajs)

        # 1. A lookup of that result, with each trick as its reply subject. The worker handles
        #    lookups one at a time, in order: once the bot's own lookup after them is answered,
        #    it has dropped each of them.
        for reply in tricks:
            await bot.nc.publish(subjects.result_subject(ws, known.command_id), b"", reply=reply)
            await bot.nc.publish(subjects.result_subject(ws, known.command_id), b'{"answer": "outcome"}', reply=reply)
        own = await bot.nc.request(subjects.result_subject(ws, known.command_id), b"", timeout=5)
        assert json.loads(own.data)["command_id"] == known.command_id
        await worker_rights.flush()
        assert await AccountState.of(ajs) == before and received == []
        assert apart.workers[tenant.name].log_text().count('"result_lookup_refused"') >= 2 * len(tricks)

        # 2. A command with each trick as its reply_to: dead-lettered unapplied and unanswered,
        #    before the bot's own command of the same workspace, which comes after them.
        sent = []
        for reply in tricks:
            cid = unique("trick-")
            body = {"command_id": cid, "issued_at": datetime.now(UTC).isoformat(), "reply_to": reply,
                    **create_fields(ws, f"trick {reply}", lineage_id=tenant.lineage)}
            await bot.js.publish(subjects.command_subject("create", ws), json.dumps(body).encode(),
                                 headers={"Nats-Msg-Id": cid}, stream=subjects.COMMANDS_STREAM)
            sent.append(cid)
        result = await bot.memory.create(create_fields(ws, "after the tricks", lineage_id=tenant.lineage))
        assert result.data.status == SAVED
        await worker_rights.flush()
        assert received == []
        after = await AccountState.of(ajs)
        assert after.consumers == before.consumers
        # Commands: the tricks and the bot's own, stored and (being acknowledged) purged, nothing else.
        assert after.streams[subjects.COMMANDS_STREAM][1] == before.streams[subjects.COMMANDS_STREAM][1] + len(tricks) + 1
        # Dead letters: one per trick, invalid_command, and nothing else; none removed.
        letters = await stored_after(ajs, subjects.DLQ_STREAM, before.streams[subjects.DLQ_STREAM][1])
        assert [json.loads(m.data)["command_id"] for m in letters] == sent
        assert {m.headers["Dlq-Reason"] for m in letters} == {"invalid_command"}
        assert all("reply_to must start with one of" in m.headers["Dlq-Error"] for m in letters)
        assert after.streams[subjects.DLQ_STREAM][0] == before.streams[subjects.DLQ_STREAM][0] + len(sent)
        # Events: only the bot's own command's; none removed.
        events = await stored_after(ajs, subjects.EVENTS_STREAM, before.streams[subjects.EVENTS_STREAM][1])
        assert events and {json.loads(m.data)["command_id"] for m in events} == {result.command_id}
        assert after.streams[subjects.EVENTS_STREAM][0] == before.streams[subjects.EVENTS_STREAM][0] + len(events)
        assert bot.violations() == []
    finally:
        await admin.close()
        await worker_rights.close()


# --------------------------------------------------------------------------------------------
# The push-consumer trick


def create_subject(config: ConsumerConfig) -> str:
    """The consumer-create subject nats-py's add_consumer uses for `config`."""
    if config.name is None:
        return f"$JS.API.CONSUMER.CREATE.{subjects.EVENTS_STREAM}"
    return f"$JS.API.CONSUMER.CREATE.{subjects.EVENTS_STREAM}.{config.name}.{config.filter_subject}"


@pytest.mark.parametrize(("tenant", "other"), PAIRS, ids=["tomori", "kaede"])
async def test_a_bot_cannot_have_events_pushed_anywhere(apart, bots, tenant, other):
    """A bot may create, change or delete no consumer at all, its own included: any create
    right would do. Its own consumer made push (into the other bot's inbox, a cache node's,
    its own); made again after a delete; set to expire (inactive_threshold: the server then
    deletes it, and a create right would make it again as push); another consumer, named or
    ephemeral. Each a permissions violation; the consumer stays the worker's pull consumer."""
    bot = bots[tenant.name]
    for kind, subject in (("saved", "memory.saved.>"), ("evicted", "memory.evicted.>")):
        name = f"{tenant.bot}-{kind}"
        pull = ConsumerConfig(name=name, durable_name=name, filter_subject=subject, deliver_policy=DeliverPolicy.NEW,
                              ack_policy=AckPolicy.EXPLICIT)
        tries = [ConsumerConfig(**{**pull.as_dict(), "deliver_subject": target})
                 for target in (f"{other.inbox}.push", "_INBOX.cache.a.push", f"{tenant.inbox}.push")]
        tries += [ConsumerConfig(**{**pull.as_dict(), "inactive_threshold": 0.5}), pull,
                  ConsumerConfig(name=f"{name}-push", durable_name=f"{name}-push", filter_subject=subject,
                                 deliver_subject=f"{other.inbox}.push"),
                  ConsumerConfig(filter_subject=subject, deliver_subject=f"{other.inbox}.push")]
        for config in tries:  # as nats-py's add_consumer sends them, without waiting for no answer
            await bot.nc.publish(create_subject(config), json.dumps(
                {"stream_name": subjects.EVENTS_STREAM, "config": config.as_dict()}).encode())
        await bot.nc.publish(f"$JS.API.CONSUMER.DELETE.{subjects.EVENTS_STREAM}.{name}", b"")
        await bot.denied(f'publish to "$js.api.consumer.create.{subjects.EVENTS_STREAM}.{name}.{subject}"',
                         f'publish to "$js.api.consumer.delete.{subjects.EVENTS_STREAM}.{name}"',
                         f'publish to "$js.api.consumer.create.{subjects.EVENTS_STREAM}.{name}-push.{subject}"',
                         f'publish to "$js.api.consumer.create.{subjects.EVENTS_STREAM}"')  # the ephemeral one
        # The control: it reads through the consumer as its worker made it, which is unchanged.
        info = await bot.js.consumer_info(subjects.EVENTS_STREAM, name)
        assert (info.config.deliver_subject, info.config.inactive_threshold, info.config.filter_subject) == (
            None, None, subject)
    result = await bot.memory.create(create_fields(unique(), "still read", lineage_id=tenant.lineage))
    assert result.command_id in {e["command_id"] for e in await saved_events(bot, result.command_id)}


# --------------------------------------------------------------------------------------------
# The database both bots share


async def test_two_bots_in_one_guild_share_its_directory_and_never_each_others_memories(apart, bots, db):
    tomori, kaede = bots["tomori"], bots["kaede"]
    ws, private, banned = unique(), unique(), unique()
    server_id = await add_server(db, ws)
    await add_user(db, private, privacy=2)  # one user's privacy level, set once
    await add_user(db, banned)
    await blacklist(db, server_id, banned)  # the guild's blacklist
    for bot in (tomori, kaede):
        lineage = bot.tenant.lineage
        refused = await bot.memory.create(create_fields(
            ws, "{user} lives in Porto", scope="target_user", target="Pat", lineage_id=lineage,
            member_matches=[{"id": private, "display_name": "Pat", "username": "pat"}]))
        assert refused.data.status == PRIVACY_RESTRICTED, (bot.tenant.name, refused)
        panel = await bot.memory.manual({"workspace_id": ws, **manual_fields(
            actor=banned, is_manager=False, lineage_id=lineage, content="a banned fact")})
        assert panel.data.status == BLACKLISTED, (bot.tenant.name, panel)
        saved = await bot.memory.create(create_fields(ws, f"{bot.tenant.name} was here", lineage_id=lineage))
        assert saved.data.status == SAVED

    # Kaede naming Tomori's lineage, in every kind of command that names one: not applied,
    # dead-lettered in Kaede's account, answered with the reason.
    tomori_memory = await db.fetchval("SELECT server_memory_id FROM server_memories WHERE server_id = $1"
                                      " AND persona_lineage_id = 7", server_id)
    created = await kaede.memory.create(create_fields(ws, "overwrite tomori", lineage_id=TOMORI.lineage))
    # The panel's and the reinforcement's answers, through MemoryClient as a bot reads them:
    # the contract's InvalidCommandResult.
    removal = await kaede.memory.manual({"workspace_id": ws, **manual_fields(
        actor=MANAGER, action="remove", lineage_id=TOMORI.lineage, persona_id=None, memory_id=tomori_memory)})
    reinforcement = await kaede.memory.reinforce({"workspace_id": ws, **reinforce_fields(
        [("server", tomori_memory)], lineage_id=TOMORI.lineage)})
    assert isinstance(removal, InvalidCommandResult) and isinstance(reinforcement, InvalidCommandResult)
    for answer in (created, removal, reinforcement):
        assert (answer.success, answer.data.status) == (False, COMMAND_INVALID), answer
        assert answer.data.reason is not None and "lineage 7 is not one of this bot's lineages (8)" in answer.data.reason
    nc = await as_admin(apart, KAEDE)
    try:
        letter = await nc.jetstream().get_last_msg(subjects.DLQ_STREAM, f"dlq.memory.reinforce.{ws}")
        assert letter.headers["Dlq-Reason"] == "invalid_command"
    finally:
        await nc.close()
    assert await server_memories(db, ws) == [(7, "tomori was here"), (8, "kaede was here")]
    row = await db.fetchrow("SELECT reinforcement_count FROM server_memories WHERE server_memory_id = $1",
                            tomori_memory)
    assert row["reinforcement_count"] == 0
    assert tomori.violations() == [] and kaede.violations() == []


async def test_each_worker_takes_only_its_own_rows_of_the_shared_inbox(pg_server, template_db):
    """A stored result and its events are found by its own bot's worker only."""
    database_url = await clone_database(pg_server, template_db)
    pools = {t.name: await create_pool(database_url, min_size=1, max_size=2, tenant=t.name) for t in (TOMORI, KAEDE)}
    repos = {name: MemoryRepository(pool, name) for name, pool in pools.items()}
    try:
        ws, cid = unique(), unique("c-")
        event = EventRow(subjects.saved_subject("server", ws), {}, msgspec.Raw(b'{"content": "tomori\'s"}'))
        async with repos["tomori"].owner_transaction([]) as tx:
            await applier.store(tx, StoreResult(cid, "reinforce", ws, "reinforced", b'{"secret": "tomori"}', [event],
                                                applied_by=5))
        own = await repos["tomori"].stored_command(cid, ws)  # what each bot's result lookup reads
        assert own is not None and own.events == [event] and stored_commands.answer(own).result == b'{"secret": "tomori"}'
        assert await repos["kaede"].stored_command(cid, ws) is None
        async with repos["kaede"].owner_transaction([]) as tx:
            stored = await tx.stored(cid)
        # Kaede's worker sees Tomori's row for what it is: the same workspace, another bot's.
        assert stored is not None and (stored.workspace_id, stored.tenant) == (ws, "tomori")
        handled = seen_before(reinforce_of(ws, cid), stored, "kaede", delivery=5)
        refused = msgspec.json.decode(handled.answer.result)
        assert refused["data"]["status"] == COMMAND_INVALID and "another bot" in refused["error"]
        assert handled.events == []  # never another bot's events, even under the same stream sequence
        row = await pools["tomori"].fetchrow("SELECT workspace_id, tenant FROM processed_commands"
                                             " WHERE command_id = $1", cid)
        assert (row["workspace_id"], row["tenant"]) == (ws, "tomori")
    finally:
        for pool in pools.values():
            await pool.close()


def reinforce_of(ws: str, cid: str) -> ReinforceMemories:
    return reinforce_command(ws, lineage_id=KAEDE.lineage, envelope_fields={"command_id": cid})


# --------------------------------------------------------------------------------------------
# One bot's flood


async def flood(bot: Bot, count: int, answered: set[str]) -> None:
    """`count` creates of as many workspaces, all stored before this returns; their answers
    are collected into `answered` (by command id) as they come."""

    async def on_reply(msg) -> None:
        answered.add(msg.subject.rsplit(".", 1)[1])

    await bot.nc.subscribe(f"{bot.tenant.inbox}.flood.*", cb=on_reply)
    sent = []
    for i in range(count):
        cid = unique("flood-")
        body = {"command_id": cid, "issued_at": datetime.now(UTC).isoformat(),
                "reply_to": f"{bot.tenant.inbox}.flood.{cid}",
                **create_fields(unique(), f"flood {i}", lineage_id=bot.tenant.lineage)}
        sent.append(bot.js.publish(subjects.command_subject("create", body["workspace_id"]), json.dumps(body).encode(),
                                   headers={"Nats-Msg-Id": cid}, stream=subjects.COMMANDS_STREAM))
    await asyncio.gather(*sent)


async def test_one_bots_flood_does_not_hold_up_the_other(apart, bots):
    """The worst flood: Tomori's backlog is never worked off while it lasts (its worker is
    stopped). Kaede's command, sent after the whole flood was stored, is answered anyway, and
    Tomori's backlog is still all there; once Tomori's worker is back, every one is answered."""
    tomori, kaede = bots["tomori"], bots["kaede"]
    count, answered = 300, set()
    worker = apart.workers["tomori"]
    await asyncio.to_thread(worker.stop)
    watcher = await as_admin(apart, TOMORI)
    try:
        await flood(tomori, count, answered)
        result = await kaede.memory.create(create_fields(unique(), "kaede is answered", lineage_id=KAEDE.lineage))
        assert result.data.status == SAVED
        waiting = [info for info in await watcher.jetstream().consumers_info(subjects.COMMANDS_STREAM)
                   if info.name.startswith("memory-worker-p")]
        assert sum(info.num_pending + info.num_ack_pending for info in waiting) == count
        assert answered == set()
    finally:
        await asyncio.to_thread(worker.start)
        await watcher.close()
    await wait_until(lambda: len(answered) == count, timeout=120, what="every flooded command answered")


async def test_kaede_is_answered_while_tomoris_flood_is_being_worked_off(apart, bots):
    """The same with Tomori's worker at work: Kaede's command, sent once the whole flood is
    stored, is answered before Tomori's worker is through it (it waits in no queue of Tomori's)."""
    tomori, kaede = bots["tomori"], bots["kaede"]
    count, answered = 600, set()
    await flood(tomori, count, answered)
    result = await kaede.memory.create(create_fields(unique(), "kaede first", lineage_id=KAEDE.lineage))
    assert result.data.status == SAVED
    assert len(answered) < count, "Kaede's answer came only after Tomori's whole flood"
    await wait_until(lambda: len(answered) == count, timeout=120, what="every flooded command answered")


# --------------------------------------------------------------------------------------------
# Cache nodes and metrics sinks, in each account


async def test_each_accounts_cache_node_gets_its_own_invalidations(apart, bots):
    nodes = {}
    for tenant, user in ((TOMORI, "cache-node-a"), (KAEDE, "cache-node-kaede-a")):
        errors: list[Exception] = []

        async def error_cb(exc: Exception, errors=errors) -> None:
            errors.append(exc)

        node = await CacheNode.connect(apart.url, name="a", poll_seconds=1.0,
                                       connect_options={**connect_options(user), "error_cb": error_cb})
        await node.start()
        nodes[tenant.name] = (node, errors)
    try:
        ws = unique()

        async def load() -> str:
            return "state"

        for node, _ in nodes.values():
            await node.get_or_load("tomori_state", ws, load)
        result = await bots["tomori"].memory.create(create_fields(ws, "invalidate tomori's", lineage_id=TOMORI.lineage))
        assert result.data.status == SAVED
        tomori_node, kaede_node = nodes["tomori"][0], nodes["kaede"][0]
        await eventually(lambda: _gone(tomori_node, ws), 15, "tomori's cache node invalidated")
        # The invalidation was stored before the answer went out, in Tomori's account only.
        nc = await as_admin(apart, KAEDE)
        try:
            with pytest.raises(NotFoundError):
                await nc.jetstream().get_last_msg(subjects.EVENTS_STREAM, subjects.invalidate_subject("tomori_state", ws))
        finally:
            await nc.close()
        assert kaede_node.contains("tomori_state", ws)
        result = await bots["kaede"].memory.create(create_fields(ws, "invalidate kaede's", lineage_id=KAEDE.lineage))
        await eventually(lambda: _gone(kaede_node, ws), 15, "kaede's cache node invalidated")
        for _, errors in nodes.values():
            assert not [e for e in errors if "permissions violation" in str(e).lower()]
    finally:
        for node, _ in nodes.values():
            await node.stop(delete_consumer=True)
            await node.close()


async def _gone(node: CacheNode, key: str) -> bool:
    return not node.contains("tomori_state", key)


async def test_each_accounts_metrics_sink_reads_its_own_metrics(apart, tmp_path):
    from worker.sinks import process as sinks

    for user, tenant in (("metrics-sink", TOMORI), ("metrics-sink-kaede", KAEDE)):
        jsonl = tmp_path / f"{user}.jsonl"
        metric = f"sink-{tenant.name}-{uuid.uuid4().hex}"
        stop = asyncio.Event()
        errors: list[Exception] = []

        async def error_cb(exc: Exception, errors=errors) -> None:
            errors.append(exc)

        run = asyncio.create_task(sinks.run_sinks(apart.url, None, jsonl, 30, stop,
                                                  connect_options={**connect_options(user), "error_cb": error_cb}))
        worker = await as_worker(apart, tenant)
        try:
            # What the worker publishes on an eviction: the metric, in its own account.
            await worker.jetstream().publish(subjects.METRIC_EVICTION_SUBJECT,
                                             json.dumps({"scope": "server", "decay_days": 30}).encode(),
                                             headers={"Nats-Msg-Id": metric})
            await wait_until(lambda jsonl=jsonl: jsonl.exists() and jsonl.read_text().count("decay_days") >= 1,
                             timeout=20, what=f"{user} wrote its account's metric")
        finally:
            stop.set()
            await asyncio.wait_for(run, 15)
            await worker.close()
        assert not [e for e in errors if "permissions violation" in str(e).lower()]


# --------------------------------------------------------------------------------------------
# Adding a bot, step by step as deploy/README.md says


async def test_adding_a_bot_as_the_readme_says(tmp_path, pg_server, template_db):
    hina = Tenant("hina", 9)
    node = single_node(tmp_path / "nats")
    conf_dir = node.conf.parent
    worker = None
    try:
        # 1. Its account: a copy of Kaede's, with the name replaced.
        subprocess.run(["sh", "-c", "sed -e 's/kaede/hina/g' -e 's/KAEDE/HINA/g' tenant-kaede.conf > tenant-hina.conf"],
                       cwd=conf_dir, check=True)
        # 2. One include line in accounts.conf, next to Kaede's.
        accounts = conf_dir / "accounts.conf"
        text = accounts.read_text()
        assert text.count('  include "tenant-kaede.conf"\n') == 1
        accounts.write_text(text.replace('  include "tenant-kaede.conf"\n',
                                         '  include "tenant-kaede.conf"\n  include "tenant-hina.conf"\n'))
        # 3. Its passwords in nats-server's environment: a running server does not see a new
        #    variable, so each node restarts (one at a time in a cluster). The configuration is
        #    checked first, as an operator would.
        hina_passwords = {"NATS_WORKER_HINA_PASSWORD": "w-" + uuid.uuid4().hex, "NATS_BOT_HINA_PASSWORD": "b-" + uuid.uuid4().hex,
                          "NATS_CACHE_NODE_HINA_A_PASSWORD": "c", "NATS_METRICS_SINK_HINA_PASSWORD": "s",
                          "NATS_OPERATOR_HINA_PASSWORD": "o", "NATS_ADMIN_HINA_PASSWORD": "a-" + uuid.uuid4().hex}
        node.env.update(hina_passwords)
        check = subprocess.run([_nats_server_binary(), "-t", "-c", str(node.conf)], env=node.env,
                               capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stderr + check.stdout
        node.stop()
        node.start()
        # 4. Its streams and consumers, as its provisioning user, with its worker's settings.
        database_url = await clone_database(pg_server, template_db)
        settings = {"MEMORY_PARTITIONS": "2", "TENANT": hina.name, "TENANT_LINEAGES": str(hina.lineage)}
        provision = worker_env(node.url, database_url, **settings, NATS_USER=hina.admin_user,
                               NATS_PASSWORD=hina_passwords["NATS_ADMIN_HINA_PASSWORD"], NATS_INBOX_PREFIX="_INBOX.admin")
        done = await memoryctl(["provision"], provision)
        assert done.returncode == 0 and "provisioned: 2 partitions" in done.stdout, done
        # 5. Its worker: TENANT, its lineages, its worker user, its bot's reply prefix.
        worker = WorkerProcess(worker_env(node.url, database_url, **settings, NATS_USER=hina.worker_user,
                                          NATS_PASSWORD=hina_passwords["NATS_WORKER_HINA_PASSWORD"],
                                          REPLY_SUBJECT_PREFIXES=f"{hina.inbox}."),
                               tmp_path / "hina-worker.log")
        await asyncio.to_thread(worker.start)

        # The new bot works, on its own.
        nc = await nats.connect(node.url, user=hina.bot, password=hina_passwords["NATS_BOT_HINA_PASSWORD"],
                                inbox_prefix=hina.inbox, connect_timeout=2)
        try:
            async with MemoryClient(nc, timeout=15) as memory:
                result = await memory.create(create_fields(unique(), "hina's first", lineage_id=hina.lineage))
            assert result.data.status == SAVED
            bot = Bot(hina, nc, memory, [])
            events = await saved_events(bot, result.command_id)
            assert [e["content"] for e in events] == ["hina's first"]
        finally:
            await nc.close()
        # Had a user with consumer rights (the provisioning user: never a bot, nor the worker, which
        # may delete no consumer) made the bot's consumer a push one, the worker's next start
        # refuses, naming `memoryctl provision`, which makes it a pull consumer again.
        await asyncio.to_thread(worker.stop)
        admin = await nats.connect(node.url, user=hina.admin_user, password=hina_passwords["NATS_ADMIN_HINA_PASSWORD"],
                                   inbox_prefix="_INBOX.admin", connect_timeout=2)
        try:
            js = admin.jetstream()
            await js.delete_consumer(subjects.EVENTS_STREAM, "bot-hina-saved")
            await js.add_consumer(subjects.EVENTS_STREAM, ConsumerConfig(
                name="bot-hina-saved", durable_name="bot-hina-saved", filter_subject="memory.saved.>",
                deliver_subject="_INBOX.cache.a.stolen"))
            with pytest.raises(RuntimeError, match="worker exited early"):
                await asyncio.to_thread(worker.start)
            assert worker.proc.wait(timeout=10) == 2
            assert "bot-hina-saved of MEMORY_EVENTS was made a push consumer" in worker.log_text()
            assert "run `memoryctl provision`" in worker.log_text()
            done = await memoryctl(["provision"], provision)
            assert done.returncode == 0, done
            info = await js.consumer_info(subjects.EVENTS_STREAM, "bot-hina-saved")
            assert info.config.deliver_subject is None and info.config.filter_subject == "memory.saved.>"
            await asyncio.to_thread(worker.start)
        finally:
            await admin.close()
        # The other bots are as they were, and see nothing of it.
        kaede_errors: list[Exception] = []
        kaede = await connect_as(node.url, "bot-kaede", errors=kaede_errors)
        try:
            await kaede.subscribe(f"{hina.inbox}.>")
            await eventually(lambda: _violated(kaede_errors, f"{hina.inbox}.>"), 5, "kaede refused hina's inbox")
        finally:
            await kaede.close()
    finally:
        if worker is not None:
            await asyncio.to_thread(worker.stop)
        node.stop()
        node.kill()


async def _violated(errors: list[Exception], subject: str) -> bool:
    return any(f'permissions violation for subscription to "{subject}"'.lower() in str(e).lower() for e in errors)


def test_no_worker_hit_its_own_permissions(apart):
    """Runs last in this module: everything both workers did was within their rights."""
    for name, worker in apart.workers.items():
        text = worker.log_text().lower()
        assert "permissions violation" not in text, (name, [line for line in text.splitlines() if "permission" in line])
        assert "bot_consumer_was_push" not in text
