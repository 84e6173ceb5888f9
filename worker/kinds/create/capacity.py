"""The capacity rule's parts that run before the owner lock (docs/design.md, section 5).

A create's save is decided in two places. Here, with no rows: whether a save at the cap may
replace a row at all (`eviction_blockers`, once per create, into the SavePlan) and the lineage
no automatic save may touch. Under the lock, where the owner's rows are: memory_save_decide()
(db/functions/memory_save_decide.sql) counts, picks the victim in its one eviction order and
names a SaveOutcome, which memory_create_batch() applies. That half lives only there, in SQL, and
tests/integration/test_capacity_conformance.py holds it to one table of cases: change the
rule there and the table's expectations together.
"""

from __future__ import annotations

from contracts.kinds.create import Retrieval
from worker.domain.workspace import Workspace
from worker.kinds.create.outcome import EvictionBlocker

__all__ = [
    "eviction_blockers",
]


def _embedding_model_set(retrieval: Retrieval) -> bool:
    return bool(retrieval.embedding_model and retrieval.embedding_model.strip())


def eviction_blockers(workspace: Workspace, retrieval: Retrieval) -> tuple[EvictionBlocker, ...]:
    """What keeps a save at the cap from replacing a row, in order; empty: a dormant row may go.

    Forgetting is only safe when memories are retrieved by relevance: without retrieval the
    model sees every memory, and which ones are "unused" means nothing.
    """
    found: list[EvictionBlocker] = []
    if not workspace.memory_decay_enabled:
        found.append("decay_off")
    if not retrieval.rag_available:
        found.append("retrieval_unavailable")
    if not retrieval.embedding_credentials:
        found.append("no_embedding_credentials")
    if not _embedding_model_set(retrieval):
        found.append("no_embedding_model")
    return tuple(found)
