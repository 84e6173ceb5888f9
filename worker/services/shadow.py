"""Shadow mode (docs/design.md, section 3.6): a command's dry run, and memory.shadow, the bot's
report of its own write, paired with the dry run and compared (worker/domain/shadow.py)."""

from __future__ import annotations

from typing import Any

from contracts.codec import encode
from contracts.commands import Envelope, ShadowReport
from contracts.results import ShadowData, ShadowDifference, ShadowOutcome, ShadowResult
from db.repository import MemoryRepository
from worker.domain.shadow import compare
from worker.services.base import Answer, CommandService, Handled

# The one rule in which the worker differs from TomoriBot on purpose (docs/tomoribot.md): a
# dry run the secret guard refused is marked so, and the shadow report says its differences
# are intended.
INTENDED_SECRET_GUARD = "secret_guard"


class DryRunning:
    """A kind's service, with its dry runs recorded for the shadow report.

    The service runs a dry run on its one path (a DryTx, or its batch's `dry` op: nothing is
    written, the command_id is not used up); here its answer is kept beside the command id
    (the one row a dry run writes) and its events are dropped, never published."""

    def __init__(self, kind: str, service: CommandService[Any], repo: MemoryRepository) -> None:
        self._kind = kind
        self._service = service
        self._repo = repo

    async def run(self, cmd: Envelope, delivery: int | None = None) -> Handled:
        if not cmd.dry_run:
            return await self._service.run(cmd, delivery)
        handled = await self._service.run(cmd, None)  # no delivery: a dry run never republishes
        await self._repo.shadow_pairs.record_dry_run(
            cmd.command_id, self._kind, cmd.workspace_id, handled.answer.status, handled.answer.result,
            INTENDED_SECRET_GUARD if handled.answer.refused_credential is not None else None)
        return Handled(handled.answer, [], duplicate=handled.duplicate, dry=True)

    def failure_result(self, cmd: Envelope) -> bytes:
        return self._service.failure_result(cmd)

    async def aclose(self, timeout: float) -> None:
        close = getattr(self._service, "aclose", None)
        if close is not None:
            await close(timeout)


class ShadowReportService:
    """memory.shadow: the bot's outcome stored beside its dry run, with how the two compare.
    Nothing else is written, and no event published; a repeat of a report compares again and
    stores the same. A dry run of a report compares and stores nothing."""

    def __init__(self, repo: MemoryRepository) -> None:
        self._repo = repo

    async def run(self, cmd: ShadowReport, delivery: int | None = None) -> Handled:
        async with self._repo.owner_transaction([]) as tx:
            pairs = tx.shadow_pairs
            dry = await pairs.dry_run_of(cmd.shadowed_id, cmd.workspace_id, lock=not cmd.dry_run)
            bot_status = _status(cmd.result)
            outcome: ShadowOutcome
            if dry is not None and dry.kind != cmd.kind:
                outcome, differences = "differed", [ShadowDifference(field="kind", worker=dry.kind, bot=cmd.kind)]
            else:
                outcome, differences = compare(None if dry is None else dry.dry_result, timed_out=cmd.timed_out,
                                               bot_result=cmd.result, bot_error=cmd.error)
            if not cmd.dry_run:
                await pairs.record_report(
                    cmd.shadowed_id, cmd.kind, cmd.workspace_id, bot_status=bot_status,
                    bot_result=None if cmd.result is None else encode(cmd.result), bot_error=cmd.error,
                    outcome=outcome, differences=encode(differences))
        result = ShadowResult(command_id=cmd.command_id, success=True,
                              data=ShadowData(status="recorded", outcome=outcome, differences=differences))
        intended = dry is not None and dry.intended is not None
        return Handled(Answer(encode(result), "recorded", shadowed=(cmd.kind, outcome, intended)), [], duplicate=False,
                       dry=cmd.dry_run)

    def failure_result(self, cmd: ShadowReport) -> bytes:
        return encode(ShadowResult(command_id=cmd.command_id, success=False,
                                   data=ShadowData(status="failed")))


def _status(result: dict[str, Any] | None) -> str | None:
    data = None if result is None else result.get("data")
    status = data.get("status") if isinstance(data, dict) else None
    return status if isinstance(status, str) else None



