"""The capacity rule's part that runs before the owner lock (worker/kinds/create/capacity.py): what
keeps a save at the cap from replacing a row. The part under the lock is memory_create_batch()'s,
held to its case table in tests/integration/test_capacity_conformance.py."""

from __future__ import annotations

import pytest

from contracts.kinds.create import Retrieval
from worker.domain.workspace import Workspace
from worker.kinds.create.capacity import eviction_blockers

READY = Retrieval(rag_available=True, embedding_model="text-embedding-3-small", embedding_credentials=True)
DECAY_ON = Workspace(memory_decay_enabled=True)


def test_eviction_is_permitted_when_every_prerequisite_holds() -> None:
    assert eviction_blockers(DECAY_ON, READY) == ()


@pytest.mark.parametrize(
    ("workspace", "retrieval", "blocker"),
    [
        (Workspace(), READY, "decay_off"),
        (DECAY_ON, Retrieval(embedding_model="m", embedding_credentials=True), "retrieval_unavailable"),
        (DECAY_ON, Retrieval(rag_available=True, embedding_model="m"), "no_embedding_credentials"),
        (DECAY_ON, Retrieval(rag_available=True, embedding_credentials=True), "no_embedding_model"),
        (DECAY_ON, Retrieval(rag_available=True, embedding_model="", embedding_credentials=True), "no_embedding_model"),
        (DECAY_ON, Retrieval(rag_available=True, embedding_model="  ", embedding_credentials=True),
         "no_embedding_model"),
    ],
)
def test_eviction_is_blocked_by_what_is_missing(workspace: Workspace, retrieval: Retrieval, blocker: str) -> None:
    assert eviction_blockers(workspace, retrieval) == (blocker,)


def test_every_missing_prerequisite_blocks_eviction_in_order() -> None:
    assert eviction_blockers(Workspace(), Retrieval()) == (
        "decay_off", "retrieval_unavailable", "no_embedding_credentials", "no_embedding_model")
