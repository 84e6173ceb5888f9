"""What every command service gives the handler."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from contracts.commands import Envelope
from db.repository import OutboxRow


@dataclass(frozen=True, slots=True)
class Handled:
    """What the handler does after the database: publish `events`, then reply `result`."""

    result: bytes
    events: list[OutboxRow]
    duplicate: bool


class CommandService(Protocol):
    async def run(self, cmd: Envelope) -> Handled:
        """Apply the command once (the inbox answers repeats) and return what to publish."""

    def failure_result(self, cmd: Envelope) -> bytes:
        """The answer when the worker gives up on the command after its retries."""
