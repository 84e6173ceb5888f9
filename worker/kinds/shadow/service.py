"""Shadow mode (docs/design.md, "Dry runs and shadow mode"): a command's dry run, and memory.shadow, the bot's
report of its own write, paired with the dry run and compared (worker/kinds/shadow/comparison.py)."""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.codec import encode
from contracts.envelope import Envelope
from contracts.kinds.shadow import ShadowData, ShadowDifference, ShadowOutcome, ShadowReport, ShadowResult
from db.repository import MemoryRepository
from db.shadow_pairs import ShadowPairRow
from db.transaction import Tx
from worker.kinds.create import texts
from worker.kinds.shadow.comparison import compare, insert_window, kept_differences, kept_result, withheld
from worker.services.base import Answer, CommandService, Handled, Wiring

# The one rule in which the worker differs from TomoriBot on purpose (docs/tomoribot.md): a
# dry run the secret guard refused is marked so, and the shadow report says its differences
# are intended.
INTENDED_SECRET_GUARD = "secret_guard"


class DryRunning:
    """A kind's service, with its dry runs recorded for the shadow report.

    The service runs a dry run on its one path (in a read-only transaction, whose effects the
    applier foretells instead of writing, or a create's dry batch, decided and never applied: nothing is written, the
    command_id is not used up); here, after that transaction, its answer is kept beside the
    command id (the one row a dry run writes, in a statement of its own), a credential in it
    as its kind alone, with the owner whose memories it would have created; its events are
    dropped, never published."""

    def __init__(self, kind: str, service: CommandService[Any], repo: MemoryRepository) -> None:
        self._kind = kind
        self._service = service
        self._repo = repo

    async def run(self, cmd: Envelope, delivery: int | None = None) -> Handled:
        if not cmd.dry_run:
            return await self._service.run(cmd, delivery)
        handled = await self._service.run(cmd, None)  # no delivery: a dry run never republishes
        answer = handled.answer
        await self._repo.shadow_pairs.record_dry_run(
            cmd.command_id, self._kind, cmd.workspace_id, answer.status,
            encode(withheld(msgspec.json.decode(answer.result))),
            INTENDED_SECRET_GUARD if answer.refused_credential is not None else None, answer.created_for)
        return Handled(answer, [], duplicate=handled.duplicate, dry=True)

    def failure_result(self, cmd: Envelope) -> bytes:
        return self._service.failure_result(cmd)

    async def aclose(self, timeout: float) -> None:
        close = getattr(self._service, "aclose", None)
        if close is not None:
            await close(timeout)


# A pair is one workspace's and one bot's: a report naming another's dry run is refused, as a
# command_id used by another workspace or bot is (worker/services/stored.py, seen_before).
FOREIGN_PAIR = ("shadowed_id names a dry run of another workspace or another bot: report from the workspace"
                " and bot that asked for the dry run, and give every command a fresh, unique id")
# The longest status a pair keeps of the bot's; a longer one is kept as a mark of its size.
KEPT_STATUS_BYTES = 200


class ShadowReportService:
    """memory.shadow: the bot's outcome stored beside its dry run, with how the two compare.
    Nothing else is written, and no event published; a repeat of a report compares again and
    stores the same. A dry run of a report compares and stores nothing. What is kept of the
    bot's side holds a credential as its kind alone, and is bounded (worker/kinds/shadow/comparison.py)."""

    def __init__(self, repo: MemoryRepository) -> None:
        self._repo = repo

    async def run(self, cmd: ShadowReport, delivery: int | None = None) -> Handled:
        bot_result = None if cmd.result is None else withheld(cmd.result)
        bot_error = None if cmd.error is None else withheld(cmd.error)
        async with self._repo.owner_transaction([], read_only=cmd.dry_run) as tx:
            pairs = tx.shadow_pairs
            pair = await pairs.pair_of(cmd.shadowed_id, lock=not tx.read_only)
            if pair is not None and (pair.tenant, pair.workspace_id) != (tx.tenant, cmd.workspace_id):
                return _refused(cmd, FOREIGN_PAIR)
            outcome, found = await _compared(tx, cmd, pair, bot_result, bot_error)
            differences = kept_differences(found)
            if not tx.read_only:
                stored = await pairs.record_report(
                    cmd.shadowed_id, cmd.kind, cmd.workspace_id, bot_status=_status(bot_result),
                    bot_result=None if bot_result is None else encode(kept_result(bot_result)), bot_error=bot_error,
                    outcome=outcome, differences=encode(differences))
                if not stored:  # another's pair, stored since it was read
                    return _refused(cmd, FOREIGN_PAIR)
        result = ShadowResult(command_id=cmd.command_id, success=True,
                              data=ShadowData(status="recorded", outcome=outcome, differences=differences))
        intended = pair is not None and pair.intended is not None
        return Handled(Answer(encode(result), "recorded", shadowed=(cmd.kind, outcome, intended)), [], duplicate=False,
                       dry=cmd.dry_run)

    def failure_result(self, cmd: ShadowReport) -> bytes:
        return encode(ShadowResult(command_id=cmd.command_id, success=False,
                                   data=ShadowData(status="failed")))


async def _compared(tx: Tx, cmd: ShadowReport, pair: ShadowPairRow | None, bot_result: dict[str, Any] | None,
                    bot_error: str | None) -> tuple[ShadowOutcome, list[ShadowDifference]]:
    """The pair's outcome, fed with whether an insert of the dry run's owner came between (read
    under that owner's lock, so none of the worker's in flight is missed)."""
    if pair is not None and pair.kind != cmd.kind:
        return "differed", [ShadowDifference(field="kind", worker=pair.kind, bot=cmd.kind)]
    dry = None if pair is None else pair.dry_result
    between = False
    if dry is not None and bot_result is not None and pair is not None and pair.owner is not None:
        window = insert_window(dry, bot_result)
        if window is not None:
            await tx.lock_owners([pair.owner])
            between = await tx.shadow_pairs.inserted_between(pair.owner, *window)
    return compare(dry, timed_out=cmd.timed_out, bot_result=bot_result, bot_error=bot_error,
                   inserted_between=between)


def _refused(cmd: ShadowReport, reason: str) -> Handled:
    invalid = texts.invalid_command(cmd.command_id, reason)
    return Handled(Answer(encode(invalid), invalid.data.status), [], duplicate=False, dry=cmd.dry_run)


def _status(result: dict[str, Any] | None) -> str | None:
    data = None if result is None else result.get("data")
    status = data.get("status") if isinstance(data, dict) else None
    if not isinstance(status, str):
        return None
    return status if len(status.encode()) <= KEPT_STATUS_BYTES else f"<not kept: {len(status.encode())} bytes>"


def build(wiring: Wiring) -> ShadowReportService:
    """The shadow kind's service, as the service table (worker/consuming/app.py) makes it."""
    return ShadowReportService(wiring.repo)
