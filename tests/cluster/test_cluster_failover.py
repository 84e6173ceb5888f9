"""Three NATS nodes, two workers; kill the MEMORY_COMMANDS stream leader and a worker while
creates are in flight (issue 7; docs/design.md, section 2, guarantees 1, 4, 5 and 7).

A real JetStream cluster runs deploy/nats/cluster.conf and accounts.conf; the streams and
consumers are R3 (STREAM_REPLICAS=3, created by the workers); the workers log in as
`memory-worker` with NATS_URL listing every node, the bot as `bot-tomori` with its private
inbox. The bot publishes CLUSTER_COMMANDS creates over several workspaces, each workspace's
commands one after the other (the next only once JetStream acknowledged the previous one,
retrying a failed publish with the same Nats-Msg-Id), paced so that publishing goes on through
both kills. When a quarter of the commands have a stored result, the node leading
MEMORY_COMMANDS is SIGKILLed; at a half, one of the two workers. The other worker carries on
(commands the dead one held come back after ACK_WAIT_SECONDS); the killed node is started again
at the end and catches up.

Afterwards: every command has exactly one stored result and exactly one memory row (the id
its result names); per workspace, memory ids increase in publish order; every saved command
has its `<cid>:invalidate:...` and `<cid>:saved` events in MEMORY_EVENTS, once each, the
invalidation first, and there is no other event; no dead letter; every result reached the
bot, or the bot's result lookup finds it.

    CLUSTER_COMMANDS=3000 pytest -s tests/cluster
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass

import asyncpg
import nats.errors
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts import subjects
from contracts.codec import encode
from tests.cluster.nats_deploy import INBOX_PREFIXES, connect_as, eventually
from tests.integration.helpers import server_save
from tests.support.answers import stored_answers
from tests.support.env import env_int
from tests.support.logs import log_events
from tests.support.publishing import publish_until_stored
from worker.client.memory_client import lookup_result
from worker.consuming.administration import streams

SAVED = "memory_saved_successfully"
REPLIES = f"{INBOX_PREFIXES['bot-tomori']}.cluster"


@dataclass(frozen=True)
class Command:
    index: int
    command_id: str
    workspace_id: str
    content: str

    @property
    def subject(self) -> str:
        return subjects.command_subject("create", self.workspace_id)

    def payload(self) -> bytes:
        return encode(server_save(self.workspace_id, self.content, command_id=self.command_id,
                                  reply_to=f"{REPLIES}.{self.command_id}"))


def workload(n: int, seed: int) -> tuple[list[Command], list[str]]:
    rng = random.Random(seed)
    run = uuid.uuid4().hex[:6]
    workspaces = [f"97{rng.randrange(10**15):015d}{i:03d}" for i in range(max(8, min(100, n // 30)))]
    commands = []
    for i in range(n):
        cid = f"cl-{run}-{i:05d}"
        commands.append(Command(i, cid, rng.choice(workspaces), f"cluster note {cid}"))
    return commands, workspaces


class Bot:
    """Publishes like a bot: Nats-Msg-Id = command id, results on its private inbox."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.replies: dict[str, list[bytes]] = defaultdict(list)
        self.retries = 0
        self.duplicates = 0
        self.errors: list[Exception] = []

    async def start(self) -> Bot:
        self.nc = await connect_as(self.urls, "bot-tomori", errors=self.errors, max_reconnect_attempts=-1,
                                   reconnect_time_wait=0.25)
        self.js = self.nc.jetstream()
        await self.nc.subscribe(f"{REPLIES}.*", cb=self._on_reply)
        return self

    async def _on_reply(self, msg) -> None:
        self.replies[msg.subject.rsplit(".", 1)[1]].append(msg.data)

    async def publish(self, cmd: Command, give_up_after: float = 60.0) -> None:
        ack, failures = await publish_until_stored(self.js, cmd.subject, cmd.payload(), cmd.command_id,
                                                   give_up_after=give_up_after)
        self.retries += failures
        self.duplicates += bool(ack.duplicate)

    async def publish_in_order(self, commands: list[Command], pace: float) -> None:
        for cmd in commands:
            await self.publish(cmd)
            await asyncio.sleep(pace)

    async def lookup(self, workspace_id: str, command_id: str) -> bytes | None:
        return await lookup_result(self.nc, workspace_id, command_id)

    async def close(self) -> None:
        await self.nc.close()


async def processed(conn: asyncpg.Connection) -> int:
    return await conn.fetchval("SELECT count(*) FROM processed_commands")


