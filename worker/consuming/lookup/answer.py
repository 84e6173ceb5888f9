"""The subscriber of memory.result.*.*: a command's stored result, or with a request asking
for it (contracts/lookup.py) what became of the command.

The answer goes to the request's reply subject, which the requester chose and NATS never
checks: it is held to the rule of every answer (contracts/subjects.py, may_answer: under
REPLY_SUBJECT_PREFIXES, the account's bot's inbox), or the worker, with rights no bot has,
would publish its answer as a JetStream API request, an event or a dead letter (issue 35)."""

from __future__ import annotations

import structlog
from nats.aio.msg import Msg

from contracts import subjects
from contracts.lookup import wants_outcome
from db.repository import MemoryRepository
from worker.consuming import metrics
from worker.consuming.lookup.outcomes import CommandOutcomes, lookup_key
from worker.consuming.lookup.scheduling import LookupLimits, LookupScheduler
from worker.services.stored import answer

log = structlog.get_logger("worker")


class ResultLookups:
    """The subscription's callback (`on_lookup`) only checks and hands over: the subscription
    runs its callbacks one at a time, so a lookup answered inside it would hold up every other."""

    def __init__(self, repo: MemoryRepository, outcomes: CommandOutcomes, limits: LookupLimits = LookupLimits()) -> None:
        self._repo = repo
        self._reply_prefixes = outcomes.reply_prefixes
        self._scheduler = LookupScheduler(self._stored_result, outcomes.describe_many, limits)

    def start(self) -> None:
        self._scheduler.start()

    async def aclose(self) -> None:
        await self._scheduler.aclose()

    async def on_lookup(self, msg: Msg) -> None:
        if not msg.reply:
            return
        if not subjects.may_answer(msg.reply, self._reply_prefixes):
            # Dropped unanswered, never looked up; the log names where, never what was asked.
            metrics.LOOKUPS_REFUSED.inc()
            log.warning("result_lookup_refused", subject=msg.subject[:subjects.REPLY_SUBJECT_MAX],
                        reply_subject=msg.reply[:subjects.REPLY_SUBJECT_MAX], allowed=list(self._reply_prefixes))
            return
        try:
            workspace_token, command_token = subjects.parse_result_lookup(msg.subject)
        except ValueError as exc:  # not a subscribed subject: nothing to answer
            log.warning("result_lookup_failed", subject=msg.subject[:subjects.REPLY_SUBJECT_MAX], error=repr(exc))
            return
        if wants_outcome(msg.data):  # the richer answer; an empty request keeps the original one
            self._scheduler.outcome(msg.subject, workspace_token, command_token, msg.respond)
        else:
            self._scheduler.plain(msg.subject, workspace_token, command_token, msg.respond)

    async def _stored_result(self, workspace_token: str, command_token: str) -> bytes:
        key = lookup_key(command_token, workspace_token)
        stored = None if key is None else await self._repo.stored_command(*key)
        return answer(stored).result if stored is not None else b"null"
