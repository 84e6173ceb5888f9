-- The dry runs of several creates (contracts/commands.py, Envelope.dry_run): each decided as
-- memory_create_batch() decides it, under the same locks, and nothing applied. p is
-- db/requests.py's CreateBatchRequest, as for memory_create_batch(). A save is decided by
-- memory_save_decide(), which is STABLE, so PostgreSQL refuses any write it might be given;
-- this function writes nothing itself (so no WAL), and the writes of a save are
-- memory_create_batch()'s alone, so a write added there cannot run in a dry run.
--
-- One row per op, in order, as memory_create_batch() returns them: `duplicate` when the
-- command was stored already (answered as a repeat), and the command as it would have been
-- stored; the id a save would have created is the one the table's sequence gives next.
CREATE OR REPLACE FUNCTION memory_worker.memory_create_dry_batch(p jsonb)
RETURNS TABLE (duplicate boolean, stored jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    owner   jsonb;
    op      jsonb;
    v_plan  jsonb;
    v_row   processed_commands;
    v_save  record;  -- memory_save_decide()'s answer: what the save would do
    v_facts jsonb;
BEGIN
    -- Locked as a real run locks, so a dry run sees the rows a real one would.
    FOR owner IN SELECT value FROM jsonb_array_elements(p -> 'owners') LOOP
        PERFORM memory_lock_owner(owner ->> 0, owner ->> 1);
    END LOOP;
    FOR op IN SELECT value FROM jsonb_array_elements(p -> 'ops') LOOP
        v_plan := op -> 'decision';
        SELECT * INTO v_row FROM processed_commands pc WHERE pc.command_id = op ->> 'command_id';
        IF FOUND THEN
            RETURN QUERY SELECT true, memory_stored_command(v_row);
            CONTINUE;
        END IF;
        v_facts := NULL;
        IF v_plan ->> 'decided' = 'save' THEN
            v_save := memory_save_decide(v_plan, op ->> 'workspace_id');
            v_facts := memory_save_facts(v_save.outcome,
                                         CASE WHEN v_save.outcome IN ('saved', 'saved_with_eviction')
                                              THEN memory_next_id(v_plan ->> 'scope') END,
                                         v_save.victim_id, v_save.victim_content, v_save.counted);
        END IF;
        RETURN QUERY SELECT false, memory_stored_command(memory_unstored_command(
            op ->> 'command_id', 'create', op ->> 'workspace_id', v_plan, v_facts));
    END LOOP;
END;
$$;

-- Planned once per session, as memory_create_batch() (memory_save_decide's plans among them).
ALTER FUNCTION memory_worker.memory_create_dry_batch(jsonb) SET plan_cache_mode = force_generic_plan;
