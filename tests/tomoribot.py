"""A TomoriBot-shaped database for the adoption tests, built from the facts of TomoriBot's
public schema (Eliolocin/TomoriBot src/db/schema.sql and Bredrumb/TomoriBot
src/db/migrations/ 056, 088, 093; its migration ledger from src/db/migrationRunner.ts): the
tables the worker reads or writes, with their column names, types, constraints, defaults and
update triggers, and a few neighbours it must leave alone. `before_062=True` builds the older
layout (the saved nickname still in `users`, no persona naming preferences).

The bot's connections never have the worker's search path: this builds through plain
connections to `public`, as the bot would.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg

from tests.support.commands import TRIGGERER_ID

SCHEMA = r"""
CREATE OR REPLACE FUNCTION update_timestamp() RETURNS TRIGGER AS $$
BEGIN
   NEW.updated_at = CURRENT_TIMESTAMP;
   RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TABLE schema_migrations (
  id         SERIAL      PRIMARY KEY,
  name       TEXT        UNIQUE NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL DEFAULT NOW()
);

CREATE TABLE servers (
  server_id SERIAL PRIMARY KEY,
  server_disc_id TEXT UNIQUE NOT NULL,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  is_dm_channel BOOLEAN DEFAULT false,
  registration_locale TEXT
);
CREATE INDEX idx_servers_disc_id ON servers(server_disc_id);
CREATE TRIGGER update_servers_timestamp BEFORE UPDATE ON servers FOR EACH ROW EXECUTE FUNCTION update_timestamp();

