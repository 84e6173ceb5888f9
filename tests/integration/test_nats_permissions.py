"""The accounts of deploy/nats/accounts.conf on a real nats-server (issue 7).

One server runs accounts.conf as deployed (copied verbatim next to a minimal node config on a
free port); a real worker (`memoryctl run`) logs in as `memory-worker` and provisions the
streams and consumers itself. Then every role does what it is for, and tries what it is not
for: the denied action must give the client a clear error (nats-py reports a server
permissions violation through the connection's error callback; a request that was refused
also times out, since nobody answers it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import uuid

import msgspec
import nats
import nats.errors
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.codec import encode
from tests.cluster.nats_deploy import INBOX_PREFIXES, PASSWORDS, connect_as, connect_options, eventually
from tests.conftest import ROOT, clone_database, unique
from tests.integration.helpers import server_save
from tests.support.commands import envelope, update_fields
from tests.support.secured import secured_worker
from tests.support.waiting import wait_until
from worker.cli import dlq as dlq_cli
from worker.client.cache_node import CacheNode
from worker.client.memory_client import MemoryClient
from worker.sinks import process as sinks

TYPESCRIPT_CLIENT = ROOT / "clients" / "typescript"


@pytest.fixture(scope="module")
async def secured(tmp_root, pg_server, template_db):
    async with secured_worker(tmp_root / "nats-secured", tmp_root / "secured-worker.log",
                              await clone_database(pg_server, template_db),
                              MEMORY_PARTITIONS="4", MAX_DELIVER="2", REPLY_SUBJECT_PREFIXES="_INBOX.bot.",
                              TENANT="tomori", TENANT_LINEAGES="7") as secured:  # MEMORY is Tomori's account
        yield secured


def violations(errors: list[Exception]) -> list[str]:
    return [str(e).lower() for e in errors if "permissions violation" in str(e).lower()]


async def denied(errors: list[Exception], *what: str, timeout: float = 3.0) -> None:
    """Each of `what` (e.g. 'publish to "memory.saved.x"') was reported as a violation."""
    wanted = [f"permissions violation for {w}".lower() for w in what]

    async def reported() -> bool:
        got = violations(errors)
        return all(any(w in g for g in got) for w in wanted)

    try:
        await eventually(reported, timeout, f"violations {wanted}")
    except AssertionError:
        raise AssertionError(f"expected violations {wanted}, the client got {errors}") from None


def create_payload(workspace: str, content: str, reply_to: str | None) -> tuple[str, bytes, str]:
    cmd = server_save(workspace, content, reply_to=reply_to)
    return subjects.command_subject("create", workspace), encode(cmd), cmd.command_id


# --------------------------------------------------------------------------------------------
# Everyone


async def test_no_credentials_or_a_wrong_password_is_refused(secured):
    for options in ({}, {"user": "bot-tomori", "password": "wrong"}, {"user": "nobody", "password": "x"}):
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(secured.url, connect_timeout=2, allow_reconnect=False, **options)


async def test_the_worker_provisioned_everything_as_memory_worker(secured):
    errors: list[Exception] = []
    nc = await connect_as(secured.url, "memory-admin", errors=errors)  # lists consumers: the worker never does
    try:
        js = nc.jetstream()
        for stream in (subjects.COMMANDS_STREAM, subjects.EVENTS_STREAM, subjects.DLQ_STREAM):
            await js.stream_info(stream)
        consumers = {c.name for c in await js.consumers_info(subjects.COMMANDS_STREAM)}
        assert {f"memory-worker-p{p}" for p in range(4)} <= consumers
    finally:
        await nc.close()
    assert errors == []


# --------------------------------------------------------------------------------------------
# Bots


async def test_a_bot_sends_commands_and_reads_results_and_saved_events_on_its_own(secured):
    errors: list[Exception] = []
    bot = await connect_as(secured.url, "bot-tomori", errors=errors)
    try:
        js = bot.jetstream()
        # Its two events consumers are its worker's (TENANT=tomori): pull, from new events on.
        for name, subject in (("bot-tomori-saved", "memory.saved.>"), ("bot-tomori-evicted", "memory.evicted.>")):
            info = await js.consumer_info(subjects.EVENTS_STREAM, name)
            assert (info.config.filter_subject, info.config.deliver_subject, info.config.deliver_policy,
                    info.config.ack_policy) == (subject, None, DeliverPolicy.NEW, AckPolicy.EXPLICIT)
        replies = await bot.subscribe(f"{INBOX_PREFIXES['bot-tomori']}.results.*")
        workspace = unique()
        subject, payload, cid = create_payload(workspace, "tomori likes tea",
                                               f"{INBOX_PREFIXES['bot-tomori']}.results.r1")
        ack = await js.publish(subject, payload, headers={"Nats-Msg-Id": cid}, stream=subjects.COMMANDS_STREAM)
        assert ack.stream == subjects.COMMANDS_STREAM
        reply = json.loads((await replies.next_msg(timeout=15)).data)
        assert reply["command_id"] == cid and reply["data"]["status"] == "memory_saved_successfully"

        # The stored-result lookup answers on the bot's private inbox too.
        looked_up = await bot.request(subjects.result_subject(workspace, cid), b"", timeout=5)
        assert json.loads(looked_up.data) == reply

        # The model's edit of it (memory.update): the bot may send it, the worker may publish memory.updated.
        edit = {**envelope(workspace), "reply_to": f"{INBOX_PREFIXES['bot-tomori']}.results.r2",
                **update_fields(workspace, reply["data"]["memory_id"], "tomori likes green tea")}
        await js.publish(subjects.command_subject("update", workspace), json.dumps(edit).encode(),
                         headers={"Nats-Msg-Id": edit["command_id"]}, stream=subjects.COMMANDS_STREAM)
        edited = json.loads((await replies.next_msg(timeout=15)).data)
        assert (edited["command_id"], edited["data"]["status"]) == (edit["command_id"], "memory_updated_successfully")

        sub = await js.pull_subscribe_bind(durable="bot-tomori-saved", stream=subjects.EVENTS_STREAM)
        seen = []
        for _ in range(20):
            for msg in await sub.fetch(10, timeout=5):
                seen.append(json.loads(msg.data)["command_id"])
                await msg.ack()
            if cid in seen:
                break
        assert cid in seen
        await sub.unsubscribe()
        await bot.flush()
    finally:
        await bot.close()
    assert errors == []


async def test_a_bot_cannot_publish_events_dead_letters_or_results(secured):
    errors: list[Exception] = []
    bot = await connect_as(secured.url, "bot-kaede", errors=errors)
    watcher = await connect_as(secured.url, "memory-admin")
    try:
        ws = unique()
        # Events as the worker publishes them, and with three tokens: the shape of a command
        # subject (which the bot is granted by shape), that MEMORY_EVENTS would still store.
        short = [f"memory.{root}.{ws}" for root in ("saved", "evicted", "removed", "updated")]
        forged = [f"memory.saved.server.{ws}", f"memory.evicted.server.{ws}", f"memory.removed.server.{ws}",
                  f"memory.updated.server.{ws}", f"cache.invalidate.tomori_state.{ws}", "metrics.memory_eviction",
                  f"dlq.memory.create.{ws}",
                  f"{INBOX_PREFIXES['bot-tomori']}.results.forged", *short]
        for subject in forged:
            await bot.publish(subject, b'{"forged": true}')
        # Through JetStream the refusal also shows as a publish that is never acknowledged.
        with pytest.raises(nats.errors.TimeoutError):
            await bot.jetstream().publish(forged[0], b"{}", timeout=1)
        await denied(errors, *(f'publish to "{s}"' for s in forged))
        wjs = watcher.jetstream()
        for subject in [*forged[:5], *short]:
            with pytest.raises(NotFoundError):
                await wjs.get_last_msg(subjects.EVENTS_STREAM, subject)
    finally:
        await bot.close()
        await watcher.close()


@pytest.mark.parametrize("user", ["bot-tomori", "bot-kaede", "memory-operator"])
async def test_a_command_kind_no_permission_file_names_may_be_sent(secured, user):
    """Commands are granted by subject shape, so a new kind needs no edit of deploy/nats/."""
    errors: list[Exception] = []
    client = await connect_as(secured.url, user, errors=errors)
    try:
        ws = unique()
        new_kind = subjects.command_subject("pin", ws)
        await client.publish(new_kind, b"{}")
        # A denied publish after it: its violation, once reported, follows any for the new kind.
        await client.publish(f"memory.saved.{ws}", b"{}")
        await denied(errors, f'publish to "memory.saved.{ws}"')
        assert not [v for v in violations(errors) if new_kind.lower() in v], errors
    finally:
        await client.close()


async def test_a_bot_cannot_read_another_bots_replies_or_consumers(secured):
    tomori_errors: list[Exception] = []
    kaede_errors: list[Exception] = []
    tomori = await connect_as(secured.url, "bot-tomori", errors=tomori_errors)
    kaede = await connect_as(secured.url, "bot-kaede", errors=kaede_errors)
    try:
        snooped: list[str] = []

        async def snoop(msg) -> None:
            snooped.append(msg.subject)

        snoops = [await kaede.subscribe(subject, cb=snoop) for subject in
                  (f"{INBOX_PREFIXES['bot-tomori']}.>", "_INBOX.>", ">", "memory.saved.>", "$JS.ACK.>")]
        await denied(kaede_errors, *(f'subscription to "{s}"' for s in
                                     (f"{INBOX_PREFIXES['bot-tomori']}.>", "_INBOX.>", ">", "memory.saved.>")))

        # Nor take over tomori's consumer, pull from it, or read the event stream by sequence.
        kjs = kaede.jetstream()
        with pytest.raises(nats.errors.TimeoutError):
            await kjs.add_consumer(subjects.EVENTS_STREAM, ConsumerConfig(
                name="bot-tomori-saved", durable_name="bot-tomori-saved", filter_subject="memory.saved.>"),
                timeout=1)
        await kaede.publish(f"$JS.API.CONSUMER.MSG.NEXT.{subjects.EVENTS_STREAM}.bot-tomori-saved", b"{}")
        await kaede.publish(f"$JS.API.STREAM.MSG.GET.{subjects.EVENTS_STREAM}", b'{"seq": 1}')
        await kaede.publish(f"$JS.API.DIRECT.GET.{subjects.EVENTS_STREAM}", b'{"seq": 1}')
        await denied(kaede_errors,
                     f'publish to "$js.api.consumer.create.{subjects.EVENTS_STREAM}.bot-tomori-saved.memory.saved.>"',
                     f'publish to "$js.api.consumer.msg.next.{subjects.EVENTS_STREAM}.bot-tomori-saved"',
                     f'publish to "$js.api.stream.msg.get.{subjects.EVENTS_STREAM}"',
                     f'publish to "$js.api.direct.get.{subjects.EVENTS_STREAM}"')

        # Tomori's command is answered on tomori's inbox, and kaede sees none of it.
        replies = await tomori.subscribe(f"{INBOX_PREFIXES['bot-tomori']}.results.*")
        subject, payload, cid = create_payload(unique(), "a secret of tomori's",
                                               f"{INBOX_PREFIXES['bot-tomori']}.results.r2")
        await tomori.jetstream().publish(subject, payload, headers={"Nats-Msg-Id": cid},
                                         stream=subjects.COMMANDS_STREAM)
        reply = json.loads((await replies.next_msg(timeout=15)).data)
        assert reply["command_id"] == cid
        # Anything the server routed to kaede before the reply reached tomori is in kaede's
        # hands once a round trip on kaede's connection returns (one connection keeps order),
        # and handed to `snoop` once no subscription has messages queued.
        await kaede.flush(timeout=5)
        await wait_until(lambda: all(sub.pending_msgs == 0 for sub in snoops), timeout=5,
                         what="kaede's subscriptions drained")
        assert snooped == []
    finally:
        await tomori.close()
        await kaede.close()
    assert violations(tomori_errors) == []


async def test_memory_client_works_on_a_bot_connection(secured):
    errors: list[Exception] = []
    bot = await connect_as(secured.url, "bot-tomori", errors=errors)
    try:
        async with MemoryClient(bot, timeout=3) as memory:
            cmd = server_save(unique(), "through the client")
            result = await memory.create(cmd)
        assert result.success and violations(errors) == []
    finally:
        await bot.close()


# --------------------------------------------------------------------------------------------
# Cache nodes


async def test_durable_create_without_filter_is_refused(secured):
    """Why cache nodes and sinks must create their consumer with `name` set: the legacy
    CONSUMER.DURABLE.CREATE request (durable_name only) could carry any filter."""
    errors: list[Exception] = []
    nc = await connect_as(secured.url, "cache-node-a", errors=errors)
    try:
        with pytest.raises(nats.errors.TimeoutError):
            await nc.jetstream().add_consumer(subjects.EVENTS_STREAM, ConsumerConfig(
                durable_name="cache-node-a", filter_subject=">"), timeout=1)
        await denied(errors, f'publish to "$js.api.consumer.durable.create.{subjects.EVENTS_STREAM}.cache-node-a"')
    finally:
        await nc.close()


async def test_a_cache_node_gets_invalidations_and_cannot_publish_commands(secured):
    errors: list[Exception] = []

    async def error_cb(exc: Exception) -> None:
        errors.append(exc)

    node = await CacheNode.connect(secured.url, name="a", poll_seconds=1.0,
                                   connect_options={**connect_options("cache-node-a"), "error_cb": error_cb})
    bot = await connect_as(secured.url, "bot-tomori")
    try:
        await node.start()
        assert node.live
        workspace = unique()
        loads = 0

        async def load() -> str:
            nonlocal loads
            loads += 1
            return "state"

        await node.get_or_load("tomori_state", workspace, load)
        assert node.contains("tomori_state", workspace)
        subject, payload, cid = create_payload(workspace, "invalidate me", None)
        await bot.jetstream().publish(subject, payload, headers={"Nats-Msg-Id": cid}, stream=subjects.COMMANDS_STREAM)

        async def invalidated() -> bool:
            return not node.contains("tomori_state", workspace)

        await eventually(invalidated, 15, "the invalidation of the saved workspace")
        assert violations(errors) == []

        # What a cache node may not do.
        nc = node.nc
        await nc.publish(f"memory.create.{workspace}", payload)
        await nc.publish(f"cache.invalidate.tomori_state.{workspace}", b"{}")
        await nc.subscribe("memory.>")
        await nc.subscribe("_INBOX.>")
        with pytest.raises(nats.errors.TimeoutError):
            await nc.jetstream().add_consumer(subjects.EVENTS_STREAM, ConsumerConfig(
                name="cache-node-a", durable_name="cache-node-a", filter_subject="memory.saved.>"), timeout=1)
        with pytest.raises(nats.errors.TimeoutError):
            await nc.jetstream().publish(f"memory.create.{workspace}", payload, timeout=1)
        await denied(errors, f'publish to "memory.create.{workspace}"',
                     f'publish to "cache.invalidate.tomori_state.{workspace}"',
                     'subscription to "memory.>"', 'subscription to "_inbox.>"',
                     f'publish to "$js.api.consumer.create.{subjects.EVENTS_STREAM}.cache-node-a.memory.saved.>"')
    finally:
        await node.stop(delete_consumer=True)
        await node.close()
        await bot.close()


# --------------------------------------------------------------------------------------------
# Metrics sinks


async def test_a_metrics_sink_sees_nothing_but_metrics(secured, tmp_path):
    jsonl = tmp_path / "metrics.jsonl"
    stop = asyncio.Event()
    run = asyncio.create_task(sinks.run_sinks(secured.url, None, jsonl, 30, stop,
                                              connect_options=connect_options("metrics-sink")))
    worker = await connect_as(secured.url, "memory-worker")
    errors: list[Exception] = []
    sink = await connect_as(secured.url, "metrics-sink", errors=errors)
    try:
        metric_id = f"perm-{uuid.uuid4().hex}:metric:eviction"
        wjs = worker.jetstream()
        # Everything MEMORY_EVENTS carries, with the one metric last.
        ws = unique()
        await wjs.publish(f"memory.saved.server.{ws}", b'{"event_id": "x"}', headers={"Nats-Msg-Id": uuid.uuid4().hex})
        await wjs.publish(f"cache.invalidate.tomori_state.{ws}", b'{"event_id": "y"}',
                          headers={"Nats-Msg-Id": uuid.uuid4().hex})
        await wjs.publish(subjects.METRIC_EVICTION_SUBJECT, msgspec.json.encode({"scope": "server", "decay_days": 30}),
                          headers={"Nats-Msg-Id": metric_id})

        async def written() -> bool:
            return jsonl.exists() and metric_id in jsonl.read_text()

        await eventually(written, 15, "the metric in the JSON-lines file")
        lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
        assert {line["metric"] for line in lines} == {"memory_eviction"}
        assert not run.done()

        # Anything else, tried directly with the sink's credentials, is refused.
        sjs = sink.jetstream()
        for config in (ConsumerConfig(name="metrics-sink-jsonl", durable_name="metrics-sink-jsonl",
                                      filter_subject="memory.saved.>"),
                       ConsumerConfig(name="metrics-sink-all", durable_name="metrics-sink-all", filter_subject=">"),
                       ConsumerConfig(name="metrics-sink-cmds", durable_name="metrics-sink-cmds",
                                      filter_subject="metrics.>")):
            stream = subjects.EVENTS_STREAM if config.name != "metrics-sink-cmds" else subjects.COMMANDS_STREAM
            with pytest.raises(nats.errors.TimeoutError):
                await sjs.add_consumer(stream, config, timeout=1)
        await sink.subscribe(">")
        await sink.subscribe("memory.>")
        await sink.publish("metrics.memory_eviction", b'{"scope": "server", "decay_days": 1}')
        await sink.publish(f"$JS.API.STREAM.MSG.GET.{subjects.EVENTS_STREAM}", b'{"seq": 1}')
        await denied(errors,
                     f'publish to "$js.api.consumer.create.{subjects.EVENTS_STREAM}.metrics-sink-jsonl.memory.saved.>"',
                     # nats-py leaves a `>` filter out of the subject: no filter in the subject, no permission.
                     f'publish to "$js.api.consumer.create.{subjects.EVENTS_STREAM}.metrics-sink-all"',
                     f'publish to "$js.api.consumer.create.{subjects.COMMANDS_STREAM}.metrics-sink-cmds.metrics.>"',
                     'subscription to ">"', 'subscription to "memory.>"',
                     'publish to "metrics.memory_eviction"',
                     f'publish to "$js.api.stream.msg.get.{subjects.EVENTS_STREAM}"')
    finally:
        stop.set()
        await asyncio.wait_for(run, 15)
        await worker.close()
        await sink.close()


# --------------------------------------------------------------------------------------------
# Operators


def dlq_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    dlq_cli.add_parsers(sub)
    return parser.parse_args(["dlq", *argv])


async def test_an_operator_lists_replays_and_drops_dead_letters_and_nothing_more(secured):
    bot = await connect_as(secured.url, "bot-tomori")
    errors: list[Exception] = []
    operator = await connect_as(secured.url, "memory-operator", errors=errors)
    try:
        workspace = unique()
        poison = f"not json {uuid.uuid4().hex}".encode()
        await bot.jetstream().publish(subjects.command_subject("create", workspace), poison,
                                      headers={"Nats-Msg-Id": uuid.uuid4().hex}, stream=subjects.COMMANDS_STREAM)
        ojs = operator.jetstream()

        async def seqs_of_poison() -> list[int]:
            from worker.consuming import dead_letters

            return [letter.seq async for letter in dead_letters.entries(ojs) if letter.payload == poison]

        found: list[int] = []

        async def dead_lettered() -> bool:
            found[:] = await seqs_of_poison()
            return bool(found)

        await eventually(dead_lettered, 15, "the poison command in MEMORY_DLQ")
        lines: list[str] = []
        options = connect_options("memory-operator")
        assert await dlq_cli.run(dlq_args("list"), secured.url, out=lines.append, connect_options=options) == 0
        assert await dlq_cli.run(dlq_args("show", str(found[0])), secured.url, out=lines.append,
                                 connect_options=options) == 0
        assert await dlq_cli.run(dlq_args("replay", "--include-invalid", str(found[0])), secured.url, out=lines.append,
                                 connect_options=options) == 0
        # Replayed to memory.create.<workspace>: still poison, so it is dead-lettered again.
        await eventually(lambda: _newer(seqs_of_poison, found[0]), 15, "the replayed poison dead-lettered again")
        again = await seqs_of_poison()
        assert await dlq_cli.run(dlq_args("drop", "--yes", *map(str, again)), secured.url, out=lines.append,
                                 connect_options=options) == 0
        assert await seqs_of_poison() == []
        assert violations(errors) == []

        # An operator does not change streams, purge commands or publish events (it may read and
        # drop single commands: memoryctl commands, tests/integration/test_hostile_bot.py).
        await operator.publish(f"$JS.API.STREAM.DELETE.{subjects.DLQ_STREAM}", b"")
        await operator.publish(f"$JS.API.STREAM.PURGE.{subjects.COMMANDS_STREAM}", b"")
        await operator.publish(f"$JS.API.CONSUMER.CREATE.{subjects.EVENTS_STREAM}.ops.>", b"{}")
        await operator.publish(f"memory.saved.server.{workspace}", b"{}")
        await operator.subscribe("memory.>")
        await denied(errors, f'publish to "$js.api.stream.delete.{subjects.DLQ_STREAM}"',
                     f'publish to "$js.api.stream.purge.{subjects.COMMANDS_STREAM}"',
                     f'publish to "$js.api.consumer.create.{subjects.EVENTS_STREAM}.ops.>"',
                     f'publish to "memory.saved.server.{workspace}"', 'subscription to "memory.>"')
    finally:
        await bot.close()
        await operator.close()


async def _newer(seqs, than: int) -> bool:
    return any(seq > than for seq in await seqs())


# --------------------------------------------------------------------------------------------
# The worker's own user, and the provisioning user (issue 35)

STREAMS = (subjects.COMMANDS_STREAM, subjects.EVENTS_STREAM, subjects.DLQ_STREAM)


async def test_the_worker_may_delete_or_empty_nothing_but_acknowledged_commands(secured):
    """Were a bot ever to make the worker publish where it asked, no right of the worker's user
    deletes a stream or a consumer, empties the events or the dead letters, or writes where only
    provisioning does. What it does use (the purge of commands) it may."""
    errors: list[Exception] = []
    worker = await connect_as(secured.url, "memory-worker", errors=errors)
    admin = await connect_as(secured.url, "memory-admin")
    try:
        ajs = admin.jetstream()

        async def snapshot() -> dict:
            # The worker purges acknowledged commands every few seconds (retention.py), the earlier
            # tests' among them: for the commands, only what was added (the last sequence) counts.
            def held(stream: str, state) -> int:
                return state.last_seq if stream == subjects.COMMANDS_STREAM else state.messages

            return {stream: (held(stream, (await ajs.stream_info(stream)).state),
                             sorted(c.name for c in await ajs.consumers_info(stream))) for stream in STREAMS}

        before = await snapshot()
        refused = [*(f"$JS.API.STREAM.DELETE.{s}" for s in STREAMS),
                   f"$JS.API.STREAM.PURGE.{subjects.EVENTS_STREAM}", f"$JS.API.STREAM.PURGE.{subjects.DLQ_STREAM}",
                   f"$JS.API.STREAM.MSG.DELETE.{subjects.EVENTS_STREAM}", f"$JS.API.STREAM.MSG.DELETE.{subjects.DLQ_STREAM}",
                   f"$JS.API.CONSUMER.DELETE.{subjects.COMMANDS_STREAM}.memory-worker-p0",
                   f"$JS.API.CONSUMER.DELETE.{subjects.EVENTS_STREAM}.bot-tomori-saved",
                   f"$JS.API.STREAM.CREATE.{subjects.COMMANDS_STREAM}_UPGRADE", "$JS.API.STREAM.CREATE.ELSEWHERE",
                   "_memory_upgrade.backup", "dlq.forged", "memory.create.forged", "_INBOX.cache.a.x"]
        for subject in refused:
            await worker.publish(subject, b"{}")
        await denied(errors, *(f'publish to "{s}"' for s in refused))
        assert await snapshot() == before
        assert await worker.jetstream().purge_stream(subjects.COMMANDS_STREAM, seq=1)  # removes nothing below 1

        # The provisioning user may delete (a stream of its own here).
        await ajs.add_stream(name="SCRATCH", subjects=["scratch.>"])
        assert await ajs.delete_stream("SCRATCH")
    finally:
        await worker.close()
        await admin.close()


# --------------------------------------------------------------------------------------------


def test_the_worker_never_hit_its_own_permissions(secured):
    """Runs last in this module: everything the worker did above was within memory-worker's rights."""
    text = secured.worker.log_text().lower()
    assert "permissions violation" not in text, [line for line in text.splitlines() if "permissions" in line]
    assert "worker_ready" in text