async def read_events(nc) -> list[tuple[int, str, str | None]]:
    """(stream seq, subject, Nats-Msg-Id) of every message of MEMORY_EVENTS."""
    js = nc.jetstream()
    name = f"check_{uuid.uuid4().hex}"
    await js.add_consumer(subjects.EVENTS_STREAM, ConsumerConfig(
        name=name, deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.NONE, inactive_threshold=60.0))
    pending = (await js.consumer_info(subjects.EVENTS_STREAM, name)).num_pending
    out: list[tuple[int, str, str | None]] = []
    sub = await js.pull_subscribe_bind(consumer=name, stream=subjects.EVENTS_STREAM)
    try:
        deadline = time.monotonic() + 60
        while len(out) < pending and time.monotonic() < deadline:
            try:
                msgs = await sub.fetch(batch=min(500, pending - len(out)), timeout=5)
            except nats.errors.TimeoutError:
                continue
            out += [(m.metadata.sequence.stream, m.subject, (m.headers or {}).get("Nats-Msg-Id")) for m in msgs]
    finally:
        await sub.unsubscribe()
    stored = (await js.stream_info(subjects.EVENTS_STREAM)).state.messages
    assert len(out) == pending == stored, f"read {len(out)} of {pending} events, the stream holds {stored}"
    return sorted(out)


