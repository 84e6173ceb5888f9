"""Which bot a worker serves (its tenant), and what of the shared database that bot may touch.

Bots are kept apart by NATS accounts (deploy/nats/accounts.conf): each bot's account has its
own streams and its own worker, so a bot's commands reach only its worker. The database is
shared (two bots in one guild share its server row, its users, their privacy levels and the
blacklist), so the worker keeps two things apart there itself:

- lineages: a tenant's commands may name only its own lineages (TENANT_LINEAGES) and lineage 0
  (a user's global personal memories, which belong to the user, not to a bot);
- stored results: each tenant's inbox rows carry the tenant in their workspace column, so a
  repeat or a result lookup never finds another tenant's result (db/migrations/004_tenants.sql).

Pure functions: no I/O.
"""

from __future__ import annotations

from contracts.commands import CreateMemory, Envelope, ManualMemory, ReinforceMemories

# The lineage of a user's global personal memories (bio seeds among them): every bot's.
GLOBAL_LINEAGE = 0
# Between the tenant and the workspace id in processed_commands.workspace_id. Tenant names
# never contain it, so `<tenant>/<workspace>` names one tenant's workspace unambiguously.
SEPARATOR = "/"
# What a stored row of another tenant reports as its workspace: NUL is in no decoded
# workspace id (contracts/commands.py), so it never equals the command's own.
FOREIGN_WORKSPACE = "\x00another tenant"


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


def qualified_workspace(tenant: str, workspace_id: str) -> str:
    """The workspace as the inbox stores it for `tenant` (unchanged for the tenant-less worker)."""
    return f"{tenant}{SEPARATOR}{workspace_id}" if tenant else workspace_id


def own_workspace(tenant: str, stored: str | None) -> str | None:
    """A stored row's workspace as this tenant's command would name it, FOREIGN_WORKSPACE when
    the row is another tenant's, None when the row names none."""
    if stored is None or not tenant:
        return stored
    prefix = tenant + SEPARATOR
    return stored[len(prefix):] if stored.startswith(prefix) else FOREIGN_WORKSPACE
