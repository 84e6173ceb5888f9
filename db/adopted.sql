-- Summary: the worker's columns on the bot's memory tables (where missing; the bot's rows read as source 'legacy'), NOT NULL persona lineages, memory_worker.workspace_settings, and the worker's metric tables the bot lacks.
-- The adopted layout's base: what `memoryctl adopt` adds to a TomoriBot database (in its
-- transaction, after the worker's schema and before the numbered migrations, which then run
-- as they do in the standalone layout). Frozen: this is what adoption added at the first
-- release; what came later (the secret guard's setting, ...) is only in the migrations, so an
-- adopted database and one adopted by an older release are made the same way
-- (tests/integration/test_schema_upgrades.py compares them). Change the schema with a new
-- migration, never here.
--
-- Bot rows are never rewritten: each column is added with a constant default (no row
-- rewrite, no trigger fires), so every existing row keeps its ids, content, tags and
-- timestamps. A column the bot's table already has is left as it is.

DO $$
DECLARE
    v_table text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['server_memories', 'personal_memories'] LOOP
        EXECUTE format('ALTER TABLE public.%I'
                       ' ADD COLUMN IF NOT EXISTS manually_written boolean NOT NULL DEFAULT false', v_table);
        -- The rows there are pre-worker ('legacy'); rows written from now on default to 'model'.
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
                       WHERE attrelid = format('public.%I', v_table)::regclass
                         AND attname = 'source' AND NOT attisdropped) THEN
            EXECUTE format('ALTER TABLE public.%I ADD COLUMN source text NOT NULL DEFAULT ''legacy'''
                           ' CHECK (source IN (''model'', ''manual'', ''import'', ''legacy'', ''bio_seed''));'
                           ' ALTER TABLE public.%I ALTER COLUMN source SET DEFAULT ''model''', v_table, v_table);
        END IF;
        EXECUTE format('ALTER TABLE public.%I ADD COLUMN IF NOT EXISTS last_reinforced_at timestamptz', v_table);
        EXECUTE format('ALTER TABLE public.%I'
                       ' ADD COLUMN IF NOT EXISTS reinforcement_count integer NOT NULL DEFAULT 0', v_table);
        -- TomoriBot's schema.sql sets this itself once every row is backfilled; a row without
        -- a lineage belongs to no owner, so the worker could never count it. Adoption fails
        -- here, changing nothing, while such rows exist.
        EXECUTE format('ALTER TABLE public.%I ALTER COLUMN persona_lineage_id SET NOT NULL', v_table);
    END LOOP;
END;
$$;

-- Decay per server: TomoriBot has no column for it.
CREATE TABLE memory_worker.workspace_settings (
    server_id            integer PRIMARY KEY REFERENCES public.servers ON DELETE CASCADE,
    memory_decay_enabled boolean NOT NULL DEFAULT false,
    memory_decay_days    integer NOT NULL DEFAULT 30 CHECK (memory_decay_days BETWEEN 1 AND 36500)
);

-- Metric samples go to the bot's own metric_samples (db/facts.py). Without an event_id column
-- there, the worker keeps the event ids it stored in a table of its own, so a redelivered
-- metric is stored once; a bot without the table gets the worker's.
DO $$
DECLARE
    v_samples regclass := to_regclass('public.metric_samples');
BEGIN
    IF v_samples IS NULL THEN
        CREATE TABLE memory_worker.metric_samples (
            metric_name text NOT NULL,
            fields      jsonb NOT NULL,
            created_at  timestamptz NOT NULL DEFAULT now(),
            event_id    text
        );
        CREATE INDEX metric_samples_created ON memory_worker.metric_samples (created_at);
        CREATE UNIQUE INDEX metric_samples_event ON memory_worker.metric_samples (event_id)
            WHERE event_id IS NOT NULL;
    ELSIF EXISTS (SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = v_samples AND attname = 'fields'
                                                           AND NOT attisdropped)
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = v_samples
                                                                  AND attname = 'event_id' AND NOT attisdropped) THEN
        CREATE TABLE memory_worker.metric_sample_events (
            event_id text PRIMARY KEY,
            seen_at  timestamptz NOT NULL DEFAULT now()
        );
    END IF;
END;
$$;
