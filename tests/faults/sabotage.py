"""Proof that the checker can fail: after a clean run, break the outcome in known ways and
check that the checker reports exactly those breaks."""

from __future__ import annotations

import json

import nats
from nats.js.api import ConsumerConfig, DeliverPolicy

from tests.cluster.nats_deploy import PASSWORDS
from tests.faults.bot import Bot
from tests.faults.checker import SAVED, Verdict, check, connect_db
from tests.faults.harness import CAP, FaultCluster

# A result deleted is a lost command and an answer that differs from what is stored; a
# memory row added to a full workspace is a command applied twice and a cap exceeded.
BREAKS = {"acked but lost": 1, "answered differently": 1, "applied twice": 1, "above cap": 1,
          "events duplicated": 1, "commands unacknowledged": 1}


async def sabotage_and_check(cluster: FaultCluster, bot: Bot, name: str) -> Verdict:
    db = await connect_db(cluster.database_url)
    admin = await nats.connect(cluster.nats_urls, user="memory-worker", password=PASSWORDS["memory-worker"])
    try:
        rows = {r["command_id"]: json.loads(r["result"])
                for r in await db.fetch("SELECT command_id, result::text AS result FROM processed_commands")}
        saved = [s for s in bot.history if rows.get(s.command_id, {}).get("data", {}).get("status") in SAVED]
        refused = next(s for s in bot.history if s.command_id in rows and s not in saved and s.replies)
        twice, gone = saved[0], saved[-1]  # the first workspace is full (CAP saves)
        # A refused command's result vanishes: no event of it can mislead the count.
        await db.execute("DELETE FROM processed_commands WHERE command_id = $1", refused.command_id)
        await db.execute(
            "INSERT INTO server_memories (server_id, persona_lineage_id, content)"
            " SELECT server_id, 7, $1 FROM servers WHERE server_disc_id = $2", twice.content, twice.workspace_id)
        # An event published again under a new message id (the same event_id).
        event = await admin.jetstream().get_last_msg("MEMORY_EVENTS", f"memory.saved.server.{gone.workspace_id}")
        await admin.jetstream().publish(event.subject, event.data, headers={"Nats-Msg-Id": "sabotage-copy"})
        # A reader of MEMORY_COMMANDS that takes a command and never acknowledges it.
        await admin.jetstream().add_consumer("MEMORY_COMMANDS", ConsumerConfig(
            durable_name="sabotage-never-acks", deliver_policy=DeliverPolicy.ALL))
        return await check(name, bot, cluster.database_url, admin, cap=CAP)
    finally:
        await admin.close()
        await db.close()
