"""A worker whose NATS connection the server closes (issue 14): it exits non-zero at once with
a clear log line, /healthz says so first, and started again it answers commands.

The server closes the connection the way the issue found it: a message over `max_payload`.
The operator lowers the server's max_payload with a configuration reload while the worker
runs; the worker still has the limit the server announced when it connected, so it sends the
dead letter of an oversized command whole, and nats-server answers "maximum payload
violation" and closes the connection (nats-py then closes for good: no reconnect). Started
again, the worker learns the new limit and dead-letters the same command by reference.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import urllib.error
import urllib.request

import nats
import pytest

from contracts import subjects
from contracts.codec import encode
from tests.cluster.nats_deploy import NatsNode
from tests.conftest import WorkerProcess, clone_database, unique, worker_env
from tests.e2e.bus import wait_until
from tests.integration.helpers import server_save
from worker.embedded import LOOPBACK, free_port

LOWERED_MAX_PAYLOAD = 4096


def node_conf(port: int, store: str, max_payload: int | str) -> str:
    return f'listen: "{LOOPBACK}:{port}"\nmax_payload: {max_payload}\njetstream {{ store_dir: "{store}" }}\n'


def health(url: str) -> int | None:
    """The /healthz status code, or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


@pytest.fixture
async def node(tmp_path):
    port = free_port()
    conf = tmp_path / "nats.conf"
    conf.write_text(node_conf(port, str(tmp_path / "js"), "1MB"))
    server = NatsNode("closing", conf, dict(os.environ), port, tmp_path / "nats.log").start()
    yield server
    server.stop()


async def test_a_closed_connection_exits_non_zero_and_a_restart_answers_again(node, tmp_path, pg_server,
                                                                              template_db):
    metrics_port = free_port()
    worker = WorkerProcess(worker_env(node.url, await clone_database(pg_server, template_db), MEMORY_PARTITIONS="1",
                                      MAX_COMMAND_BYTES="1024", ACK_WAIT_SECONDS="20",
                                      METRICS_PORT=str(metrics_port)),
                           tmp_path / "worker.log")
    healthz = f"http://{LOOPBACK}:{metrics_port}/healthz"
    bot = await nats.connect(node.url)
    replies = await bot.subscribe("_INBOX.closed.*")
    try:
        await asyncio.to_thread(worker.start)
        assert health(healthz) == 200

        # The operator lowers max_payload; the worker keeps the limit it was told at connect.
        node.conf.write_text(node_conf(node.port, str(tmp_path / "js"), LOWERED_MAX_PAYLOAD))
        os.kill(node.proc.pid, signal.SIGHUP)
        await wait_until(lambda: "Reloaded" in node.log.read_text(), timeout=10)

        # Over MAX_COMMAND_BYTES, and whole with the Dlq-* headers over the lowered max_payload.
        ws = unique()
        base = len(encode(server_save(ws, "", reply_to="_INBOX.closed.big")))
        oversized = server_save(ws, "x" * (3900 - base), reply_to="_INBOX.closed.big")
        data = encode(oversized)
        assert len(data) == 3900
        await bot.jetstream().publish(subjects.command_subject("create", ws), data,
                                      headers={"Nats-Msg-Id": oversized.command_id})

        # The server closes the worker's connection: /healthz turns 503, then the process exits
        # non-zero with a log line that says why.
        await wait_until(lambda: health(healthz) != 200, timeout=10, interval=0.1)
        await wait_until(lambda: worker.proc.poll() is not None, timeout=15, interval=0.1)
        assert worker.proc.returncode == 3
        log = worker.log_text()
        assert "nats_connection_closed" in log and "worker_exiting" in log
        assert "maximum payload" in node.log.read_text().lower()

        # Its supervisor starts it again: the same command comes back and is dead-lettered by
        # reference (within the new limit), answered, and the next command is answered too.
        await asyncio.to_thread(worker.start)
        big = json.loads((await replies.next_msg(timeout=40)).data)
        assert big["command_id"] == oversized.command_id
        assert big["data"]["status"] == "memory_command_invalid"
        after = server_save(ws, "answered after the restart", reply_to="_INBOX.closed.after")
        await bot.jetstream().publish(subjects.command_subject("create", ws), encode(after),
                                      headers={"Nats-Msg-Id": after.command_id})
        answer = json.loads((await replies.next_msg(timeout=40)).data)
        assert answer["command_id"] == after.command_id
        assert answer["data"]["status"] == "memory_saved_successfully"
        assert health(healthz) == 200

        letter = await bot.jetstream().get_last_msg(subjects.DLQ_STREAM, f"dlq.memory.create.{ws}")
        assert letter.headers["Dlq-Payload"] == "excerpt"
        assert int(letter.headers["Dlq-Original-Size"]) == len(data)
        assert data.startswith(letter.data) and 0 < len(letter.data) < len(data)
        assert worker.proc.poll() is None
    finally:
        await bot.close()
        await asyncio.to_thread(worker.stop)
