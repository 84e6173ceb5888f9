"""The handler's failure paths when NATS is gone as well: every nak goes through one guarded
hand-back, so an outage while settling is logged `nak_failed` and the command handed back
(True), never raised to the partition (which would log `handler_crashed` with a traceback).
No server here: what is tested is the handler's own branching, with a broker that refuses
every call; tests/e2e and tests/chaos drive the same paths against real servers."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import asyncpg
import nats.errors
from structlog.testing import capture_logs

from contracts.registry import COMMAND_TYPES
from tests.support.commands import create_bytes, create_fields
from worker.consuming.intake.handlers import CommandHandler


async def _refused(*args, **kwargs):
    raise nats.errors.ConnectionClosedError


class _Message(SimpleNamespace):
    async def nak(self, delay: float | None = None) -> None:
        self.naks.append(delay)
        raise nats.errors.ConnectionClosedError

    async def ack(self) -> None:
        raise nats.errors.ConnectionClosedError


def _message(subject: str, data: bytes) -> _Message:
    return _Message(subject=subject, data=data, naks=[], is_acked=False,
                    metadata=SimpleNamespace(num_delivered=1, sequence=SimpleNamespace(stream=7),
                                             timestamp=datetime.now(UTC)))


class _FailingService:
    async def run(self, cmd, delivery=None):
        raise asyncpg.DataError("value out of range")  # permanent: given up at once

    def failure_result(self, cmd) -> bytes:
        return b"{}"


def _handler() -> CommandHandler:
    gone = SimpleNamespace(publish=_refused, max_payload=1 << 20)
    services = {kind: _FailingService() for kind in COMMAND_TYPES}
    return CommandHandler(gone, gone, None, services, _refused, max_deliver=3, reply_prefixes=("_INBOX.",))


async def test_an_invalid_command_whose_dead_letter_and_nak_fail_is_handed_back_not_raised():
    msg = _message("memory.create.*", b"{}")  # unplaced: invalid at once
    with capture_logs() as logs:
        assert await _handler()(msg) is True
    events = [entry["event"] for entry in logs]
    assert events == ["command_invalid_not_recorded", "nak_failed"]
    assert msg.naks == [1.0]  # delivery.after_invalid_not_recorded


async def test_a_give_up_whose_dead_letter_and_nak_fail_is_handed_back_not_raised():
    data = create_bytes(create_fields("ws"), command_id="c-1", reply_to="_INBOX.x")
    msg = _message("cmd.0.create.ws", data)
    with capture_logs() as logs:
        assert await _handler()(msg) is True
    assert [entry["event"] for entry in logs] == ["dead_letter_failed", "nak_failed"]
    assert msg.naks == [0.5]  # delivery.after_give_up_failed(1)
