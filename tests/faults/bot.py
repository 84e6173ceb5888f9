"""The bot of a fault run, and the history it records: every command it sent, when,
whether and when JetStream acknowledged it, and every answer that came back.

It imports nothing from the worker or the contracts package: the commands are written
from the wire contract (docs/design.md, section 3) by hand, in tests/support/commands.py (which
imports neither), so that a bug shared by the worker's encoders and this bot cannot hide itself.

It holds one connection to each NATS node: a publish that fails on one (a node cut off,
paused, killed, or with a full disk) is tried again on the next, under the same
Nats-Msg-Id, as a bot with a pool of connections would, until acknowledged or until
`give_up_s`. Each workspace's commands go one after the other (the next once the previous
is acknowledged), so the publish order per workspace is the index order.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from dataclasses import dataclass, field

import nats
import nats.errors

from tests.support.commands import create_bytes, create_fields

STREAM = "MEMORY_COMMANDS"
REPLY_PREFIX = "_INBOX.bot.tomori.faults"
BOT_USER_ID = "990000000000000001"
LINEAGE = 7


@dataclass
class Sent:
    """One command as the bot saw it."""

    index: int
    command_id: str
    workspace_id: str
    content: str
    sent_at: float
    acked_at: float | None = None
    seq: int | None = None
    duplicate_ack: bool = False
    failed_publishes: int = 0
    gave_up: str | None = None
    replies: list[tuple[float, bytes]] = field(default_factory=list)

    @property
    def subject(self) -> str:
        return f"memory.create.{self.workspace_id}"

    def payload(self) -> bytes:
        return create_bytes(create_fields(self.workspace_id, self.content, lineage_id=LINEAGE, bot_user_id=BOT_USER_ID),
                            command_id=self.command_id, reply_to=f"{REPLY_PREFIX}.{self.command_id}",
                            issued_at="2026-01-01T00:00:00+00:00")


class Bot:
    def __init__(self, urls: list[str], user: str, password: str, *, per_workspace: int, lanes: int,
                 pace_s: float, give_up_s: float = 150.0) -> None:
        self.urls = urls
        self.user, self.password = user, password
        self.per_workspace = per_workspace
        self.lanes = lanes
        self.pace_s = pace_s
        self.give_up_s = give_up_s
        self.run = uuid.uuid4().hex[:6]
        self.history: list[Sent] = []
        self._by_id: dict[str, Sent] = {}
        self._counter = itertools.count()
        self._workspaces = itertools.count()
        self._conns: list[nats.NATS] = []
        self._next_conn = 0
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self.connection_errors = 0

    async def start(self) -> Bot:
        for i, url in enumerate(self.urls):
            others = [u for u in self.urls if u != url]

            async def error_cb(exc: Exception) -> None:
                self.connection_errors += 1

            # Pings every 2 s: a connection to a node that went away is noticed in seconds
            # (nats-py's default is two minutes), and the bot moves on to the other nodes.
            nc = await nats.connect([url, *others], user=self.user, password=self.password,
                                    inbox_prefix="_INBOX.bot.tomori", dont_randomize=True,
                                    name=f"fault-bot-{i}", ping_interval=2, max_outstanding_pings=2,
                                    max_reconnect_attempts=-1, reconnect_time_wait=0.5, connect_timeout=2,
                                    error_cb=error_cb)
            await nc.subscribe(f"{REPLY_PREFIX}.*", cb=self._on_reply)
            self._conns.append(nc)
        return self

    async def _on_reply(self, msg) -> None:
        sent = self._by_id.get(msg.subject.rsplit(".", 1)[1])
        if sent is not None:
            sent.replies.append((time.monotonic(), msg.data))

    def _new(self, workspace_id: str) -> Sent:
        i = next(self._counter)
        cid = f"f-{self.run}-{i:06d}"
        sent = Sent(i, cid, workspace_id, f"fault note {cid}", time.monotonic())
        self.history.append(sent)
        self._by_id[cid] = sent
        return sent

    async def publish(self, sent: Sent) -> None:
        payload = sent.payload()
        deadline = time.monotonic() + self.give_up_s
        while True:
            nc = self._conns[self._next_conn % len(self._conns)]
            try:
                ack = await nc.jetstream().publish(sent.subject, payload, headers={"Nats-Msg-Id": sent.command_id},
                                                   stream=STREAM, timeout=2.0)
                sent.acked_at, sent.seq, sent.duplicate_ack = time.monotonic(), ack.seq, bool(ack.duplicate)
                return
            except (nats.errors.Error, TimeoutError, OSError) as exc:
                sent.failed_publishes += 1
                self._next_conn += 1  # the next node
                if time.monotonic() > deadline:
                    sent.gave_up = repr(exc)
                    return
                await asyncio.sleep(0.1)

    async def _lane(self) -> None:
        while not self._stop.is_set():
            workspace = f"95{self.run_number():010d}{next(self._workspaces):06d}"
            for _ in range(self.per_workspace):
                if self._stop.is_set():
                    return
                await self.publish(self._new(workspace))
                try:
                    await asyncio.wait_for(self._stop.wait(), self.pace_s)
                except TimeoutError:
                    pass

    def run_number(self) -> int:
        return int(self.run, 16) % 10**10

    def start_load(self) -> None:
        self._tasks = [asyncio.create_task(self._lane()) for _ in range(self.lanes)]

    async def stop_load(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)

    async def probe(self, timeout_s: float) -> float | None:
        """Send fresh commands (to a workspace of their own) until one is answered; returns
        when the first answer came, or None after timeout_s."""
        deadline = time.monotonic() + timeout_s
        workspace = f"96{self.run_number():010d}{next(self._workspaces):06d}"
        while time.monotonic() < deadline:
            sent = self._new(workspace)
            attempt = asyncio.create_task(self.publish(sent))
            answered = time.monotonic() + 1.0
            while time.monotonic() < answered and not sent.replies:
                await asyncio.sleep(0.02)
            if sent.replies:
                await attempt
                return sent.replies[0][0]
            await attempt
            if sent.replies:
                return sent.replies[0][0]
        return None

    async def lookup(self, sent: Sent) -> bytes | None:
        """The worker's result lookup (docs/design.md, section 3.1), on any node that answers."""
        for nc in self._conns:
            try:
                reply = await nc.request(f"memory.result.{sent.workspace_id}.{sent.command_id}", b"", timeout=2.0)
            except (nats.errors.Error, TimeoutError):
                continue
            return reply.data
        return None

    async def close(self) -> None:
        for nc in self._conns:
            try:
                await nc.close()
            except Exception:
                pass
