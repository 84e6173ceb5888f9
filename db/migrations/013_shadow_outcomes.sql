-- Summary: memory_worker.shadow_pairs gains the outcome nothing_compared and the dry run's owner (shadow mode).
-- A report whose result compares no field is its own outcome, never an agreement
-- (worker/domain/shadow.py). A dry run that would create memories keeps the lock key of
-- their owner (scope, Discord id), so a report can tell whether an insert of that same owner
-- came between the dry run and the bot's own write (`concurrent`). The table is the worker's
-- own, the same in both modes.
ALTER TABLE memory_worker.shadow_pairs
    DROP CONSTRAINT shadow_pairs_outcome_check,
    ADD CONSTRAINT shadow_pairs_outcome_check
        CHECK (outcome IN ('agreed', 'differed', 'concurrent', 'timed_out', 'unpaired', 'nothing_compared')),
    ADD COLUMN owner_scope text CHECK (owner_scope IN ('server', 'personal')),  -- NULL: creates nothing
    ADD COLUMN owner_id    text;
