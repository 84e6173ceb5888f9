"""The owner of memories as the caches see it: which bot-side cache entry a change makes stale."""

from __future__ import annotations

from contracts.result_parts import CacheKey
from worker.domain.scope import Scope

__all__ = ["GLOBAL_LINEAGE", "cache_key"]

# Lineage 0 holds a user's global memories (bio seeds among them): never replaced automatically.
GLOBAL_LINEAGE = 0


def cache_key(scope: Scope, owner_id: str) -> CacheKey:
    """The cache entry holding an owner's memories: a workspace's state for server memories
    (`owner_id` is the workspace id), a user's entry for personal ones (their Discord id)."""
    return CacheKey("tomori_state", owner_id) if scope == "server" else CacheKey("user", owner_id)
