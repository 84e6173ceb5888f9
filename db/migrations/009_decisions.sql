-- Summary: a create's inbox row keeps its decision and what its save learned instead of its result; the outbox table is dropped.
-- A create's result is no longer stored: its inbox row keeps the decision the worker made
-- (`decision`) and what the save learned under the owner lock (`facts`, which until now held
-- the event facts of 007), and every answer and event is rendered from the two
-- (worker/domain/create_result.py). Rows of other kinds keep their result as sent, with its
-- `status`; those columns are NULL for a create from now on, and a row keeps one or the other.
-- Creates stored before keep their result and are answered with it.
--
-- The outbox table, which only the start-up drain of releases 006 to 008 still read, is
-- dropped; this stops, changing nothing, while an older release left events unpublished in it
-- (deploy/README.md, "Upgrading").

DO $$
DECLARE
    v_left bigint := (SELECT count(*) FROM memory_worker.outbox WHERE published_at IS NULL);
BEGIN
    IF v_left > 0 THEN
        RAISE EXCEPTION '% events an older release wrote to memory_worker.outbox are still unpublished', v_left
            USING HINT = 'start the previous release once (it publishes them at start-up), stop it, then migrate'
                         ' again (deploy/README.md, "Upgrading")';
    END IF;
END;
$$;
DROP TABLE memory_worker.outbox;

ALTER TABLE memory_worker.processed_commands RENAME COLUMN event_facts TO facts;
ALTER TABLE memory_worker.processed_commands
    ADD COLUMN decision jsonb,
    ALTER COLUMN status DROP NOT NULL,
    ALTER COLUMN result DROP NOT NULL,
    ADD CONSTRAINT processed_commands_answerable CHECK (result IS NOT NULL OR decision IS NOT NULL) NOT VALID;
