"""Where each directory fact is read: the one place that knows (docs/design.md, section 7.1).

The worker's SQL functions read directory facts only through the functions made here, in the
worker's schema (`memory_worker.directory_workspaces()` and the others below); only these
bodies differ between the modes. In the standalone layout they read its tables. In an adopted
TomoriBot database they read where the bot keeps each fact, found in the catalog: a table or
column an older bot database lacks reads as the standalone default.

Functions rather than views on purpose: a view makes PostgreSQL refuse the bot's own
migrations that drop a column the view reads (TomoriBot's 062 drops `users.user_nickname`),
while a function body records no such dependency. These bodies are single SELECTs in
LANGUAGE sql, STABLE, without SET clauses, so the planner inlines them like views.
`memoryctl migrate` makes them again, so after a bot upgrade they follow the bot's tables.
The metric samples' writer and retention are made here too: the only writes that differ.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from db.connection import BOT_SCHEMA, WORKER_SCHEMA

# Each function's columns: the interface the worker's SQL relies on, the same in both modes.
SIGNATURES = {
    "directory_workspaces": "server_id integer, server_disc_id text, self_teaching_enabled boolean,"
                            " personal_memories_enabled boolean, member_teaching_enabled boolean,"
                            " memory_decay_enabled boolean, memory_decay_days integer, tool_notice_verbosity text,"
                            " tool_notice_hidden_keys text[], thought_log_channel_id text,"
                            " private_channel_ids text[], secret_guard_enabled boolean",
    "directory_users": "user_id integer, user_disc_id text, nickname text, privacy_level integer",
    "directory_user_naming": "user_id integer, prefix_override text, suffix_override text, addressing_style text",
    "directory_persona_naming": "lineage_id bigint, user_id integer, nickname text, prefix_override text,"
                                " suffix_override text",
    "directory_blacklist": "server_id integer, user_disc_id text",
    "directory_proxy_identities": "user_id integer",
    "directory_proxy_hosts": "user_id integer, host_user_disc_id text",
}

# Where a metric sample is written ($1 name, $2 fields, $3 stored at, $4 event id), with its
# retention below: the writes that differ between the modes. A redelivered metric is stored once: by the table's
# unique event_id where the worker owns the table, by the worker's own record of event ids
# where the samples go into the bot's `metric_samples(metric_name, fields, created_at)`.
RECORD_METRIC = "memory_record_metric(p_name text, p_fields jsonb, p_at timestamptz, p_event_id text)"
_OWN_METRICS = ("INSERT INTO {table} (metric_name, fields, created_at, event_id) VALUES ($1, $2, $3, $4)"
                " ON CONFLICT (event_id) WHERE event_id IS NOT NULL DO NOTHING")
_BOT_METRICS = ("WITH fresh AS (INSERT INTO memory_worker.metric_sample_events (event_id) SELECT $4"
                " WHERE $4 IS NOT NULL ON CONFLICT DO NOTHING RETURNING 1)"
                " INSERT INTO public.metric_samples (metric_name, fields, created_at)"
                " SELECT $1, $2, $3 WHERE $4 IS NULL OR EXISTS (SELECT 1 FROM fresh)")
STANDALONE_METRICS = _OWN_METRICS.format(table="public.metric_samples")
# Retention ($1 days, $2 at most this many rows): the samples where they are written, and the
# worker's event ids of the bot's samples alike; returns the samples deleted.
PRUNE_METRICS = "memory_prune_metric_samples(p_days integer, p_batch integer)"
_PRUNE = ("WITH gone AS (DELETE FROM {table} WHERE ctid = ANY (ARRAY(SELECT ctid FROM {table}"
          " WHERE created_at < now() - make_interval(days => $1) LIMIT $2)) RETURNING 1){extra}"
          " SELECT count(*)::integer FROM gone")
_PRUNE_EVENTS = (", seen AS (DELETE FROM memory_worker.metric_sample_events WHERE ctid = ANY (ARRAY("
                 "SELECT ctid FROM memory_worker.metric_sample_events"
                 " WHERE seen_at < now() - make_interval(days => $1) LIMIT $2)) RETURNING 1)")

STANDALONE = {
    "directory_workspaces":
        "SELECT s.server_id, s.server_disc_id, s.self_teaching_enabled, s.personal_memories_enabled,"
        " s.self_teaching_enabled, s.memory_decay_enabled, s.memory_decay_days, s.tool_notice_verbosity,"
        " s.tool_notice_hidden_keys, s.thought_log_channel_id, s.private_channel_ids, s.secret_guard_enabled"
        " FROM public.servers s",
    "directory_users": "SELECT u.user_id, u.user_disc_id, u.user_nickname, u.privacy_level FROM public.users u",
    "directory_user_naming":
        "SELECT u.user_id, u.prefix_override, u.suffix_override, u.addressing_style FROM public.users u",
    "directory_persona_naming":
        "SELECT n.lineage_id::bigint, n.user_id, n.nickname, n.prefix_override, n.suffix_override"
        " FROM public.persona_nicknames n",
    "directory_blacklist": "SELECT b.server_id, b.user_disc_id FROM public.personalization_blacklist b",
    "directory_proxy_identities": "SELECT i.user_id FROM public.message_proxy_identities i",
    "directory_proxy_hosts":
        "SELECT i.user_id, a.host_user_disc_id FROM public.message_proxy_identities i"
        " JOIN public.message_proxy_namespace_accounts a ON a.namespace_id = i.namespace_id",
    "memory_record_metric": STANDALONE_METRICS,
    "memory_prune_metric_samples": _PRUNE.format(table="public.metric_samples", extra=""),
}

# TomoriBot's per-server settings: (fact column, bot table, bot column, default when absent).
# Decay and the secret guard have no bot column: they are read from the worker's own
# per-server table (the guard's NULL: the workspace made no choice, the operator's default applies).
_BOT_WORKSPACE = (
    ("self_teaching_enabled", "server_member_permissions_configs", "self_teaching_enabled", "true"),
    ("personal_memories_enabled", "server_member_permissions_configs", "personal_memories_enabled", "true"),
    ("member_teaching_enabled", "server_member_permissions_configs", "server_memteaching_enabled", "true"),
    ("memory_decay_enabled", "memory_worker.workspace_settings", "memory_decay_enabled", "false"),
    ("memory_decay_days", "memory_worker.workspace_settings", "memory_decay_days", "30"),
    ("tool_notice_verbosity", "server_notice_embeds_configs", "tool_notice_verbosity", "'minimal'::text"),
    ("tool_notice_hidden_keys", "server_notice_embeds_configs", "tool_notice_hidden_keys", "'{}'::text[]"),
    ("thought_log_channel_id", "server_channel_scope_configs", "thought_log_channel_disc_id", "NULL::text"),
    ("private_channel_ids", "server_channel_scope_configs", "private_channel_ids", "'{}'::text[]"),
    ("secret_guard_enabled", "memory_worker.workspace_settings", "secret_guard_enabled", "NULL::boolean"),
)

_PROXY_COLUMNS = {("external_identities", "external_identity_id"), ("external_identities", "user_id"),
                  ("message_proxy_identities", "external_identity_id"),
                  ("message_proxy_identities", "message_proxy_namespace_id"),
                  ("message_proxy_namespace_accounts", "message_proxy_namespace_id"),
                  ("message_proxy_namespace_accounts", "host_user_disc_id")}


@dataclass(frozen=True, slots=True)
class Source:
    """Where one fact is read from, for `memoryctl adopt --dry-run`."""

    fact: str
    read_from: str


class Catalog:
    """The bot schema's tables and columns, as found."""

    def __init__(self, columns: set[tuple[str, str]]) -> None:
        self.columns = columns | {("memory_worker.workspace_settings", c)
                                  for c in ("server_id", "memory_decay_enabled", "memory_decay_days",
                                            "secret_guard_enabled")}

    def has(self, table: str, column: str) -> bool:
        return (table, column) in self.columns

    def has_table(self, table: str) -> bool:
        return any(t == table for t, _ in self.columns)


