-- Tables of DESIGN.md section 7, with TomoriBot-compatible names. Every column a bot does
-- not write has a default. Directory tables (servers, users, blacklist, nicknames, proxy
-- links) are the bot's; the worker only reads them (it registers an unknown workspace with
-- defaults so its memories have a row to hang on).

CREATE TABLE servers (
    server_id                 serial PRIMARY KEY,
    server_disc_id            text NOT NULL UNIQUE,
    self_teaching_enabled     boolean NOT NULL DEFAULT true,
    personal_memories_enabled boolean NOT NULL DEFAULT true,
    memory_decay_enabled      boolean NOT NULL DEFAULT false,
    -- Bounded so date arithmetic (now() - decay days) can never fail.
    memory_decay_days         integer NOT NULL DEFAULT 30 CHECK (memory_decay_days BETWEEN 1 AND 36500),
    tool_notice_verbosity     text NOT NULL DEFAULT 'minimal'
                              CHECK (tool_notice_verbosity IN ('minimal', 'verbose')),
    tool_notice_hidden_keys   text[] NOT NULL DEFAULT '{}',
    thought_log_channel_id    text,
    private_channel_ids       text[] NOT NULL DEFAULT '{}',
    created_at                timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    user_id       serial PRIMARY KEY,
    user_disc_id  text NOT NULL UNIQUE,
    user_nickname text,
    privacy_level integer NOT NULL DEFAULT 0 CHECK (privacy_level IN (0, 1, 2)),
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE personalization_blacklist (
    server_id    integer NOT NULL REFERENCES servers ON DELETE CASCADE,
    user_disc_id text NOT NULL,
    PRIMARY KEY (server_id, user_disc_id)
);

CREATE TABLE persona_nicknames (
    lineage_id integer NOT NULL,
    user_id    integer NOT NULL REFERENCES users ON DELETE CASCADE,
    nickname   text NOT NULL,
    PRIMARY KEY (lineage_id, user_id)
);

CREATE TABLE message_proxy_identities (
    user_id      integer PRIMARY KEY REFERENCES users ON DELETE CASCADE,
    namespace_id text NOT NULL
);

CREATE TABLE message_proxy_namespace_accounts (
    namespace_id      text NOT NULL,
    host_user_disc_id text NOT NULL,
    PRIMARY KEY (namespace_id, host_user_disc_id)
);

CREATE TABLE bio_seeds (
    user_id   integer PRIMARY KEY REFERENCES users ON DELETE CASCADE,
    memory_id bigint,
    seeded_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE server_memories (
    server_memory_id    bigserial PRIMARY KEY,
    server_id           integer NOT NULL REFERENCES servers ON DELETE CASCADE,
    persona_id          integer,
    persona_lineage_id  integer NOT NULL,
    user_id             integer REFERENCES users ON DELETE SET NULL,
    content             text NOT NULL,
    tags                text[] NOT NULL DEFAULT '{}',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    manually_written    boolean NOT NULL DEFAULT false,
    source              text NOT NULL DEFAULT 'model'
                        CHECK (source IN ('model', 'manual', 'import', 'legacy', 'bio_seed')),
    last_reinforced_at  timestamptz,
    reinforcement_count integer NOT NULL DEFAULT 0
);
-- Every per-command query is bounded to one owner and lineage: count and eviction scan at
-- most about a cap's worth of rows whatever the table size.
CREATE INDEX server_memories_owner ON server_memories (server_id, persona_lineage_id);

CREATE TABLE personal_memories (
    personal_memory_id  bigserial PRIMARY KEY,
    user_id             integer NOT NULL REFERENCES users ON DELETE CASCADE,
    persona_lineage_id  integer NOT NULL,
    content             text NOT NULL,
    tags                text[] NOT NULL DEFAULT '{}',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    manually_written    boolean NOT NULL DEFAULT false,
    source              text NOT NULL DEFAULT 'model'
                        CHECK (source IN ('model', 'manual', 'import', 'legacy', 'bio_seed')),
    last_reinforced_at  timestamptz,
    reinforcement_count integer NOT NULL DEFAULT 0
);
CREATE INDEX personal_memories_owner ON personal_memories (user_id, persona_lineage_id);

-- The inbox: one stored result per command id, written in the command's own transaction.
-- workspace_id: a result is never handed to another workspace (ids must be unique, but a
-- clash is refused rather than answered).
CREATE TABLE processed_commands (
    command_id   text PRIMARY KEY,
    kind         text NOT NULL,
    workspace_id text,
    status       text NOT NULL,
    result       jsonb NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX processed_commands_processed_at ON processed_commands (processed_at);

-- The transactional outbox: events become visible only when the command commits.
CREATE TABLE outbox (
    id           bigserial PRIMARY KEY,
    command_id   text NOT NULL,
    subject      text NOT NULL,
    headers      jsonb NOT NULL DEFAULT '{}',
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
CREATE INDEX outbox_command ON outbox (command_id);
CREATE INDEX outbox_published_at ON outbox (published_at) WHERE published_at IS NOT NULL;

-- event_id: the metric's Nats-Msg-Id, so a metric redelivered after its acknowledgement was
-- lost is stored once (worker/sinks.py inserts ON CONFLICT DO NOTHING). Nullable: a writer
-- that knows no event id still works.
CREATE TABLE metric_samples (
    metric_name text NOT NULL,
    fields      jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    event_id    text
);
CREATE INDEX metric_samples_created ON metric_samples (created_at);
CREATE UNIQUE INDEX metric_samples_event ON metric_samples (event_id) WHERE event_id IS NOT NULL;
