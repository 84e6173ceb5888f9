-- db/standalone.sql of the release with migrations 001 to 013, which a standalone database
-- of that release was created from (before its migrations ran). Frozen:
-- tests/integration/test_schema_upgrades.py builds a database of that release from it and
-- upgrades it.

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
    -- The secret guard (worker/domain/secret_guard.py); NULL: no choice made, the operator's
    -- SECRET_GUARD_DEFAULT applies.
    secret_guard_enabled      boolean,
    created_at                timestamptz NOT NULL DEFAULT now()
);

-- The naming columns are what TomoriBot keeps in user_personalization_configs: affixes a
-- person set for themselves (null: not set, '': none) and how they are addressed.
CREATE TABLE public.users (
    user_id          serial PRIMARY KEY,
    user_disc_id     text NOT NULL UNIQUE,
    user_nickname    text,
    privacy_level    integer NOT NULL DEFAULT 0 CHECK (privacy_level IN (0, 1, 2)),
    prefix_override  text,
    suffix_override  text,
    addressing_style text CONSTRAINT users_addressing_style_check
                     CHECK (addressing_style IN ('masculine', 'feminine', 'neutral')),
    created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE public.personalization_blacklist (
    server_id    integer NOT NULL REFERENCES public.servers ON DELETE CASCADE,
    user_disc_id text NOT NULL,
    PRIMARY KEY (server_id, user_disc_id)
);

-- What a person set for one persona lineage (TomoriBot's user_persona_naming_preferences).
CREATE TABLE public.persona_nicknames (
    lineage_id      bigint NOT NULL,
    user_id         integer NOT NULL REFERENCES public.users ON DELETE CASCADE,
    nickname        text,
    prefix_override text,
    suffix_override text,
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
    persona_lineage_id  bigint NOT NULL,
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
    persona_lineage_id  bigint NOT NULL,
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
