"""The subscriber of memory.result.*.*: a command's stored result, or with a request asking
for it (contracts/lookup.py) what became of the command."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
from nats.aio.msg import Msg

from contracts import subjects
from contracts.lookup import wants_outcome
from db.repository import MemoryRepository
from worker.consuming.lookup.outcomes import CommandOutcomes, lookup_key
from worker.services.stored import answer

log = structlog.get_logger("worker")


def result_lookup(repo: MemoryRepository, outcomes: CommandOutcomes) -> Callable[[Msg], Awaitable[None]]:
    async def on_lookup(msg: Msg) -> None:
        if not msg.reply:
            return
        try:
            workspace_token, command_token = subjects.parse_result_lookup(msg.subject)
            if wants_outcome(msg.data):  # the richer answer; an empty request keeps the original one
                await msg.respond(await outcomes.describe(workspace_token, command_token))
                return
            key = lookup_key(command_token, workspace_token)
            stored = None if key is None else await repo.stored_command(*key)
            reply = answer(stored).result if stored is not None else b"null"
        except Exception as exc:  # a lookup must never take the worker down; the asker retries
            log.warning("result_lookup_failed", subject=msg.subject, error=repr(exc))
            return
        await msg.respond(reply)

    return on_lookup
