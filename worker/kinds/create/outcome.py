"""How a create's save ends under the owner lock, and what keeps a save at the cap from replacing a row."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class SaveOutcome(StrEnum):
    """How a create's save ends under the owner lock; the same labels are the SQL enum
    memory_worker.save_outcome. memory_create_batch() names one for each save and stores it in
    the save's `SaveSettled`; worker/kinds/create/rendering.py renders each."""

    SAVED = "saved"  # below the cap: inserted
    SAVED_WITH_EVICTION = "saved_with_eviction"  # at the cap: one dormant row replaced
    AT_CAP = "at_cap"  # at the cap, and nothing may or can be replaced
    OVER_CAP = "over_cap"  # above the cap (it was lowered): never replaces
    PRIVACY_PARTIAL = "privacy_partial"  # the user's privacy_level, read under the lock, is 1
    PRIVACY_FULL = "privacy_full"  # any other level but 0, or the users row is gone (fails closed)
    HOST_PROTECTED = "host_protected"  # a proxy identity's host protects it, read under the lock


# What keeps a save at the cap from replacing a dormant row (worker/kinds/create/capacity.py).
EvictionBlocker = Literal["decay_off", "retrieval_unavailable", "no_embedding_credentials", "no_embedding_model"]
