-- Summary: memory_worker.shadow_pairs keeps each dry run's answer and the bot's own outcome beside it (shadow mode).
-- Shadow mode (docs/design.md, section 3.6): a bot that still writes itself asks for the dry
-- run of each command, does its own write, then reports what it did (memory.shadow). A row is
-- one such pair: the dry run's answer, stored when it ran (the only row a dry run writes), and
-- the bot's outcome with the comparison, stored when the report came
-- (worker/domain/shadow.py decides `outcome` and `differences`). `memoryctl shadow report`
-- reads them; memory_prune() removes them with the inbox rows of their age.
CREATE TABLE memory_worker.shadow_pairs (
    command_id   text PRIMARY KEY,  -- the shadowed command's
    tenant       text NOT NULL,     -- the bot whose worker stored it (TENANT, '' for none)
    kind         text NOT NULL,
    workspace_id text NOT NULL,
    dry_status   text,              -- NULL: the report came, no dry run did (unpaired)
    dry_result   jsonb,
    dry_at       timestamptz,
    intended     text,              -- why the worker differs from TomoriBot here on purpose: secret_guard
    bot_status   text,
    bot_result   jsonb,
    bot_error    text,
    reported_at  timestamptz,
    outcome      text CHECK (outcome IN ('agreed', 'differed', 'concurrent', 'timed_out', 'unpaired')),
    differences  jsonb,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shadow_pairs_created_at ON memory_worker.shadow_pairs (created_at);