async def read_catalog(conn: asyncpg.Connection) -> Catalog:
    # pg_catalog, not information_schema: the latter shows a role only the tables it may use,
    # and the worker's role must find the same mapping as the owner who made it.
    rows = await conn.fetch(
        "SELECT c.relname, a.attname FROM pg_catalog.pg_attribute a"
        " JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v') AND a.attnum > 0 AND NOT a.attisdropped", BOT_SCHEMA)
    return Catalog({(r[0], r[1]) for r in rows})


def _qualified(table: str) -> str:
    return table if "." in table else f"{BOT_SCHEMA}.{table}"


def adopted(catalog: Catalog) -> tuple[dict[str, str], list[Source]]:
    """The function bodies for a TomoriBot database as it is, and what each fact reads."""
    sources: list[Source] = []
    workspaces = _workspaces(catalog, sources)
    nickname, nick_join = _nickname(catalog, sources)
    privacy = "u.privacy_level" if catalog.has("users", "privacy_level") else "0"
    sources.append(Source("privacy level", "users.privacy_level" if privacy != "0" else "default 0 (open)"))
    users = f"SELECT u.user_id, u.user_disc_id, {nickname}, {privacy} FROM public.users u{nick_join}"
    naming, persona = _user_naming(catalog, sources), _persona_naming(catalog, sources)
    blacklist = _blacklist(catalog, sources)
    identities, hosts = _proxies(catalog, sources)
    metrics, prune = _metrics(catalog, sources)
    bodies = {"directory_workspaces": workspaces, "directory_users": users, "directory_user_naming": naming,
              "directory_persona_naming": persona, "directory_blacklist": blacklist,
              "directory_proxy_identities": identities, "directory_proxy_hosts": hosts,
              "memory_record_metric": metrics, "memory_prune_metric_samples": prune}
    return bodies, sources


