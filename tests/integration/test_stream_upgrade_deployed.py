"""An existing deployment upgraded: a work-queue MEMORY_COMMANDS with a bot's commands
waiting, under the published permissions (deploy/nats/accounts.conf). The new worker
(`memoryctl run`, logged in as `memory-worker`) may not delete a stream: it refuses to start,
naming `memoryctl provision`. That, run as the account's provisioning user `memory-admin`,
rebuilds the stream with limits retention; then the worker applies every waiting command, in
order, answering each once."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from datetime import UTC, datetime

import pytest
from nats.js.api import DiscardPolicy, RetentionPolicy

from contracts import subjects
from tests.cluster.nats_deploy import PASSWORDS, connect_as, single_node
from tests.conftest import WorkerProcess, clone_database, unique, worker_env
from tests.e2e.bus import create_fields
from tests.memoryctl import memoryctl
from tests.support.waiting import wait_until
from worker.consuming.administration import streams

INBOX = "_INBOX.bot.tomori"
PARTITIONS = 2


async def test_a_work_queue_stream_with_waiting_commands_is_upgraded_by_the_new_worker(tmp_root, pg_server, template_db):
    run = uuid.uuid4().hex[:6]
    node = single_node(tmp_root / f"nats-upgrade-{run}")
    worker = None
    try:
        # What the previous version of the worker provisioned.
        old = await connect_as(node.url, "memory-admin")
        js = old.jetstream()
        await js.add_stream(dataclasses.replace(streams.command_stream(PARTITIONS), retention=RetentionPolicy.WORK_QUEUE,
                                                discard=DiscardPolicy.OLD, max_age=None, max_bytes=None))
        await streams.ensure_stream(js, streams.events_stream())
        await streams.ensure_stream(js, streams.dlq_stream())

        bot = await connect_as(node.url, "bot-tomori")
        answers: list[dict] = []

        async def on_answer(msg) -> None:
            answers.append(json.loads(msg.data))

        await bot.subscribe(f"{INBOX}.results.*", cb=on_answer)
        workspace, sent = unique("ws-"), []
        for i in range(5):
            cid = unique("upgrade-")
            body = {"command_id": cid, "issued_at": datetime.now(UTC).isoformat(),
                    "reply_to": f"{INBOX}.results.{cid}", **create_fields(workspace, f"fact number {i}")}
            await bot.jetstream().publish(subjects.command_subject("create", workspace), json.dumps(body).encode())
            sent.append(cid)
        assert (await js.stream_info(subjects.COMMANDS_STREAM)).state.messages == 5

        database_url = await clone_database(pg_server, template_db)
        worker = WorkerProcess(worker_env(node.url, database_url,
                                          NATS_USER="memory-worker", NATS_PASSWORD=PASSWORDS["memory-worker"],
                                          MEMORY_PARTITIONS=str(PARTITIONS),
                                          REPLY_SUBJECT_PREFIXES=f"{INBOX}."),
                               tmp_root / f"upgrade-worker-{run}.log")
        with pytest.raises(RuntimeError, match="worker exited early"):
            await asyncio.to_thread(worker.start)
        assert worker.proc is not None and worker.proc.wait(timeout=10) == 2
        assert "MEMORY_COMMANDS is a work-queue stream of an older release" in worker.log_text()
        assert (await js.stream_info(subjects.COMMANDS_STREAM)).state.messages == 5  # untouched

        done = await memoryctl(["provision"], worker_env(node.url, database_url, MEMORY_PARTITIONS=str(PARTITIONS),
                                                         NATS_USER="memory-admin", NATS_PASSWORD=PASSWORDS["memory-admin"],
                                                         NATS_INBOX_PREFIX="_INBOX.admin", LOG_FORMAT="json"))
        assert done.returncode == 0 and "provisioned: 2 partitions" in done.stdout, done
        assert (await js.stream_info(subjects.COMMANDS_STREAM)).config.retention == RetentionPolicy.LIMITS
        await asyncio.to_thread(worker.start)
        await wait_until(lambda: len(answers) >= 5, timeout=30)
        assert [a["command_id"] for a in answers] == sent, worker.log_text()[-2000:]
        assert {a["data"]["status"] for a in answers} == {"memory_saved_successfully"}
        ids = [a["data"]["memory_id"] for a in answers]
        assert ids == sorted(ids)  # applied in the order they were sent
        info = await js.stream_info(subjects.COMMANDS_STREAM)
        assert info.config.retention == RetentionPolicy.LIMITS
        await bot.close()
        await old.close()
    finally:
        if worker is not None:
            await asyncio.to_thread(worker.stop)
        node.stop()
        node.kill()
