-- The standalone layout's base, for a bot without a database of its own: created once by
-- `memoryctl migrate` on an empty database, in `public`, with TomoriBot-compatible names,
-- then brought up to date by the numbered migrations (db/migrations/) as any older database
-- is. Frozen: this is the layout of the first release; what came later (64-bit lineages,
-- naming columns, the secret guard, ...) is only in the migrations, so a fresh database and an
-- upgraded one are made the same way (tests/integration/test_schema_upgrades.py compares
-- them). Change the schema with a new migration, never here.
--
-- Every column a bot does not write has a default. Directory tables (servers, users,
-- blacklist, nicknames, proxy links) are the bot's; the worker only reads them (it registers
-- an unknown workspace with defaults so its memories have a row to hang on). An adopted
-- TomoriBot database has its own versions of these tables instead (its base: db/adopted.sql).

CREATE TABLE public.servers (
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

CREATE TABLE public.users (
    user_id       serial PRIMARY KEY,
    user_disc_id  text NOT NULL UNIQUE,
    user_nickname text,
    privacy_level integer NOT NULL DEFAULT 0 CHECK (privacy_level IN (0, 1, 2)),
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE public.personalization_blacklist (
    server_id    integer NOT NULL REFERENCES public.servers ON DELETE CASCADE,
    user_disc_id text NOT NULL,
    PRIMARY KEY (server_id, user_disc_id)
);

CREATE TABLE public.persona_nicknames (
    lineage_id integer NOT NULL,
    user_id    integer NOT NULL REFERENCES public.users ON DELETE CASCADE,
    nickname   text NOT NULL,
    PRIMARY KEY (lineage_id, user_id)
);

CREATE TABLE public.message_proxy_identities (
    user_id      integer PRIMARY KEY REFERENCES public.users ON DELETE CASCADE,
    namespace_id text NOT NULL
);

CREATE TABLE public.message_proxy_namespace_accounts (
    namespace_id      text NOT NULL,
    host_user_disc_id text NOT NULL,
    PRIMARY KEY (namespace_id, host_user_disc_id)
);


CREATE TABLE public.server_memories (
    server_memory_id    bigserial PRIMARY KEY,
    server_id           integer NOT NULL REFERENCES public.servers ON DELETE CASCADE,
    persona_id          integer,
    persona_lineage_id  integer NOT NULL,
    user_id             integer REFERENCES public.users ON DELETE SET NULL,
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

CREATE TABLE public.personal_memories (
    personal_memory_id  bigserial PRIMARY KEY,
    user_id             integer NOT NULL REFERENCES public.users ON DELETE CASCADE,
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

-- event_id: the metric's Nats-Msg-Id, so a metric redelivered after its acknowledgement was
-- lost is stored once (worker/sinks/process.py inserts ON CONFLICT DO NOTHING). Nullable: a writer
-- that knows no event id still works.
CREATE TABLE public.metric_samples (
    metric_name text NOT NULL,
    fields      jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    event_id    text
);
CREATE INDEX metric_samples_created ON public.metric_samples (created_at);
CREATE UNIQUE INDEX metric_samples_event ON public.metric_samples (event_id) WHERE event_id IS NOT NULL;
