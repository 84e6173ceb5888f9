"""The subscriber of memory.result.*.*: a command's stored result, or with a request asking
for it (contracts/lookup.py) what became of the command.

The answer goes to the request's reply subject, which the requester chose and NATS never
checks: it is held to the rule of every answer (contracts/subjects.py, may_answer: under
REPLY_SUBJECT_PREFIXES, the account's bot's inbox), or the worker, with rights no bot has,
would publish its answer as a JetStream API request, an event or a dead letter (issue 35)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
from nats.aio.msg import Msg

from contracts import subjects
from contracts.lookup import wants_outcome
from db.repository import MemoryRepository
from worker.consuming import metrics
from worker.consuming.lookup.outcomes import CommandOutcomes, lookup_key
from worker.services.stored import answer

log = structlog.get_logger("worker")


def result_lookup(repo: MemoryRepository, outcomes: CommandOutcomes) -> Callable[[Msg], Awaitable[None]]:
    reply_prefixes = outcomes.reply_prefixes

    async def on_lookup(msg: Msg) -> None:
        if not msg.reply:
            return
        if not subjects.may_answer(msg.reply, reply_prefixes):
            # Dropped unanswered, never looked up; the log names where, never what was asked.
            metrics.LOOKUPS_REFUSED.inc()
            log.warning("result_lookup_refused", subject=msg.subject[:subjects.REPLY_SUBJECT_MAX],
                        reply_subject=msg.reply[:subjects.REPLY_SUBJECT_MAX], allowed=list(reply_prefixes))
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
