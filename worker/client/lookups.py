"""The result lookup, from the bot's side: what became of a command (contracts/lookup.py)."""

from __future__ import annotations

import msgspec
import nats.errors
from nats.aio.client import Client as NatsClient

from contracts import subjects
from contracts.lookup import OUTCOME_DECODER, CommandOutcome, OutcomeRequest

_OUTCOME_REQUEST = msgspec.json.encode(OutcomeRequest(answer="outcome"))


async def lookup_result(nc: NatsClient, workspace_id: str, command_id: str) -> bytes | None:
    """The worker's stored result for a command of this workspace, or None (not processed
    yet, dead-lettered, or no worker answering)."""
    try:
        reply = await nc.request(subjects.result_subject(workspace_id, command_id), b"", timeout=2.0)
    except (nats.errors.TimeoutError, nats.errors.NoRespondersError):
        return None
    return reply.data if reply.data and reply.data != b"null" else None


async def lookup_outcome(nc: NatsClient, workspace_id: str, command_id: str, *,
                         timeout: float = 2.0) -> CommandOutcome | None:
    """What became of a command of this workspace (contracts/lookup.py), or None when no
    worker answered. A worker that predates the outcome answers the bare result or null;
    that is read as processed or unknown."""
    try:
        reply = await nc.request(subjects.result_subject(workspace_id, command_id), _OUTCOME_REQUEST,
                                 timeout=timeout)
    except (nats.errors.TimeoutError, nats.errors.NoRespondersError):
        return None
    try:
        return OUTCOME_DECODER.decode(reply.data)
    except msgspec.ValidationError:
        legacy = msgspec.json.decode(reply.data)
        return CommandOutcome(command_id=command_id, workspace_id=workspace_id,
                              outcome="unknown" if legacy is None else "processed",
                              **({} if legacy is None else {"result": legacy}))