CREATE TABLE personas (
  persona_id SERIAL PRIMARY KEY,
  server_id INT NOT NULL REFERENCES servers(server_id) ON DELETE CASCADE,
  persona_nickname TEXT NOT NULL,
  attribute_list TEXT[] DEFAULT '{}',
  is_alter BOOLEAN DEFAULT false,
  persona_lineage_id BIGINT NOT NULL,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE users (
  user_id SERIAL PRIMARY KEY,
  user_disc_id TEXT UNIQUE NOT NULL,
  language_pref TEXT DEFAULT 'en',
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  registration_locale TEXT,
  privacy_level INTEGER NOT NULL DEFAULT 0 CONSTRAINT users_privacy_level_check CHECK (privacy_level IN (0, 1, 2)),
  message_proxy_service TEXT
  {users_nickname}
);
CREATE TRIGGER update_users_timestamp BEFORE UPDATE ON users FOR EACH ROW EXECUTE FUNCTION update_timestamp();

CREATE TABLE server_memories (
  server_memory_id SERIAL PRIMARY KEY,
  server_id INT NOT NULL,
  persona_id INT,
  persona_lineage_id BIGINT {lineage_not_null},
  user_id INT,
  content TEXT NOT NULL,
  tags TEXT[] DEFAULT '{}',
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  FOREIGN KEY (user_id) REFERENCES users(user_id) ON DELETE SET NULL,
  FOREIGN KEY (server_id) REFERENCES servers(server_id) ON DELETE CASCADE,
  CONSTRAINT server_memories_persona_id_fkey FOREIGN KEY (persona_id) REFERENCES personas(persona_id) ON DELETE SET NULL
);
CREATE INDEX idx_server_memories_server_lineage_created_at
  ON server_memories(server_id, persona_lineage_id, created_at DESC);

CREATE TABLE personal_memories (
  personal_memory_id SERIAL PRIMARY KEY,
  user_id INT NOT NULL REFERENCES users(user_id) ON DELETE CASCADE,
  persona_lineage_id BIGINT NOT NULL,
  content TEXT NOT NULL,
  tags TEXT[] DEFAULT '{}',
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE TRIGGER update_personal_memories_timestamp BEFORE UPDATE ON personal_memories
  FOR EACH ROW EXECUTE FUNCTION update_timestamp();
CREATE INDEX idx_personal_memories_user_lineage_created_at
  ON personal_memories(user_id, persona_lineage_id, created_at DESC);

CREATE TABLE personalization_blacklist (
  server_id INT NOT NULL REFERENCES servers(server_id) ON DELETE CASCADE,
  user_disc_id TEXT NOT NULL,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (server_id, user_disc_id)
);

CREATE TABLE server_notice_embeds_configs (
  server_id              INT      PRIMARY KEY REFERENCES servers(server_id) ON DELETE CASCADE,
  tool_notice_hidden_keys TEXT[]  NOT NULL DEFAULT '{}',
  created_at             TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  updated_at             TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  tool_notice_verbosity  TEXT DEFAULT 'minimal' NOT NULL CHECK (tool_notice_verbosity IN ('minimal', 'verbose'))
);

CREATE TABLE server_member_permissions_configs (
  server_id                          INT     PRIMARY KEY REFERENCES servers(server_id) ON DELETE CASCADE,
  server_memteaching_enabled         BOOLEAN NOT NULL DEFAULT true,
  attribute_memteaching_enabled      BOOLEAN NOT NULL DEFAULT false,
  sampledialogue_memteaching_enabled BOOLEAN NOT NULL DEFAULT false,
  self_teaching_enabled              BOOLEAN NOT NULL DEFAULT true,
  personal_memories_enabled          BOOLEAN NOT NULL DEFAULT true,
  hide_impersonation_embeds          BOOLEAN NOT NULL DEFAULT false,
  prompt_snapshot_enabled            BOOLEAN NOT NULL DEFAULT false,
  created_at                         TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  updated_at                         TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
CREATE TRIGGER update_server_member_permissions_configs_timestamp BEFORE UPDATE ON server_member_permissions_configs
  FOR EACH ROW EXECUTE FUNCTION update_timestamp();

CREATE TABLE server_channel_scope_configs (
  server_id                   INT      PRIMARY KEY REFERENCES servers(server_id) ON DELETE CASCADE,
  rp_channel_ids              TEXT[]   NOT NULL DEFAULT '{}',
  private_channel_ids         TEXT[]   NOT NULL DEFAULT '{}',
  crosschannel_blocklist_ids  TEXT[]   NOT NULL DEFAULT '{}',
  stm_privacy_bypass          BOOLEAN  NOT NULL DEFAULT false,
  thought_log_channel_disc_id TEXT,
  created_at                  TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  updated_at                  TIMESTAMPTZ NOT NULL DEFAULT NOW()
);

CREATE TABLE user_personalization_configs (
  user_id                            INT     PRIMARY KEY REFERENCES users(user_id) ON DELETE CASCADE,
  {configs_nickname}
  shortterm_cache_crossserver_opt_in BOOLEAN NOT NULL DEFAULT false,
  physical_appearance_tags           TEXT[]  NOT NULL DEFAULT '{}',
  nai_char_ref_url                   TEXT,
  impersonation_prompt               TEXT,
  personal_dtm                       TEXT    NOT NULL DEFAULT 'follow',
  created_at                         TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  updated_at                         TIMESTAMPTZ NOT NULL DEFAULT NOW()
);

{naming_preferences}

CREATE TABLE message_proxy_instances (
  instance_id TEXT PRIMARY KEY,
  service_id TEXT NOT NULL CHECK (service_id IN ('pluralkit', 'pluralbuddy')),
  origin TEXT NOT NULL UNIQUE,
  display_name TEXT NOT NULL,
  enabled BOOLEAN NOT NULL DEFAULT false,
  created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  removed_at TIMESTAMP,
  bot_user_id TEXT
);
INSERT INTO message_proxy_instances (instance_id, service_id, origin, display_name, enabled, bot_user_id) VALUES
  ('pluralkit:official', 'pluralkit', 'https://api.pluralkit.me', 'PluralKit', true, '466378653216014359'),
  ('pluralbuddy:official', 'pluralbuddy', 'https://pluralbuddy.app', 'PluralBuddy', true, '1436973163211657278');

CREATE TABLE external_identities (
  external_identity_id SERIAL PRIMARY KEY,
  kind TEXT NOT NULL,
  external_key TEXT NOT NULL,
  user_id INT NOT NULL UNIQUE REFERENCES users(user_id) ON DELETE CASCADE,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  instance_id TEXT NOT NULL REFERENCES message_proxy_instances(instance_id),
  UNIQUE (kind, instance_id, external_key)
);

CREATE TABLE message_proxy_namespaces (
  message_proxy_namespace_id SERIAL PRIMARY KEY,
  service_id TEXT NOT NULL,
  namespace_key TEXT NOT NULL,
  short_id TEXT,
  display_name TEXT,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  instance_id TEXT NOT NULL REFERENCES message_proxy_instances(instance_id),
  UNIQUE (instance_id, namespace_key)
);

CREATE TABLE message_proxy_identities (
  message_proxy_identity_id SERIAL PRIMARY KEY,
  message_proxy_namespace_id INT NOT NULL REFERENCES message_proxy_namespaces(message_proxy_namespace_id) ON DELETE CASCADE,
  external_identity_id INT NOT NULL UNIQUE REFERENCES external_identities(external_identity_id) ON DELETE CASCADE,
  short_id TEXT,
  display_name TEXT,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  avatar_url TEXT
);

CREATE TABLE message_proxy_namespace_accounts (
  message_proxy_namespace_id INT NOT NULL REFERENCES message_proxy_namespaces(message_proxy_namespace_id) ON DELETE CASCADE,
  host_user_disc_id TEXT NOT NULL,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (message_proxy_namespace_id, host_user_disc_id)
);

CREATE TABLE minimal_notice_refs (
  message_disc_id TEXT PRIMARY KEY,
  ref_kind TEXT NOT NULL CHECK (ref_kind IN ('server_memory', 'personal_memory', 'task')),
  ref_id INT NOT NULL,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE metric_samples (
  metric_name TEXT        NOT NULL,
  fields      JSONB       NOT NULL,
  created_at  TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
"""

# What TomoriBot's 062 added to user_personalization_configs that the worker reads.
CONFIGS_NAMING = """user_nickname TEXT,
  prefix_override TEXT,
  suffix_override TEXT,
  addressing_style TEXT CHECK (addressing_style IS NULL OR addressing_style IN ('masculine', 'feminine', 'neutral')),"""

NAMING_PREFERENCES = """
CREATE TABLE user_persona_naming_preferences (
  user_id INT NOT NULL REFERENCES users(user_id) ON DELETE CASCADE,
  persona_lineage_id BIGINT NOT NULL,
  nickname_override TEXT,
  prefix_override TEXT,
  suffix_override TEXT,
  created_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  PRIMARY KEY (user_id, persona_lineage_id)
);
"""

# Every bot table the fixture fills: what "every bot row is intact" compares.
BOT_TABLES = ("schema_migrations", "servers", "personas", "users", "server_memories", "personal_memories",
              "personalization_blacklist", "server_notice_embeds_configs", "server_member_permissions_configs",
              "server_channel_scope_configs", "user_personalization_configs", "user_persona_naming_preferences",
              "message_proxy_instances", "external_identities", "message_proxy_namespaces",
              "message_proxy_identities", "message_proxy_namespace_accounts", "minimal_notice_refs", "metric_samples")
# The columns adoption adds to the memory tables: left out when comparing rows.
ADDED = ("manually_written", "source", "last_reinforced_at", "reinforcement_count")


def plain_dsn(dsn: str) -> str:
    """The bot's view of the database: the URL without the worker's search path."""
    return dsn.split("?", 1)[0]


async def new_database(server_dsn: Callable[..., str], prefix: str = "bot") -> str:
    """An empty database on the server, for a bot: its plain URL. `server_dsn` is the server's
    dsn(name) maker."""
    name = f"{prefix}_{uuid.uuid4().hex[:16]}"
    admin = await asyncpg.connect(server_dsn())
    try:
        await admin.execute(f"CREATE DATABASE {name}")
    finally:
        await admin.close()
    return plain_dsn(server_dsn(name))


async def seeded_database(server_dsn: Callable[..., str], prefix: str = "tomori", *,
                          before_062: bool = False) -> tuple[str, World]:
    """A new database on the server holding a built and seeded TomoriBot (not adopted): its
    plain URL and the world `seed` wrote."""
    dsn = await new_database(server_dsn, prefix)
    conn = await asyncpg.connect(dsn)
    try:
        await build(conn, before_062=before_062)
        return dsn, await seed(conn, before_062=before_062)
    finally:
        await conn.close()


async def build(conn: asyncpg.Connection, *, before_062: bool = False, lineage_not_null: bool = True) -> None:
    holes = {"{users_nickname}": ",\n  user_nickname TEXT" if before_062 else "",
             "{configs_nickname}": "" if before_062 else CONFIGS_NAMING,
             "{naming_preferences}": "" if before_062 else NAMING_PREFERENCES,
             "{lineage_not_null}": "NOT NULL" if lineage_not_null else ""}
    schema = SCHEMA
    for hole, text in holes.items():
        schema = schema.replace(hole, text)
    await conn.execute(schema)
    await conn.execute("INSERT INTO schema_migrations (name, applied_at) SELECT name, now() - interval '1 day' * n"
                       " FROM unnest($1::text[]) WITH ORDINALITY AS t(name, n)",
                       ["093_tool_notice_verbosity", "094_persona_nsfw_flag", "095_assistant_prefill",
                        "096_minimal_notice_refs"] if not before_062 else ["047_pluralkit_identity"])


async def snapshot(conn: asyncpg.Connection, tables=BOT_TABLES) -> dict[str, list[tuple]]:
    """Every row of every bot table, less the columns adoption adds, in a stable order."""
    found = {}
    for table in tables:
        if await conn.fetchval("SELECT to_regclass($1)", f"public.{table}") is None:
            continue
        columns = [r[0] for r in await conn.fetch(
            "SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped"
            " ORDER BY attnum", f"public.{table}") if r[0] not in ADDED]
        listed = ", ".join(f'"{c}"' for c in columns)
        rows = await conn.fetch(f"SELECT {listed} FROM public.{table} ORDER BY {listed}")
        found[table] = [tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in rows]
    return found


async def catalog(conn: asyncpg.Connection) -> list[tuple]:
    """Every schema, relation, column, constraint, index and function outside the system's."""
    return [tuple(r) for r in await conn.fetch(
        "SELECT 'rel', n.nspname, c.relname, c.relkind::text, '' FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
        "   AND n.nspname NOT LIKE 'pg_toast%'"
        " UNION ALL SELECT 'col', n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod)"
        "   || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')"
        " || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END"
        " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
        " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
        " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'"
        "   AND a.attnum > 0 AND NOT a.attisdropped"
        " UNION ALL SELECT 'con', n.nspname, c.conname, pg_get_constraintdef(c.oid), '' FROM pg_constraint c"
        " JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
        " UNION ALL SELECT 'fn', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid), md5(p.prosrc)"
        " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
        " UNION ALL SELECT 'schema', nspname, '', '', '' FROM pg_namespace"
        " WHERE nspname NOT IN ('pg_catalog', 'information_schema') AND nspname NOT LIKE 'pg_toast%'"
        "   AND nspname NOT LIKE 'pg_temp%'"
        " ORDER BY 1, 2, 3, 4, 5")]


def days_ago(days: float) -> datetime:
    """A naive UTC timestamp, as TomoriBot's `timestamp` columns hold them (a UTC server)."""
    return datetime.now(UTC).replace(tzinfo=None) - timedelta(days=days)


@dataclass(frozen=True)
class World:
    """The ids of the rows `seed` wrote."""

    # TomoriBot's lineage columns are bigint, its values come from a sequence; the wire
    # contract carries a 32-bit lineage.
    lineage: int = 4242
    taught: str = "810000000000000001"  # self-teaching on, verbose notices, a thought log, decay via memoryctl
    quiet: str = "810000000000000002"  # self-teaching and member teaching off
    hidden: str = "810000000000000003"  # memory notices hidden from the conversation, a thought log
    dm_user: str = "200000000000000005"  # a DM workspace: servers row with the user's id
    mika: str = "200000000000000001"  # saved nickname "Mika", persona nickname "Kitten"
    host: str = "200000000000000002"  # FULL privacy, hosts the proxy system
    banned: str = "200000000000000003"  # blacklisted in `taught`
    full: str = "200000000000000004"  # personal memories at the cap of 5 (3 of the lineage + 2 global)
    hoarder: str = "200000000000000006"  # above the cap: 6 (4 of the lineage + 2 global)
    proxy: str = "pk:7c1f2a36-5d0e-4b1f-9a8e-2b3c4d5e6f70"  # a PluralKit member hosted by `host`
    triggerer: str = TRIGGERER_ID  # who triggers the tests' commands (tests/support/commands.py)
    persona_taught: int = 0
    persona_quiet: int = 0


async def seed(conn: asyncpg.Connection, *, before_062: bool = False) -> World:
    """Realistic rows: servers and their config rows, personas, users with nicknames, server and
    personal memories (some at the cap, old, with NULL and filled tags), a blacklist entry, a
    PluralKit identity whose host is at FULL privacy, a minimal notice ref, metric samples."""
    w = World()
    ids = {}
    for disc, dm, locale in ((w.taught, False, "en-US"), (w.quiet, False, "ja"), (w.hidden, False, "de"),
                             (w.dm_user, True, None)):
        ids[disc] = await conn.fetchval(
            "INSERT INTO servers (server_disc_id, is_dm_channel, registration_locale, created_at, updated_at)"
            " VALUES ($1, $2, $3, $4, $4) RETURNING server_id", disc, dm, locale, days_ago(400))
    personas = {}
    for disc in (w.taught, w.quiet):
        personas[disc] = await conn.fetchval(
            "INSERT INTO personas (server_id, persona_nickname, attribute_list, persona_lineage_id)"
            " VALUES ($1, 'Tomori', '{cheerful,curious}', $2) RETURNING persona_id", ids[disc], w.lineage)
    w = World(persona_taught=personas[w.taught], persona_quiet=personas[w.quiet])
    await conn.execute(
        "INSERT INTO server_member_permissions_configs (server_id, self_teaching_enabled, server_memteaching_enabled)"
        " VALUES ($1, true, true), ($2, false, false)", ids[w.taught], ids[w.quiet])
    await conn.execute("INSERT INTO server_notice_embeds_configs (server_id, tool_notice_verbosity,"
                       " tool_notice_hidden_keys) VALUES ($1, 'verbose', '{task_update}'),"
                       " ($2, 'minimal', '{memory_update,task_update}')", ids[w.taught], ids[w.hidden])
    await conn.execute("INSERT INTO server_channel_scope_configs (server_id, private_channel_ids,"
                       " thought_log_channel_disc_id) VALUES ($1, '{830000000000000002}', '830000000000000009'),"
                       " ($2, '{}', '830000000000000019')", ids[w.taught], ids[w.hidden])
    users = {}
    for disc, privacy in ((w.mika, 0), (w.host, 2), (w.banned, 0), (w.full, 0), (w.dm_user, 0), (w.proxy, 0),
                          (w.hoarder, 0), (w.triggerer, 0)):
        users[disc] = await conn.fetchval(
            "INSERT INTO users (user_disc_id, privacy_level, created_at, updated_at, message_proxy_service)"
            " VALUES ($1, $2, $3, $3, $4) RETURNING user_id", disc, privacy, days_ago(300),
            "pluralkit" if disc == w.proxy else None)
        await conn.execute("INSERT INTO user_personalization_configs (user_id) VALUES ($1)", users[disc])
    if before_062:
        await conn.execute("UPDATE users SET user_nickname = 'Mika', updated_at = $2 WHERE user_id = $1",
                           users[w.mika], days_ago(200))
    else:
        await conn.execute("UPDATE user_personalization_configs SET user_nickname = 'Mika' WHERE user_id = $1",
                           users[w.mika])
        await conn.execute("INSERT INTO user_persona_naming_preferences (user_id, persona_lineage_id, nickname_override)"
                           " VALUES ($1, $2, 'Kitten')", users[w.mika], w.lineage)
    await conn.execute("INSERT INTO personalization_blacklist (server_id, user_disc_id) VALUES ($1, $2)",
                       ids[w.taught], w.banned)
    # The taught server is at the cap of 5 for its lineage: pre-worker rows, never reinforced.
    for age, content, tags in ((420, "The server was founded on a rainy Tuesday", None),
                               (380, "Movie night is every Friday", ["events"]),
                               (200, "The #art channel is for original work only", ["rules", "#art"]),
                               (120, "Mods prefer pings over DMs", []),
                               (90, "The server mascot is a fox named Kit", ["lore"])):
        await conn.execute(
            "INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, user_id, content, tags,"
            " created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
            ids[w.taught], personas[w.taught], w.lineage, users[w.mika], content, tags, days_ago(age))
    await conn.execute(
        "INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, content, created_at, updated_at)"
        " VALUES ($1, $2, $3, 'Quiet server: no spoilers', $4, $4)", ids[w.quiet], personas[w.quiet], w.lineage,
        days_ago(50))
    personal = [(w.mika, 0, "{user} likes green tea", 250), (w.mika, w.lineage, "{user} plays the violin", 100),
                (w.full, 0, "{user} is a night owl", 300), (w.full, 0, "{user} speaks Portuguese", 280),
                (w.full, w.lineage, "{user} collects stamps", 260), (w.full, w.lineage, "{user} has two cats", 240),
                (w.full, w.lineage, "{user} runs marathons", 220)]
    personal += [(w.hoarder, 0 if i < 2 else w.lineage, f"{{user}} kept note #{i}", 500 - i) for i in range(6)]
    for owner, lineage, content, age in personal:
        await conn.execute(
            "INSERT INTO personal_memories (user_id, persona_lineage_id, content, created_at, updated_at)"
            " VALUES ($1, $2, $3, $4, $4)", users[owner], lineage, content, days_ago(age))
    external = await conn.fetchval(
        "INSERT INTO external_identities (kind, external_key, user_id, instance_id)"
        " VALUES ('pluralkit_member', 'abcde', $1, 'pluralkit:official') RETURNING external_identity_id",
        users[w.proxy])
    namespace = await conn.fetchval(
        "INSERT INTO message_proxy_namespaces (service_id, namespace_key, short_id, display_name, instance_id)"
        " VALUES ('pluralkit', 'sys-fghij', 'fghij', 'Starlight', 'pluralkit:official')"
        " RETURNING message_proxy_namespace_id")
    await conn.execute("INSERT INTO message_proxy_identities (message_proxy_namespace_id, external_identity_id,"
                       " short_id, display_name) VALUES ($1, $2, 'abcde', 'Nova')", namespace, external)
    await conn.execute("INSERT INTO message_proxy_namespace_accounts (message_proxy_namespace_id, host_user_disc_id)"
                       " VALUES ($1, $2)", namespace, w.host)
    await conn.execute("INSERT INTO minimal_notice_refs (message_disc_id, ref_kind, ref_id)"
                       " VALUES ('840000000000000001', 'server_memory', 1)")
    await conn.execute("INSERT INTO metric_samples (metric_name, fields) VALUES"
                       " ('llm_latency', '{\"ms\": 812}'), ('llm_latency', '{\"ms\": 640}')")
    return w