def _workspaces(catalog: Catalog, sources: list[Source]) -> str:
    joins: dict[str, str] = {}
    columns = []
    for fact, table, column, default in _BOT_WORKSPACE:
        if catalog.has(table, column):
            alias = joins.setdefault(table, f"j{len(joins)}")
            columns.append(f"coalesce({alias}.{column}, {default})")
            sources.append(Source(fact, f"{table}.{column} (absent row: {default.split('::')[0]})"))
        else:
            columns.append(default)
            sources.append(Source(fact, f"default {default.split('::')[0]} ({table}.{column} not found)"))
    return ("SELECT s.server_id, s.server_disc_id, " + ", ".join(columns) + " FROM public.servers s"
            + "".join(f" LEFT JOIN {_qualified(t)} {a} ON {a}.server_id = s.server_id" for t, a in joins.items()))


def _columns(catalog: Catalog, table: str, columns: tuple[str, ...], alias: str) -> list[str]:
    """Each column as the table has it, or NULL::text where an older bot lacks it."""
    return [f"{alias}.{c}" if catalog.has(table, c) else "NULL::text" for c in columns]


def _user_naming(catalog: Catalog, sources: list[Source]) -> str:
    """A person's global naming: TomoriBot's user_personalization_configs (its migration 062)."""
    table, wanted = "user_personalization_configs", ("prefix_override", "suffix_override", "addressing_style")
    if catalog.has(table, "user_id") and any(catalog.has(table, c) for c in wanted):
        sources.append(Source("naming affixes and addressing style", f"{table}." + ", .".join(wanted)))
        return f"SELECT c.user_id, {', '.join(_columns(catalog, table, wanted, 'c'))} FROM public.{table} c"
    sources.append(Source("naming affixes and addressing style", f"none ({table}.prefix_override not found)"))
    return "SELECT NULL::integer, NULL::text, NULL::text, NULL::text WHERE false"


def _persona_naming(catalog: Catalog, sources: list[Source]) -> str:
    """What a person set per persona lineage: TomoriBot's user_persona_naming_preferences."""
    table, wanted = "user_persona_naming_preferences", ("nickname_override", "prefix_override", "suffix_override")
    if catalog.has(table, "persona_lineage_id") and catalog.has(table, "user_id"):
        sources.append(Source("persona nickname and affixes", f"{table}." + ", .".join(wanted)))
        return (f"SELECT p.persona_lineage_id::bigint, p.user_id, {', '.join(_columns(catalog, table, wanted, 'p'))}"
                f" FROM public.{table} p")
    sources.append(Source("persona nickname and affixes", f"none ({table} not found)"))
    return "SELECT NULL::bigint, NULL::integer, NULL::text, NULL::text, NULL::text WHERE false"


def _blacklist(catalog: Catalog, sources: list[Source]) -> str:
    if catalog.has("personalization_blacklist", "user_disc_id"):
        sources.append(Source("blacklist", "personalization_blacklist"))
        return STANDALONE["directory_blacklist"]
    sources.append(Source("blacklist", "none (personalization_blacklist not found)"))
    return "SELECT NULL::integer, NULL::text WHERE false"


