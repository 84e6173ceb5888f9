"""NATS helpers for the e2e suite: commands as a bot builds them, a reply inbox, stream reads."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts import subjects
from tests.conftest import unique  # noqa: F401  (re-exported for the tests)
from tests.support.commands import BOT_ID, command_payload, create_fields  # noqa: F401  (re-exported)

RAG = {"rag_available": True, "embedding_model": "m", "embedding_credentials": True}


def encode(obj: Any) -> bytes:
    return msgspec.json.encode(obj)


@dataclass
class Inbox:
    """One subscription collecting raw replies by reply subject."""

    nc: NatsClient
    prefix: str = field(default_factory=lambda: f"_INBOX.e2e.{uuid.uuid4().hex}")
    replies: dict[str, list[bytes]] = field(default_factory=dict)

    async def start(self) -> Inbox:
        self._changed = asyncio.Condition()
        self._sub = await self.nc.subscribe(f"{self.prefix}.*", cb=self._on_reply)
        return self

    async def stop(self) -> None:
        await self._sub.unsubscribe()

    async def _on_reply(self, msg: Msg) -> None:
        async with self._changed:
            self.replies.setdefault(msg.subject, []).append(msg.data)
            self._changed.notify_all()

    def subject(self, command_id: str) -> str:
        return f"{self.prefix}.{command_id}"

    async def wait_for(self, reply_subjects: list[str], timeout: float = 20.0) -> dict[str, bytes]:
        """The first reply of each subject; fails listing what is missing when time runs out."""
        async def arrived() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: all(s in self.replies for s in reply_subjects))
        try:
            await asyncio.wait_for(arrived(), timeout)
        except TimeoutError:
            missing = [s for s in reply_subjects if s not in self.replies]
            raise AssertionError(f"{len(missing)} of {len(reply_subjects)} replies missing after {timeout}s, "
                                 f"e.g. {missing[:3]}") from None
        return {s: self.replies[s][0] for s in reply_subjects}


async def publish_command(nc: NatsClient, kind: str, workspace_id: str, payload: bytes, *, msg_id: str):
    """Publish to memory.<kind>.<workspace> as a bot does (Nats-Msg-Id set); returns the PubAck."""
    return await nc.jetstream().publish(subjects.command_subject(kind, workspace_id), payload,
                                        headers={"Nats-Msg-Id": msg_id}, stream=subjects.COMMANDS_STREAM)


@dataclass(frozen=True)
class StoredMsg:
    subject: str
    seq: int
    headers: dict[str, str]
    data: bytes
    stored_at: datetime | None = None  # when the stream stored it

    @property
    def msg_id(self) -> str | None:
        return self.headers.get("Nats-Msg-Id")

    def json(self) -> Any:
        return msgspec.json.decode(self.data)


async def read_stream(nc: NatsClient, stream: str, filter_subjects: list[str],
                      timeout: float = 10.0) -> list[StoredMsg]:
    """Every message stored so far in `stream` on these subjects, in stream order.

    An ephemeral pull consumer (deliver all) counts what matches when it is created and fetches
    exactly that many, so the read is complete without waiting for silence.
    """
    js = nc.jetstream()
    name = f"e2e_{uuid.uuid4().hex}"
    await js.add_consumer(stream, ConsumerConfig(
        name=name, filter_subjects=filter_subjects, deliver_policy=DeliverPolicy.ALL,
        ack_policy=AckPolicy.EXPLICIT, inactive_threshold=30.0,
    ))
    try:
        pending = (await js.consumer_info(stream, name)).num_pending
        out: list[StoredMsg] = []
        if pending:
            sub = await js.pull_subscribe_bind(consumer=name, stream=stream)
            try:
                deadline = asyncio.get_running_loop().time() + timeout
                while len(out) < pending:
                    left = deadline - asyncio.get_running_loop().time()
                    if left <= 0:
                        raise AssertionError(f"read {len(out)} of {pending} messages of {stream} {filter_subjects}")
                    for msg in await sub.fetch(batch=pending - len(out), timeout=left):
                        out.append(StoredMsg(msg.subject, msg.metadata.sequence.stream, dict(msg.headers or {}),
                                             msg.data, msg.metadata.timestamp))
                        await msg.ack()
            finally:
                await sub.unsubscribe()
        return sorted(out, key=lambda m: m.seq)
    finally:
        await js.delete_consumer(stream, name)


async def commands_purged(nc: NatsClient, workspace_id: str) -> bool:
    """Is none of the workspace's commands left in MEMORY_COMMANDS (the retention loop purged
    what was acknowledged)?"""
    token = subjects.encode_token(workspace_id)
    try:
        await nc.jetstream().get_msg(subjects.COMMANDS_STREAM, 1, subject=subjects.partitioned_workspace_filter(token),
                                     next=True)
    except Exception:  # NotFoundError: none of the workspace's commands is left
        return True
    return False
