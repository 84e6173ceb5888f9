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

from contracts.commands import CreateMemory, Envelope, ManualMemory, ReinforceMemories

# The lineage of a user's global personal memories (bio seeds among them): every bot's.
GLOBAL_LINEAGE = 0


def lineage_of(cmd: Envelope) -> int | None:
    """The lineage a command reads or writes; None for one that names none (seed_bio: lineage 0)."""
    if isinstance(cmd, CreateMemory):
        return cmd.persona.lineage_id
    if isinstance(cmd, ManualMemory | ReinforceMemories):
        return cmd.lineage_id
    return None


def foreign_lineage(cmd: Envelope, allowed: frozenset[int] | None) -> str | None:
    """Why the command may not run for this tenant, or None. `allowed` None: a worker without
    a tenant (one bot, or a deployment that keeps bots in one account) accepts every lineage."""
    lineage = lineage_of(cmd)
    if allowed is None or lineage is None or lineage == GLOBAL_LINEAGE or lineage in allowed:
        return None
    return (f"lineage {lineage} is not one of this bot's lineages ({', '.join(map(str, sorted(allowed)))}): "
            "a bot reads and writes only its own personas' memories")

