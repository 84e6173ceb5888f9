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

from datetime import datetime, timedelta

import asyncpg

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
  tags TEXT[] DEFAULT '{{}}',
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
  tags TEXT[] DEFAULT '{{}}',
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
  tool_notice_hidden_keys TEXT[]  NOT NULL DEFAULT '{{}}',
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
  rp_channel_ids              TEXT[]   NOT NULL DEFAULT '{{}}',
  private_channel_ids         TEXT[]   NOT NULL DEFAULT '{{}}',
  crosschannel_blocklist_ids  TEXT[]   NOT NULL DEFAULT '{{}}',
  stm_privacy_bypass          BOOLEAN  NOT NULL DEFAULT false,
  thought_log_channel_disc_id TEXT,
  created_at                  TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  updated_at                  TIMESTAMPTZ NOT NULL DEFAULT NOW()
);

CREATE TABLE user_personalization_configs (
  user_id                            INT     PRIMARY KEY REFERENCES users(user_id) ON DELETE CASCADE,
  {configs_nickname}
  shortterm_cache_crossserver_opt_in BOOLEAN NOT NULL DEFAULT false,
  physical_appearance_tags           TEXT[]  NOT NULL DEFAULT '{{}}',
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


async def build(conn: asyncpg.Connection, *, before_062: bool = False, lineage_not_null: bool = True) -> None:
    await conn.execute(SCHEMA.format(
        users_nickname=",\n  user_nickname TEXT" if before_062 else "",
        configs_nickname="" if before_062 else "user_nickname TEXT,",
        naming_preferences="" if before_062 else NAMING_PREFERENCES,
        lineage_not_null="NOT NULL" if lineage_not_null else ""))
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
        found[table] = [tuple(r) for r in rows]
    return found


async def catalog(conn: asyncpg.Connection) -> list[tuple]:
    """Every schema, relation, column, constraint, index and function outside the system's."""
    return [tuple(r) for r in await conn.fetch(
        "SELECT 'rel', n.nspname, c.relname, c.relkind::text, '' FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
        "   AND n.nspname NOT LIKE 'pg_toast%'"
        " UNION ALL SELECT 'col', n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod)"
        "   || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END"
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
    return datetime.utcnow() - timedelta(days=days)
