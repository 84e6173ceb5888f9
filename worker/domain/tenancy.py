"""Which bot a worker serves (its tenant), and what of the shared database that bot may touch.

Bots are kept apart by NATS accounts (deploy/nats/accounts.conf): each bot's account has its
own streams and its own worker, so a bot's commands reach only its worker. The database is
shared (two bots in one guild share its server row, its users, their privacy levels and the
blacklist), so the worker keeps two things apart there itself:

- lineages: a tenant's commands may name only its own lineages (TENANT_LINEAGES) and lineage 0
  (a user's global personal memories, which belong to the user, not to a bot);
- stored results: each inbox row carries the tenant that stored it (its `tenant` column,
  db/migrations/004_tenants.sql), so a repeat never takes another tenant's result or events
  for its own (worker/services/stored.py, seen_before), and a result lookup never finds one.

Pure functions: no I/O.
"""

from __future__ import annotations

from contracts.envelope import Envelope
from contracts.registry import GlobalOnly, spec_of
from worker.domain.owner import GLOBAL_LINEAGE


def foreign_lineage(cmd: Envelope, allowed: frozenset[int] | None) -> str | None:
    """Why the command may not run for this tenant, or None. `allowed` None: a worker without
    a tenant (one bot, or a deployment that keeps bots in one account) accepts every lineage.

    The lineage is the one the command's registry entry declares. Fails closed: a command of a
    type the registry does not know is refused, tenant or not, never run unchecked.
    """
    spec = spec_of(cmd)
    if spec is None:
        return (f"{type(cmd).__name__} is not a command kind this worker knows (contracts/registry.py): "
                "refused rather than run without its lineage checked")
    match spec.lineage:
        case GlobalOnly():  # lineage 0 only: every bot's
            return None
        case read:
            lineage: int = read(cmd)
    if allowed is None or lineage == GLOBAL_LINEAGE or lineage in allowed:
        return None
    return (f"lineage {lineage} is not one of this bot's lineages ({', '.join(map(str, sorted(allowed)))}): "
            "a bot reads and writes only its own personas' memories")
