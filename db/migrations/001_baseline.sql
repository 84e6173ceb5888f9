-- Summary: the inbox, the outbox, bio seeds and the memory indexes.
-- The worker's tables, in its own schema (docs/design.md, sections 7 and 7.1): the same in the
-- standalone layout and in an adopted bot database. db/migrate.py runs this after the layout
-- (the standalone tables, or a bot's memory tables with the worker's columns added). The
-- worker's functions are not migrations: each lives in a file of its own in db/functions/,
-- made again whenever the files change (db/functions/__init__.py).

-- ----------------------------------------------------------------------------------------
-- Tables

-- A proxy identity's one-time bio seed (docs/design.md, section 8.3); TomoriBot has no equivalent.
CREATE TABLE memory_worker.bio_seeds (
    user_id   integer PRIMARY KEY REFERENCES public.users ON DELETE CASCADE,
    memory_id bigint,
    seeded_at timestamptz NOT NULL DEFAULT now()
);

-- The inbox: one stored result per command id, written in the command's own transaction.
-- workspace_id: a result is never handed to another workspace (ids must be unique, but a
-- clash is refused rather than answered).
CREATE TABLE memory_worker.processed_commands (
    command_id   text PRIMARY KEY,
    kind         text NOT NULL,
    workspace_id text,
    status       text NOT NULL,
    result       jsonb NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX processed_commands_processed_at ON processed_commands (processed_at);

-- The transactional outbox: events become visible only when the command commits.
CREATE TABLE memory_worker.outbox (
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

-- The memory tables' indexes (the standalone layout's or the bot's tables): every per-command
-- query is bounded to one owner and lineage, so count and eviction scan at most about a cap's
-- worth of rows whatever the table size.
CREATE INDEX IF NOT EXISTS server_memories_owner ON public.server_memories (server_id, persona_lineage_id);
CREATE INDEX IF NOT EXISTS personal_memories_owner ON public.personal_memories (user_id, persona_lineage_id);

-- The eviction choice (memory_create_batch) as an index walk: an owner's evictable rows in
-- eviction order (never reinforced first, then least recently reinforced; ties by age, then
-- id), so the victim is the first entry past the dormancy cutoff. Without it every save at
-- the cap reads and sorts all of the owner's rows, which are scattered over the table: the
-- cost then grows with the table (measured: 102 buffers and 0.14 ms per choice at 1.2M rows,
-- 4 buffers and 0.02 ms with the index).
CREATE INDEX IF NOT EXISTS server_memories_eviction ON public.server_memories
    (server_id, persona_lineage_id, (last_reinforced_at IS NOT NULL), last_reinforced_at, created_at,
     server_memory_id)
    WHERE NOT manually_written;
CREATE INDEX IF NOT EXISTS personal_memories_eviction ON public.personal_memories
    (user_id, persona_lineage_id, (last_reinforced_at IS NOT NULL), last_reinforced_at, created_at,
     personal_memory_id)
    WHERE NOT manually_written;
