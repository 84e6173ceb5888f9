"""NATS helpers for the e2e suite: commands as a bot builds them, a reply inbox, stream reads."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts import subjects
from tests.conftest import unique  # noqa: F401  (re-exported for the tests)

BOT_ID = "990000000000000001"
RAG = {"rag_available": True, "embedding_model": "m", "embedding_credentials": True}


def create_fields(workspace_id: str, content: Any = "likes tea", *, scope: Any = "server_wide",
                  target: str | None = None, lineage_id: int = 7, persona_id: int = 1,
                  member_matches: list[dict] | None = None, participants: list[dict] | None = None,
                  retrieval: dict | None = None, tool_args: Any = None, is_dm: bool = False,
                  **extra: Any) -> dict[str, Any]:
    """The fields of a memory.create, for MemoryClient.create / new_create."""
    if tool_args is None:
        tool_args = {"memory_content": content, "memory_scope": scope}
        if target is not None:
            tool_args["target_user"] = target
    fields = {
        "workspace_id": workspace_id,
        "tool_args": tool_args,
        "persona": {"id": persona_id, "lineage_id": lineage_id, "name": "Tomori"},
        "bot_user_id": BOT_ID,
        "triggerer": {"id": "110000000000000001", "name": "someone"},
        "channel": {"id": "120000000000000001", "is_dm": is_dm, "is_private": False,
                    "everyone_can_view": True, "url": None},
        "participants": participants or [],
        "member_matches": member_matches or [],
        "retrieval": retrieval or {"rag_available": False, "embedding_model": None,
                                   "embedding_credentials": False},
    }
    fields.update(extra)
    return fields


def command_payload(fields: dict[str, Any], *, command_id: str, reply_to: str | None) -> dict[str, Any]:
    """A full command as a JSON-ready dict."""
    return {"command_id": command_id, "issued_at": datetime.now(UTC).isoformat(), "reply_to": reply_to,
            **fields}


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