def _proxies(catalog: Catalog, sources: list[Source]) -> tuple[str, str]:
    """The proxy identities and their hosts."""
    if all(catalog.has(t, c) for t, c in _PROXY_COLUMNS):
        identities = ("SELECT e.user_id FROM public.external_identities e JOIN public.message_proxy_identities i"
                      " ON i.external_identity_id = e.external_identity_id")
        hosts = (identities.replace("SELECT e.user_id", "SELECT e.user_id, a.host_user_disc_id")
                 + " JOIN public.message_proxy_namespace_accounts a"
                   " ON a.message_proxy_namespace_id = i.message_proxy_namespace_id")
        sources.append(Source("proxy identity -> hosts", "external_identities -> message_proxy_identities"
                                                         " -> message_proxy_namespace_accounts"))
        return identities, hosts
    # Fails closed: a synthetic proxy user the worker cannot trace to its hosts is an
    # identity with no resolvable host link, and personal saves for it are refused.
    sources.append(Source("proxy identity -> hosts", "none found (TomoriBot's proxy tables of migration 056"
                                                     " missing): pk:/pb: users are refused, no host link"))
    return (r"SELECT u.user_id FROM public.users u WHERE u.user_disc_id ~ '^(pk:|pb:)'",
            "SELECT NULL::integer, NULL::text WHERE false")


def _metrics(catalog: Catalog, sources: list[Source]) -> tuple[str, str]:
    """Where metric samples are written, and how they are pruned."""
    metrics_table = "public.metric_samples" if catalog.has("metric_samples", "fields") else "memory_worker.metric_samples"
    into_bots = catalog.has("metric_samples", "fields") and not catalog.has("metric_samples", "event_id")
    prune = _PRUNE.format(table=metrics_table, extra=_PRUNE_EVENTS if into_bots else "")
    if catalog.has("metric_samples", "event_id"):
        sources.append(Source("metric samples (written)", "metric_samples, de-duplicated by its event_id"))
        return _OWN_METRICS.format(table="public.metric_samples"), prune
    if catalog.has("metric_samples", "fields"):
        sources.append(Source("metric samples (written)", "metric_samples(metric_name, fields, created_at);"
                                                          " event ids in memory_worker.metric_sample_events"))
        return _BOT_METRICS, prune
    sources.append(Source("metric samples (written)", "memory_worker.metric_samples (the bot has none)"))
    return _OWN_METRICS.format(table="memory_worker.metric_samples"), prune


def _nickname(catalog: Catalog, sources: list[Source]) -> tuple[str, str]:
    """The saved nickname: user_personalization_configs since TomoriBot's 062, users before."""
    in_configs = catalog.has("user_personalization_configs", "user_nickname")
    in_users = catalog.has("users", "user_nickname")
    join = " LEFT JOIN public.user_personalization_configs c ON c.user_id = u.user_id" if in_configs else ""
    if in_configs and in_users:
        sources.append(Source("saved nickname", "user_personalization_configs.user_nickname, else users.user_nickname"))
        return "coalesce(c.user_nickname, u.user_nickname)", join
    if in_configs:
        sources.append(Source("saved nickname", "user_personalization_configs.user_nickname"))
        return "c.user_nickname", join
    if in_users:
        sources.append(Source("saved nickname", "users.user_nickname (a database from before TomoriBot's 062)"))
        return "u.user_nickname", join
    sources.append(Source("saved nickname", "none (no user_nickname column found)"))
    return "NULL::text", join


# Every function made here: db/functions/ makes the worker's others, and leaves these alone.
FUNCTION_NAMES = frozenset({*SIGNATURES, "memory_record_metric", "memory_prune_metric_samples"})


def ddl(bodies: dict[str, str]) -> str:
    """Every directory function made again: the same text for the same bodies. A read is
    dropped first, as CREATE OR REPLACE cannot change a function's columns; nothing depends on
    it in the catalog (the SQL functions that call it are bodies of LANGUAGE sql, resolved when run)."""
    reads = [f"DROP FUNCTION IF EXISTS {WORKER_SCHEMA}.{name}();\n"
             f"CREATE FUNCTION {WORKER_SCHEMA}.{name}() RETURNS TABLE ({SIGNATURES[name]})\n"
             f"LANGUAGE sql STABLE AS $fact$ {bodies[name]} $fact$;" for name in SIGNATURES]
    writes = [f"CREATE OR REPLACE FUNCTION {WORKER_SCHEMA}.{RECORD_METRIC} RETURNS void\n"
              f"LANGUAGE sql AS $fact$ {bodies['memory_record_metric']} $fact$;",
              f"CREATE OR REPLACE FUNCTION {WORKER_SCHEMA}.{PRUNE_METRICS} RETURNS integer\n"
              f"LANGUAGE sql AS $fact$ {bodies['memory_prune_metric_samples']} $fact$;"]
    return "\n".join([*reads, *writes])
