"""What the database knows that a model tool's decision needs (the create's and the update's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from worker.domain.people import KnownUser, ProxyIdentity
from worker.domain.workspace import Workspace


@dataclass(frozen=True, slots=True)
class CreateContext:
    """What the database knows that the create decision needs, read at processing time."""

    workspace: Workspace = field(default_factory=Workspace)
    # users rows by Discord id, for the ids that lookup_ids() named and that have a row
    users: Mapping[str, KnownUser] = field(default_factory=dict)
    # proxy identities among the looked-up ids, by synthetic id (absent: no identity row)
    proxies: Mapping[str, ProxyIdentity] = field(default_factory=dict)
