"""The arguments of the SQL functions that take one JSON document, as db/repository.py and
db/transaction.py encode them.

Each Struct is what one function reads with `p ->> 'key'` / `p -> 'key'`.
tests/unit/test_sql_arguments.py names the Struct that feeds each function and reads the
function's file in db/functions/: it fails when the SQL reads a key its Struct lacks, and when
a Struct has a field the SQL never reads, so a key renamed on either side is caught before a
create reads NULL, and nothing is sent that nobody reads.
"""

from __future__ import annotations

import msgspec

from worker.domain.scope import Scope
from worker.kinds.create.record import CreateDecision, SavePlan

__all__ = [
    "CreateBatchRequest",
    "CreateContextRequest",
    "CreateOp",
    "ManualContextRequest",
    "UpdateTargetRequest",
]


class CreateContextRequest(msgspec.Struct, frozen=True):
    """One element of memory_create_contexts()'s array: memory_create_context()'s arguments."""

    command_id: str
    workspace_id: str
    ids: list[str]
    lineage_id: int


class CreateOp(msgspec.Struct, frozen=True):
    """One create in memory_create_batch(): its decision, stored as it is here
    (processed_commands.decision), and carried out when it is a save."""

    command_id: str
    workspace_id: str
    decision: CreateDecision
    # The MEMORY_COMMANDS stream sequence of the delivery applying the command, stored with
    # it (worker/services/stored.py, republishes()); None without a delivery.
    applied_by: int | None = None

    @property
    def owner(self) -> tuple[str, str] | None:
        """(scope, owner id): the lock a save takes; None for a refusal, which writes nothing else."""
        plan = self.decision
        return (plan.scope, plan.owner_id) if isinstance(plan, SavePlan) else None


class CreateBatchRequest(msgspec.Struct, frozen=True):
    """The argument of memory_create_batch(), and of memory_create_dry_batch() for dry runs: the
    owners to lock first, in lock order, then the ops."""

    owners: list[tuple[str, str]]
    ops: list[CreateOp]


class ManualContextRequest(msgspec.Struct, frozen=True):
    """The argument of memory_manual_context()."""

    scope: Scope
    workspace_id: str
    owner_id: str
    actor_id: str
    identity_id: str | None
    lineage_id: int
    memory_id: int | None
    want_existing: bool
    want_lineage_rows: bool = False


class UpdateTargetRequest(msgspec.Struct, frozen=True):
    """The argument of memory_update_target(): the memory a memory.update plan names, and whose."""

    scope: Scope
    workspace_id: str
    owner_id: str  # the workspace's Discord id (server) or the target's (personal)
    user_id: int | None  # the target's users.user_id (personal)
    memory_id: int
    lineage_id: int
    proxy: bool  # read the identity's hosts too
