"""Proof that the checker can fail: after a clean run, break the outcome in known ways and
check that the checker reports exactly those breaks."""

from __future__ import annotations

import nats

from tests.cluster.nats_deploy import PASSWORDS
from tests.faults.bot import Bot
from tests.faults.checker import SAVED, Verdict, check, connect_db, stored_commands, unacknowledged
from tests.faults.harness import CAP, FaultCluster
from tests.support.waiting import wait_until

# A result deleted is a lost command and an answer that differs from what is stored; a
# memory row added to a full workspace is a command applied twice and a cap exceeded.
BREAKS = {"acked but lost": 1, "answered differently": 1, "applied twice": 1, "above cap": 1,
          "events duplicated": 1, "commands unacknowledged": 1}


async def sabotage_and_check(cluster: FaultCluster, bot: Bot, name: str) -> Verdict:
    db = await connect_db(cluster.database_url)
    admin = await nats.connect(cluster.nats_urls, user="memory-admin", password=PASSWORDS["memory-admin"],
                               inbox_prefix="_INBOX.admin")
    worker = await nats.connect(cluster.nats_urls, user="memory-worker", password=PASSWORDS["memory-worker"])
    try:
        rows = {cid: stored for cid, (stored, _) in (await stored_commands(db)).items()}
        saved = [s for s in bot.history if s.command_id in rows and rows[s.command_id].status in SAVED]
        refused = next(s for s in bot.history if s.command_id in rows and s not in saved and s.replies)
        twice, gone = saved[0], saved[-1]  # the first workspace is full (CAP saves)
        # A refused command's result vanishes: no event of it can mislead the count.
        await db.execute("DELETE FROM processed_commands WHERE command_id = $1", refused.command_id)
        await db.execute(
            "INSERT INTO server_memories (server_id, persona_lineage_id, content)"
            " SELECT server_id, 7, $1 FROM servers WHERE server_disc_id = $2", twice.content, twice.workspace_id)
        # An event published again under a new message id (the same event_id).
        event = await admin.jetstream().get_last_msg("MEMORY_EVENTS", f"memory.saved.server.{gone.workspace_id}")
        await worker.jetstream().publish(event.subject, event.data, headers={"Nats-Msg-Id": "sabotage-copy"})
        # A command stored after the workers stopped: nobody acknowledges it (as one whose
        # events were never stored would stay unacknowledged).
        await _publish_unconsumed(cluster, bot)
        await wait_until(lambda: _some_unacknowledged(admin), timeout=10.0, what="the command stored")
        return await check(name, bot, cluster.database_url, admin, cap=CAP)
    finally:
        await admin.close()
        await worker.close()
        await db.close()


async def _publish_unconsumed(cluster: FaultCluster, bot: Bot) -> None:
    nc = await nats.connect(cluster.nats_urls, user=bot.user, password=bot.password, inbox_prefix="_INBOX.bot.tomori")
    try:
        ack = await nc.jetstream().publish("memory.create.sabotage", b"{}", headers={"Nats-Msg-Id": "sabotage-unacked"},
                                           stream="MEMORY_COMMANDS", timeout=5.0)
        assert ack.seq > 0
    finally:
        await nc.close()


async def _some_unacknowledged(admin: nats.NATS) -> bool:
    return bool(await unacknowledged(admin))