# --------------------------------------------------------------------------------------------
# The TypeScript client (@memory-worker/client) as a bot runs it


async def test_the_typescript_client_and_cache_node_need_no_permission_their_users_lack(secured):
    """MemoryClient on bot-tomori's connection, CacheNode "a" on cache-node-a's, each with its
    inbox prefix: saves, lookups, a batch, an invalidation, and no permissions violation
    (clients/typescript/test/accounts/shipped_accounts.test.mjs)."""
    node = shutil.which("node")
    if node is None or not (TYPESCRIPT_CLIENT / "node_modules" / "@nats-io" / "jetstream").is_dir():
        pytest.fail("Node.js 20+ and clients/typescript's node_modules are needed: run `make test` "
                    "(it runs `npm ci` in clients/typescript).")
    roles = {"BOT": "bot-tomori", "CACHE": "cache-node-a"}
    env = {**os.environ, "NATS_URL": secured.url,
           **{f"{role}_{what}": value for role, user in roles.items()
              for what, value in (("USER", user), ("PASSWORD", PASSWORDS[user]), ("INBOX", INBOX_PREFIXES[user]))}}
    done = await asyncio.to_thread(
        subprocess.run, [node, "--test", "--test-reporter=spec", "--test-timeout=60000",
                         "test/accounts/shipped_accounts.test.mjs"],
        cwd=TYPESCRIPT_CLIENT, env=env, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, f"node --test failed:\n{done.stdout[-10000:]}\n{done.stderr[-3000:]}"
