"""Configuration from the environment, read once into a frozen object (docs/design.md, section 10)."""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, cast

from contracts.subjects import DEFAULT_REPLY_PREFIXES, reserved_root
from worker.shared.nats_auth import NatsAuth, NatsAuthError


class SettingsError(ValueError):
    """A configuration value is unusable; the message names the variable."""


@dataclass(frozen=True, slots=True)
class Settings:
    nats_url: str | None = None
    database_url: str | None = None
    data_dir: Path = Path(".data")
    memory_partitions: int = 16
    stream_replicas: int = 1
    max_memory_length: int = 1000
    max_server_memories: int = 100
    max_personal_memories: int = 100
    message_proxy_bio_seed_max_chars: int = 1000
    metric_sample_retention_days: int = 30
    max_deliver: int = 10
    ack_wait_seconds: int = 60
    inbox_retention_days: int = 35
    # How long and how much of a backlog MEMORY_COMMANDS keeps while no worker consumes
    # (worker/consuming/administration/streams.py): longer and larger than any outage you plan for.
    command_max_age_hours: int = 168
    command_max_mib: int = 1024
    max_command_bytes: int = 65536
    reply_subject_prefixes: tuple[str, ...] = DEFAULT_REPLY_PREFIXES
    db_pool_size: int = 20
    # A database host that vanished (a lost machine, a failover) costs seconds, not minutes:
    # how long a connection attempt may take, and how long a statement may go unanswered
    # before its connection is abandoned (above the server's statement_timeout of 15 s, so a
    # live but slow server reports its own timeout first). TCP keepalives and TCP_USER_TIMEOUT
    # on both ends follow the command timeout (db/connection.py).
    db_connect_timeout_seconds: int = 10
    db_command_timeout_seconds: int = 20
    # Refuse to start unless the database the worker writes to has a synchronous standby and
    # commits wait for it (db/replication.py): a failover then loses no acknowledged save.
    require_sync_standby: bool = False
    # The secret guard (worker/domain/secret_guard/) for every workspace that made no choice
    # of its own (`memoryctl workspace set WS --secret-guard on|off|default`).
    secret_guard_default: bool = True
    # Commands of a partition in its replica's hands at once (the consumer's max_ack_pending):
    # different workspaces run side by side, each workspace one at a time, in order.
    partition_in_flight: int = 32
    # Creates in flight at once (of different workspaces) share database round trips and a commit,
    # up to this many per batch; 1 runs every create on its own.
    create_batch_max: int = 64
    # Batches in the database at once: one commits while the next is read and decided.
    create_batch_runners: int = 4
    log_format: str = "console"
    log_level: str = "info"
    metrics_port: int = 9464  # 0 turns the /metrics and /healthz endpoint off
    metrics_host: str = "127.0.0.1"
    nats_auth: NatsAuth = NatsAuth()
    # The bot this worker serves when bots are kept apart in accounts of their own
    # (deploy/README.md, "Bots apart"): its name, and the lineages its commands may name.
    tenant: str = ""
    tenant_lineages: frozenset[int] | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        default_format = "console" if sys.stderr.isatty() else "json"
        values: dict[str, Any] = {
            "nats_url": env.get("NATS_URL") or None,
            "database_url": env.get("DATABASE_URL") or None,
            "data_dir": Path(env.get("MEMORY_DATA_DIR") or ".data"),
            "log_format": _choice(env, "LOG_FORMAT", ("console", "json"), default_format),
            "log_level": _choice(env, "LOG_LEVEL", ("debug", "info", "warning", "error"), "info"),
            "reply_subject_prefixes": _prefixes(env, "REPLY_SUBJECT_PREFIXES", DEFAULT_REPLY_PREFIXES),
            "metrics_host": (env.get("METRICS_HOST") or "127.0.0.1").strip(),
            "nats_auth": _nats_auth(env),
            **_tenant(env),
            "require_sync_standby": _bool(env, "REQUIRE_SYNC_STANDBY", False),
            "secret_guard_default": _bool(env, "SECRET_GUARD_DEFAULT", True),
        }
        for name, low, high in (
            ("memory_partitions", 1, 1024),
            ("stream_replicas", 1, 5),
            ("metric_sample_retention_days", 1, 36_500),
            ("max_deliver", 1, 1000),
            ("ack_wait_seconds", 20, 3600),
            # Longer than MEMORY_DLQ keeps a dead letter (30 days): a replay is always recognised.
            ("inbox_retention_days", 31, 36_500),
            # At most 30 days, less than the inbox keeps a result (31 days at least): a command
            # delivered again after the longest outage is still recognised.
            ("command_max_age_hours", 1, 24 * 30),
            ("command_max_mib", 1, 1024 * 1024),
            ("max_command_bytes", 1024, 1024 * 1024),
            ("db_pool_size", 1, 500),
            ("db_connect_timeout_seconds", 1, 300),
            ("db_command_timeout_seconds", 1, 3600),
            ("partition_in_flight", 1, 1024),
            ("create_batch_max", 1, 1024),
            ("create_batch_runners", 1, 64),
            ("metrics_port", 0, 65535),
        ):
            default = cast(int, next(f.default for f in fields(cls) if f.name == name))
            values[name] = _int(env, name.upper(), default, low, high)
        # TomoriBot's own variables mean what they mean to the bot: read as its parseInt reads
        # them, falling back to the default where the bot does (memoryLimits.ts, bioSeeding.ts).
        for name in ("max_memory_length", "max_server_memories", "max_personal_memories",
                     "message_proxy_bio_seed_max_chars"):
            default = cast(int, next(f.default for f in fields(cls) if f.name == name))
            values[name] = js_positive_int(env.get(name.upper()), default)
        return cls(**values)


