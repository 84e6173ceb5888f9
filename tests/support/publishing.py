"""A bot riding out an outage or a leader election (the chaos and cluster runs)."""

from __future__ import annotations

import asyncio

import nats.errors
from nats.js.api import PubAck

from contracts import subjects


async def publish_until_stored(js, subject: str, payload: bytes, msg_id: str, *,
                               give_up_after: float) -> tuple[PubAck, int]:
    """Publish a command as a bot rides out an outage or a leader election: again and again
    under the same Nats-Msg-Id (JetStream keeps one) until stored. Returns the ack and how
    many attempts failed."""
    deadline = asyncio.get_running_loop().time() + give_up_after
    failures = 0
    while True:
        try:
            ack = await js.publish(subject, payload, headers={"Nats-Msg-Id": msg_id},
                                   stream=subjects.COMMANDS_STREAM, timeout=2.0)
            return ack, failures
        except (nats.errors.Error, TimeoutError, OSError) as exc:
            failures += 1
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"publishing {msg_id} kept failing for {give_up_after}s: {exc!r}") from exc
            await asyncio.sleep(0.1)