async def test_killing_the_stream_leader_and_a_worker_loses_nothing(cluster_setup):
    n = env_int("CLUSTER_COMMANDS", 300)
    seed = env_int("CLUSTER_SEED", 20240611)
    started = time.monotonic()
    setup = cluster_setup
    commands, workspaces = workload(n, seed)

    workers = [setup.worker("worker-1"), setup.worker("worker-2")]
    for w in workers:  # one after the other: the first creates the R3 streams and consumers
        await asyncio.to_thread(w.start)
    ready_at = time.monotonic() - started

    checker = await connect_as(setup.nats.urls, "memory-admin", max_reconnect_attempts=-1, reconnect_time_wait=0.25)
    cjs = checker.jetstream()
    info = await cjs.stream_info(subjects.COMMANDS_STREAM)
    assert info.config.num_replicas == 3 and len(info.cluster.replicas or []) == 2, info.cluster
    for partition in range(16):
        consumer = await cjs.consumer_info(subjects.COMMANDS_STREAM, f"memory-worker-p{partition}")
        assert consumer.config.num_replicas == 3 and consumer.config.max_ack_pending == streams.DEFAULT_IN_FLIGHT

    db = await asyncpg.connect(setup.database_url)
    bot = await Bot(setup.nats.urls).start()
    by_workspace: dict[str, list[Command]] = defaultdict(list)
    for cmd in commands:
        by_workspace[cmd.workspace_id].append(cmd)
    # Publishing spans several seconds (about n/150 s), so both kills land while the bot is
    # still publishing and the workers are still working.
    pace = max(0.0, (max(2.0, n / 150) / max(len(c) for c in by_workspace.values())))
    publishing = [asyncio.create_task(bot.publish_in_order(cmds, pace)) for cmds in by_workspace.values()]
    kills: list[str] = []
    try:
        await eventually(lambda: _at_least(db, n // 4), 60, f"{n // 4} stored results")
        leader = (await cjs.stream_info(subjects.COMMANDS_STREAM)).cluster.leader
        node = setup.nats.node(leader)
        node.kill()
        kills.append(f"nats {leader} (MEMORY_COMMANDS leader) at {await processed(db)}/{n} "
                     f"{time.monotonic() - started:.1f}s")

        await eventually(lambda: _at_least(db, n // 2), 120, f"{n // 2} stored results")
        victim = workers[0]
        victim.kill()
        kills.append(f"worker-1 (pid {victim.pid}) at {await processed(db)}/{n} {time.monotonic() - started:.1f}s")

        await asyncio.gather(*publishing)
        published_at = time.monotonic() - started
        new_leader = await _stream_leader(cjs)
        assert new_leader != leader

        # Commands the dead worker held come back after ACK_WAIT_SECONDS (20).
        await eventually(lambda: _at_least(db, n), 60 + n / 20, f"{n} stored results")
        await eventually(lambda: _all_acknowledged(cjs), 30, "every command acknowledged (its events stored)")
        done_at = time.monotonic() - started

        # The killed node comes back with its data and catches up.
        await asyncio.to_thread(node.start)
        await asyncio.to_thread(setup.nats.wait_for_meta_leader)
        await eventually(lambda: _replicas_current(cjs), 60, "every replica of every stream current")
        problems = await verify(commands, db, bot, checker)
        dlq = (await cjs.stream_info(subjects.DLQ_STREAM)).state.messages
    finally:
        for task in publishing:
            task.cancel()
        await bot.close()
        await checker.close()
        await db.close()

    survivor_log = workers[1].log_text()
    redelivered = sum(1 for e in _log_entries(survivor_log) if e.get("event") == "command" and e.get("deliveries", 1) > 1)
    replies_missing = sum(1 for c in commands if not bot.replies.get(c.command_id))
    elapsed = time.monotonic() - started
    print(f"\nCLUSTER commands={n} workspaces={len(workspaces)} kills={kills} publish_retries={bot.retries} "
          f"duplicate_acks={bot.duplicates} replies_missing={replies_missing} "
          f"redelivered_to_survivor={redelivered} dlq={dlq} workers_ready={ready_at:.1f}s "
          f"published={published_at:.1f}s processed={done_at:.1f}s elapsed={elapsed:.1f}s")
    assert problems == [], "\n".join(problems)
    assert dlq == 0
    assert "permissions violation" not in survivor_log.lower()
    assert [str(e) for e in bot.errors if "permissions" in str(e).lower()] == []


def _log_entries(text: str) -> list[dict]:
    return log_events(text)


async def _at_least(db: asyncpg.Connection, count: int) -> bool:
    return await processed(db) >= count


async def _all_acknowledged(js) -> bool:
    """A command is acknowledged only once its events are stored in MEMORY_EVENTS."""
    infos = await js.consumers_info(subjects.COMMANDS_STREAM)
    return all(i.num_ack_pending + i.num_pending == 0 for i in infos)


async def _stream_leader(js) -> str:
    last: object = None
    for _ in range(100):
        try:
            last = (await js.stream_info(subjects.COMMANDS_STREAM)).cluster
            if last.leader:
                return last.leader
        except Exception as exc:
            last = exc
        await asyncio.sleep(0.1)
    raise AssertionError(f"MEMORY_COMMANDS has no leader: {last!r}")


async def _replicas_current(js) -> bool:
    try:
        for stream in (subjects.COMMANDS_STREAM, subjects.EVENTS_STREAM, subjects.DLQ_STREAM):
            cluster = (await js.stream_info(stream)).cluster
            if not cluster.leader or len(cluster.replicas or []) != 2 or not all(
                    r.current and not r.offline for r in cluster.replicas):
                return False
        return True
    except Exception:
        return False


async def verify(commands: list[Command], db: asyncpg.Connection, bot: Bot, checker) -> list[str]:
    problems: list[str] = []

    def problem(text: str, examples: list) -> None:
        if examples:
            problems.append(f"{text}: {len(examples)} (e.g. {examples[:3]})")

    by_id = {c.command_id: c for c in commands}

    # 1. Exactly one stored result per command, and nothing else stored.
    results = await stored_answers(db)  # rendered from each row, as a repeat and the lookup get it
    problem("commands without a stored result", [c for c in by_id if c not in results])
    problem("stored results of commands nobody sent", [c for c in results if c not in by_id])
    problem("results other than saved", [(c, r["data"]) for c, r in results.items() if r["data"]["status"] != SAVED])

    # 2. Exactly one effect: one memory row per command, the one its result names.
    memories = await db.fetch("SELECT m.server_memory_id AS id, m.content, s.server_disc_id AS workspace"
                              " FROM server_memories m JOIN servers s USING (server_id)")
    rows_by_content: dict[str, list] = defaultdict(list)
    for m in memories:
        rows_by_content[m["content"]].append(m)
    problem("commands without exactly one memory row",
            [(c.command_id, len(rows_by_content[c.content])) for c in commands if len(rows_by_content[c.content]) != 1])
    problem("memory rows that are not what the result says",
            [c.command_id for c in commands if len(rows_by_content[c.content]) == 1 and c.command_id in results
             and (rows_by_content[c.content][0]["id"] != results[c.command_id]["data"]["memory_id"]
                  or rows_by_content[c.content][0]["workspace"] != c.workspace_id)])
    problem("memory rows of no command", [m["content"] for m in memories if m["content"] not in
                                          {c.content for c in commands}])

    # 3. Per-workspace order: memory ids increase in publish order.
    out_of_order = []
    per_ws: dict[str, list[int]] = defaultdict(list)
    for c in commands:  # publish order within a workspace is index order
        if c.command_id in results and results[c.command_id]["data"].get("memory_id") is not None:
            per_ws[c.workspace_id].append(results[c.command_id]["data"]["memory_id"])
    for ws, ids in per_ws.items():
        if any(a >= b for a, b in zip(ids, ids[1:])):
            out_of_order.append((ws, ids))
    problem("workspaces whose memory ids do not follow publish order", out_of_order)

    # 4. Events: every saved command's invalidation and memory.saved, once each, invalidation
    #    first; nothing else.
    events = await read_events(checker)
    counts = Counter(msg_id for _, _, msg_id in events)
    seq_of = {msg_id: seq for seq, _, msg_id in events}
    expected = {}
    for c in commands:
        expected[f"{c.command_id}:invalidate:tomori_state:{c.workspace_id}"] = c
        expected[f"{c.command_id}:saved"] = c
    problem("events missing", [e for e in expected if e not in counts])
    problem("events stored more than once", [(e, k) for e, k in counts.items() if k > 1])
    problem("events nobody expected", [e for e in counts if e not in expected])
    problem("memory.saved stored before its cache.invalidate",
            [c.command_id for c in commands
             if seq_of.get(f"{c.command_id}:saved", 0) < seq_of.get(
                 f"{c.command_id}:invalidate:tomori_state:{c.workspace_id}", 1 << 62)
             and f"{c.command_id}:saved" in seq_of])

    # 5. Results reached the bot on its private inbox, or its lookup finds them.
    differ, unanswered = [], []
    for cid, result in results.items():
        got = bot.replies.get(cid, [])
        if not got:
            looked_up = await bot.lookup(by_id[cid].workspace_id, cid) if cid in by_id else None
            if looked_up is None:
                unanswered.append(cid)
                continue
            got = [looked_up]
        if any(json.loads(r) != result for r in got):
            differ.append(cid)
    problem("replies that differ from the stored result", differ)
    problem("results neither delivered nor found by lookup", unanswered)
    return problems