# JavaScript's StrWhiteSpaceChar (what parseInt skips first): its white space and line terminators.
_JS_LEADING_SPACE = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                     "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")
_JS_INT_PREFIX = re.compile("[+-]?[0-9]+")
_JS_MAX_SAFE_INTEGER = 2**53 - 1


def js_positive_int(raw: str | None, default: int) -> int:
    """TomoriBot's `parsePositiveIntegerEnv`: `Number.parseInt(raw || default, 10)`, the default
    unless that is a positive integer. parseInt skips leading white space and reads the digits
    up to the first other character ("42abc" is 42, "1e3" is 1)."""
    match = _JS_INT_PREFIX.match((raw or "").lstrip(_JS_LEADING_SPACE))
    if match is None:
        return default
    value = float(match.group())
    if math.isinf(value) or value <= 0:
        return default
    # Beyond 2**53 - 1 no count or length can reach the limit anyway; kept there so that
    # PostgreSQL's bigint and the results' integers can carry it.
    return min(int(value), _JS_MAX_SAFE_INTEGER)


def _int(env: Mapping[str, str], var: str, default: int, low: int, high: int) -> int:
    raw = env.get(var)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise SettingsError(f"{var} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise SettingsError(f"{var} must be between {low} and {high}, got {value}")
    return value


def _tenant(env: Mapping[str, str]) -> dict[str, object]:
    name = (env.get("TENANT") or "").strip()
    raw_lineages = (env.get("TENANT_LINEAGES") or "").strip()
    if not name:
        if raw_lineages:
            raise SettingsError("TENANT_LINEAGES is set but TENANT is not: name the bot this worker serves")
        return {}
    if not _TENANT.fullmatch(name):
        raise SettingsError(f"TENANT must be 1 to 32 lower-case letters, digits or '-', starting with a letter or "
                            f"digit (it names the bot's consumers bot-<TENANT>-saved and -evicted), got {name!r}")
    lineages = set()
    for part in (p.strip() for p in raw_lineages.split(",")):
        if not part:
            continue
        if not part.isdigit() or int(part) > 2**63 - 1:
            raise SettingsError(f"TENANT_LINEAGES must be comma-separated lineage ids (integers), got {part!r}")
        lineages.add(int(part))
    if not lineages:
        raise SettingsError("TENANT_LINEAGES must name at least one lineage when TENANT is set")
    if 0 in lineages:
        raise SettingsError("TENANT_LINEAGES must not list 0: lineage 0 (global personal memories) is every bot's")
    return {"tenant": name, "tenant_lineages": frozenset(lineages)}


_TENANT = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")


def _bool(env: Mapping[str, str], var: str, default: bool) -> bool:
    raw = (env.get(var) or "").strip().lower()
    if not raw:
        return default
    if raw in ("true", "1", "yes", "on"):
        return True
    if raw in ("false", "0", "no", "off"):
        return False
    raise SettingsError(f"{var} must be true or false, got {raw!r}")


def _nats_auth(env: Mapping[str, str]) -> NatsAuth:
    try:
        return NatsAuth.from_env(env)
    except NatsAuthError as exc:
        raise SettingsError(str(exc)) from None


def _prefixes(env: Mapping[str, str], var: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = env.get(var)
    if raw is None or not raw.strip():
        return default
    prefixes = tuple(p.strip() for p in raw.split(",") if p.strip())
    for prefix in prefixes:
        if any(c in prefix for c in "*> \t") or prefix.startswith(".") or ".." in prefix:
            raise SettingsError(f"{var} must be comma-separated subject prefixes without wildcards, got {prefix!r}")
        if (root := reserved_root(prefix)) is not None:
            raise SettingsError(f"{var} must name reply inboxes, not the worker's own or the server's subjects: "
                                f"{prefix!r} overlaps {root!r}")
    return prefixes


def _choice(env: Mapping[str, str], var: str, allowed: tuple[str, ...], default: str) -> str:
    raw = (env.get(var) or "").strip().lower()
    if not raw:
        return default
    if raw not in allowed:
        raise SettingsError(f"{var} must be one of {', '.join(allowed)}, got {raw!r}")
    return raw
