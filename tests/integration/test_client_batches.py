"""MemoryClient: commands sent at the same moment are stored as one JetStream atomic batch,
each exactly once, and nothing is lost when the server refuses a batch (real nats-server,
no worker: the stored commands are read back from the stream)."""

from __future__ import annotations

import asyncio

import nats
import pytest

from contracts import subjects
from worker.client.memory_client import MemoryClient, ResultTimeout
from worker.consuming.administration import streams
from worker.local.embedded import NatsServer

from ..conftest import unique


@pytest.fixture
async def nc(tmp_root):
    server = NatsServer(tmp_root / f"nats-{unique()}").start()
    client = await nats.connect(server.url)
    yield client
    await client.close()
    server.stop()


async def _stored(js) -> list[tuple[str, str | None]]:
    """(Nats-Msg-Id, Nats-Batch-Id) of every command in the stream, in stream order."""
    info = await js.stream_info(subjects.COMMANDS_STREAM)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(subjects.COMMANDS_STREAM, seq)
        headers = msg.headers or {}
        out.append((headers["Nats-Msg-Id"], headers.get("Nats-Batch-Id")))
    return out


async def _send_at_once(client: MemoryClient, ids: list[str]) -> None:
    """As a bot sends: each waits for its result. No worker runs here, so every send ends in
    ResultTimeout, after the client has acted on its acknowledgement: a command reported as a
    duplicate is looked up, then sent again under a derived id ("<id>:resend:...")."""
    results = await asyncio.gather(*(
        client.send_raw("create", f"ws-{i % 3}", b'{"n": %d}' % i, command_id=cid,
                        reply_to=client.reply_subject(), timeout=1.0)
        for i, cid in enumerate(ids)), return_exceptions=True)
    assert all(isinstance(r, ResultTimeout) for r in results), results


async def test_commands_sent_at_once_are_stored_as_one_atomic_batch(nc):
    js = nc.jetstream()
    await js.add_stream(streams.command_stream(4))
    ids = [unique(f"batched-{i}") for i in range(12)]

    async with MemoryClient(nc) as client:
        await _send_at_once(client, ids)

    stored = await _stored(js)
    assert sorted(cid for cid, _ in stored) == sorted(ids)  # each once, none taken for a duplicate
    assert len({batch for _, batch in stored}) == 1 and stored[0][1] is not None


async def test_a_batch_holding_a_command_already_stored_is_refused_and_each_command_is_stored_once(nc):
    js = nc.jetstream()
    await js.add_stream(streams.command_stream(4))
    ids = [unique(f"repeat-{i}") for i in range(8)]

    async with MemoryClient(nc) as client:
        await client.send_raw("create", "ws-0", b"{}", command_id=ids[3], reply_to=None)
        await _send_at_once(client, ids)

    stored = await _stored(js)
    # The refused batch stored nothing; one by one, the repeat was reported as a duplicate
    # and sent again under a derived id, as a lone repeat always is.
    assert all(batch is None for _, batch in stored)
    assert sorted(cid.split(":resend:")[0] for cid in [c for c, _ in stored]) == sorted([*ids, ids[3]])
    assert [c.split(":resend:")[0] for c, _ in stored if ":resend:" in c] == [ids[3]]


async def test_a_stream_that_takes_no_batches_still_gets_every_command(nc):
    """A command stream provisioned before batches were allowed: every command one by one."""
    js = nc.jetstream()
    config = streams.command_stream(4)
    config.allow_atomic = False
    await js.add_stream(config)
    ids = [unique(f"unbatched-{i}") for i in range(10)]

    async with MemoryClient(nc) as client:
        await _send_at_once(client, ids)

    stored = await _stored(js)
    assert sorted(cid for cid, _ in stored) == sorted(ids)
    assert all(batch is None for _, batch in stored)
