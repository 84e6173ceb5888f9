-- What `memoryctl adopt` of the release with migrations 001 to 013 added to a TomoriBot
-- database before its migrations (then db/adopt.py's plan), for the bot of tests/tomoribot.py:
-- its memory tables lack the worker's columns, its lineages are NOT NULL, its metric_samples
-- has no event_id. Frozen: tests/integration/test_schema_upgrades.py builds a database of
-- that release from it and upgrades it.

-- column server_memories.manually_written (boolean NOT NULL DEFAULT false)
ALTER TABLE public.server_memories ADD COLUMN manually_written boolean NOT NULL DEFAULT false;

-- column server_memories.source (text NOT NULL DEFAULT 'legacy', new rows 'model')
ALTER TABLE public.server_memories ADD COLUMN source text NOT NULL DEFAULT 'legacy' CHECK (source IN ('model', 'manual', 'import', 'legacy', 'bio_seed')); ALTER TABLE public.server_memories ALTER COLUMN source SET DEFAULT 'model';

-- column server_memories.last_reinforced_at (timestamptz)
ALTER TABLE public.server_memories ADD COLUMN last_reinforced_at timestamptz;

-- column server_memories.reinforcement_count (integer NOT NULL DEFAULT 0)
ALTER TABLE public.server_memories ADD COLUMN reinforcement_count integer NOT NULL DEFAULT 0;

-- column personal_memories.manually_written (boolean NOT NULL DEFAULT false)
ALTER TABLE public.personal_memories ADD COLUMN manually_written boolean NOT NULL DEFAULT false;

-- column personal_memories.source (text NOT NULL DEFAULT 'legacy', new rows 'model')
ALTER TABLE public.personal_memories ADD COLUMN source text NOT NULL DEFAULT 'legacy' CHECK (source IN ('model', 'manual', 'import', 'legacy', 'bio_seed')); ALTER TABLE public.personal_memories ALTER COLUMN source SET DEFAULT 'model';

-- column personal_memories.last_reinforced_at (timestamptz)
ALTER TABLE public.personal_memories ADD COLUMN last_reinforced_at timestamptz;

-- column personal_memories.reinforcement_count (integer NOT NULL DEFAULT 0)
ALTER TABLE public.personal_memories ADD COLUMN reinforcement_count integer NOT NULL DEFAULT 0;

-- table memory_worker.workspace_settings (decay and the secret guard per server; TomoriBot has no column for them)
CREATE TABLE memory_worker.workspace_settings ( server_id integer PRIMARY KEY REFERENCES public.servers ON DELETE CASCADE, memory_decay_enabled boolean NOT NULL DEFAULT false, memory_decay_days integer NOT NULL DEFAULT 30 CHECK (memory_decay_days BETWEEN 1 AND 36500), secret_guard_enabled boolean);

-- table memory_worker.metric_sample_events (which metrics the bot's metric_samples already holds, so a redelivered one is stored once)
CREATE TABLE memory_worker.metric_sample_events (event_id text PRIMARY KEY, seen_at timestamptz NOT NULL DEFAULT now());

