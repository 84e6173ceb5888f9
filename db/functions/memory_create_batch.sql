-- The writes of several creates in one transaction (docs/design.md, sections 4 step 8 and 5;
-- worker/kinds/create/service.py: a lone create is a batch of one). p is db/requests.py's
-- CreateBatchRequest (tests/unit/test_sql_arguments.py holds the keys read here to its fields,
-- both ways): p.owners are locked first, in the caller's order (db/transaction.py's
-- lock_order(), so two batches sharing owners wait rather than deadlock), then each op runs in
-- order. An op carries a create's decision (worker/kinds/create/record.py), which is stored
-- as it is, with what a save learned under the lock (`facts`); nothing else about the
-- command is stored, and every answer and event is rendered from the two in Python
-- (worker/kinds/create/rendering.py, events.py).
--
-- A save is decided by memory_save_decide() (the capacity rule's one home) and applied here:
-- these writes are the only ones a create makes. A dry run (memory_create_dry_batch) decides
-- the same way and never comes here.
--
-- One row per op, in order: `duplicate` when the command was stored already (a repeat that
-- raced the original; worker/services/stored.py's seen_before() decides what it answers and
-- publishes), and the command as stored (memory_stored_command). Any error rolls the whole
-- batch back; the caller then runs the commands one by one.
CREATE OR REPLACE FUNCTION memory_worker.memory_create_batch(p jsonb)
RETURNS TABLE (duplicate boolean, stored jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    owner        jsonb;
    op           jsonb;
    v_plan       jsonb;
    v_row        processed_commands;
    v_seen       boolean;
    v_command_id text;
    v_owner      integer;  -- servers.server_id or users.user_id: the owner's key in its table
    v_save       record;  -- memory_save_decide()'s answer: what the save does
    v_new_id     bigint;
BEGIN
    FOR owner IN SELECT value FROM jsonb_array_elements(p -> 'owners') LOOP
        PERFORM memory_lock_owner(owner ->> 0, owner ->> 1);
    END LOOP;
    -- Repeats are rare: one look for all ops, and a look per op only when one was found.
    v_seen := EXISTS (SELECT 1 FROM processed_commands pc
                      WHERE pc.command_id IN (SELECT e ->> 'command_id' FROM jsonb_array_elements(p -> 'ops') e));
    FOR op IN SELECT value FROM jsonb_array_elements(p -> 'ops') LOOP
        v_command_id := op ->> 'command_id';
        v_plan := op -> 'decision';
        IF v_seen THEN
            SELECT * INTO v_row FROM processed_commands pc WHERE pc.command_id = v_command_id;
            IF FOUND THEN
                RETURN QUERY SELECT true, memory_stored_command(v_row);
                CONTINUE;
            END IF;
        END IF;

        IF v_plan ->> 'decided' <> 'save' THEN
            -- A refusal decided before the lock writes nothing else, so a racing delivery's row
            -- stored meanwhile is simply its answer (a save cannot do that: see its insert below).
            INSERT INTO processed_commands (command_id, kind, workspace_id, decision, applied_by)
            VALUES (v_command_id, 'create', op ->> 'workspace_id', v_plan, (op ->> 'applied_by')::bigint)
            ON CONFLICT (command_id) DO NOTHING
            RETURNING * INTO v_row;
            IF FOUND THEN
                RETURN QUERY SELECT false, memory_stored_command(v_row);
            ELSE
                SELECT * INTO v_row FROM processed_commands pc WHERE pc.command_id = v_command_id;
                RETURN QUERY SELECT true, memory_stored_command(v_row);
            END IF;
            CONTINUE;
        END IF;

        -- What the save does, decided under the lock (memory_save_decide, the capacity rule's
        -- one home), then done: the apply below is the only write of a save.
        v_save := memory_save_decide(v_plan, op ->> 'workspace_id');
        v_owner := v_save.owner_key;
        v_new_id := NULL;
        -- The write: the two tables' columns differ (a server row names its persona and teacher).
        IF v_save.outcome IN ('saved', 'saved_with_eviction') AND v_plan ->> 'scope' = 'server' THEN
            IF v_owner IS NULL THEN
                -- The one directory write, the same in both modes: a workspace the bot never
                -- registered gets a servers row (every other column has a default).
                INSERT INTO servers (server_disc_id) VALUES (v_plan ->> 'owner_id')
                ON CONFLICT (server_disc_id) DO NOTHING;
                SELECT s.server_id INTO v_owner FROM directory_workspaces() s
                WHERE s.server_disc_id = v_plan ->> 'owner_id';
            END IF;
            IF v_save.victim_id IS NOT NULL THEN
                DELETE FROM server_memories WHERE server_memory_id = v_save.victim_id;
            END IF;
            INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, user_id, content,
                                         manually_written, source)
            VALUES (v_owner, (v_plan ->> 'persona_id')::integer, (v_plan ->> 'lineage_id')::bigint,
                    (SELECT u.user_id FROM directory_users() u WHERE u.user_disc_id = v_plan ->> 'teacher_id'),
                    v_plan ->> 'content', false, 'model')
            RETURNING server_memory_id INTO v_new_id;
        ELSIF v_save.outcome IN ('saved', 'saved_with_eviction') THEN
            IF v_save.victim_id IS NOT NULL THEN
                DELETE FROM personal_memories WHERE personal_memory_id = v_save.victim_id;
            END IF;
            INSERT INTO personal_memories (user_id, persona_lineage_id, content, manually_written, source)
            VALUES (v_owner, (v_plan ->> 'lineage_id')::bigint, v_plan ->> 'content', false, 'model')
            RETURNING personal_memory_id INTO v_new_id;
        END IF;

        -- A plain insert, whatever the outcome: should a repeat slip past the look above, the
        -- transaction fails whole (this command's memory row with it) and the caller runs the
        -- command once more, finding it stored.
        INSERT INTO processed_commands (command_id, kind, workspace_id, decision, facts, applied_by)
        VALUES (v_command_id, 'create', op ->> 'workspace_id', v_plan,
                memory_save_facts(v_save.outcome, v_new_id, v_save.victim_id, v_save.victim_content, v_save.counted),
                (op ->> 'applied_by')::bigint)
        RETURNING * INTO v_row;
        RETURN QUERY SELECT false, memory_stored_command(v_row);
    END LOOP;
END;
$$;

-- Planned once per session (memory_create_context.sql says why; memory_save_decide.sql's
-- `owned` note says what it buys there, whose plans follow this setting). CREATE OR REPLACE resets the setting: it stays here, beside the body.
ALTER FUNCTION memory_worker.memory_create_batch(jsonb) SET plan_cache_mode = force_generic_plan;
