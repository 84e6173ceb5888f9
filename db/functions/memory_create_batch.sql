-- The writes of several creates in one transaction (docs/design.md, sections 4 step 8 and 5;
-- worker/services/create_memory.py: a lone create is a batch of one). p is db/requests.py's
-- CreateBatchRequest (tests/unit/test_sql_arguments.py holds the keys read here to its fields,
-- both ways): p.owners are locked first, in the caller's order (db/repository.py's
-- lock_order(), so two batches sharing owners wait rather than deadlock), then each op runs in
-- order. An op carries a create's decision (worker/domain/create_decision.py), which is stored
-- as it is, with what a save learned under the lock (`facts`); nothing else about the
-- command is stored, and every answer and event is rendered from the two in Python
-- (worker/domain/create_result.py, events.py).
--
-- An op with `dry` true is a dry run (contracts/commands.py, Envelope.dry_run): it locks,
-- reads and decides as any other, then writes nothing (so no WAL): its row is made as it would
-- have been stored, and the id it would have created is the one the table's sequence gives next.
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
    v_scope      text;
    v_lineage    bigint;
    v_cap        integer;
    v_owner      integer;  -- servers.server_id or users.user_id: the owner's key in its table
    v_counted    bigint[];  -- the lineages whose rows count toward the cap
    v_privacy    integer;
    v_hosts      integer;
    v_protecting integer;
    v_count      integer;
    v_victim_id  bigint;
    v_victim_content text;
    v_new_id     bigint;
    v_outcome    save_outcome;
    v_dry        boolean;
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
        v_dry := (op ->> 'dry')::boolean;
        IF v_seen THEN
            SELECT * INTO v_row FROM processed_commands pc WHERE pc.command_id = v_command_id;
            IF FOUND THEN
                RETURN QUERY SELECT true, memory_stored_command(v_row);
                CONTINUE;
            END IF;
        END IF;

        IF v_plan ->> 'decided' <> 'save' AND v_dry THEN
            RETURN QUERY SELECT false, memory_stored_command(memory_unstored_command(
                v_command_id, 'create', op ->> 'workspace_id', v_plan, NULL));
            CONTINUE;
        ELSIF v_plan ->> 'decided' <> 'save' THEN
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

        v_scope := v_plan ->> 'scope';
        v_lineage := (v_plan ->> 'lineage_id')::bigint;  -- TomoriBot's lineages are bigint
        v_cap := (v_plan ->> 'cap')::integer;
        v_outcome := NULL;
        v_count := NULL;
        v_victim_id := NULL;
        v_victim_content := NULL;
        v_new_id := NULL;
        -- The owner, and what only the lock can tell about it.
        IF v_scope = 'server' THEN
            SELECT s.server_id INTO v_owner FROM directory_workspaces() s WHERE s.server_disc_id = v_plan ->> 'owner_id';
            IF v_owner IS NULL AND NOT v_dry THEN
                -- The one directory write, the same in both modes: a workspace the bot never
                -- registered gets a servers row (every other column has a default).
                INSERT INTO servers (server_disc_id) VALUES (v_plan ->> 'owner_id')
                ON CONFLICT (server_disc_id) DO NOTHING;
                SELECT s.server_id INTO v_owner FROM directory_workspaces() s
                WHERE s.server_disc_id = v_plan ->> 'owner_id';
            END IF;
            v_counted := ARRAY[v_lineage];
        ELSE
            v_owner := (v_plan ->> 'user_id')::integer;
            -- A user's global rows (lineage 0) count against every lineage's cap.
            v_counted := ARRAY[v_lineage, 0];
            -- Privacy is read again under the lock: a user who just opted out is never saved.
            SELECT u.privacy_level INTO v_privacy FROM directory_users() u WHERE u.user_id = v_owner;
            IF v_privacy IS DISTINCT FROM 0 THEN
                -- Fails closed: a vanished user row, or any level but 0 and 1, reads as full privacy
                -- (worker/domain/model.py's Privacy: 0 open, 1 partial, 2 full).
                v_outcome := CASE WHEN v_privacy = 1 THEN 'privacy_partial' ELSE 'privacy_full' END;
            ELSIF (v_plan ->> 'proxy')::boolean THEN
                -- So are a proxy identity's hosts: one at full privacy, one blacklisted here, or
                -- none left linked, and nothing is saved.
                SELECT count(*), count(*) FILTER (WHERE (h ->> 'privacy_level')::integer >= 2
                                                     OR (h ->> 'blacklisted')::boolean)
                INTO v_hosts, v_protecting
                FROM jsonb_array_elements(memory_proxy_hosts(v_owner, op ->> 'workspace_id')) h;
                IF v_hosts = 0 OR v_protecting > 0 THEN
                    v_outcome := 'host_protected';
                END IF;
            END IF;
        END IF;

        IF v_outcome IS NULL THEN
            -- The capacity rule's one home: which rows count, which may go, in what order, and
            -- the outcome (tests/integration/test_capacity_conformance.py holds this function to
            -- one table of cases). The memories are one scope-independent relation, `owned` (both
            -- tables' rows, tagged with their scope and owner key), so the count and the victim's
            -- choice are each written once.
            -- Cost: the plans stay cached (static SQL, no EXECUTE, which would be planned on
            -- every call), and with plan_cache_mode forced to generic plans (below) the other
            -- scope's branch is a one-time filter that never runs; left to choose, PostgreSQL
            -- kept custom plans, planning the count on every call (about +170 us per create,
            -- measured). `owned` is a CTE rather than a view or an SQL function: a view would
            -- pin the bot's columns in an adopted database, and a function must declare column
            -- types, which differ between TomoriBot's tables (serial ids) and the standalone
            -- layout's (bigserial).
            WITH owned AS (
                SELECT 'server'::text AS scope, m.server_id AS owner, m.persona_lineage_id AS lineage
                FROM server_memories m
                UNION ALL
                SELECT 'personal'::text, m.user_id, m.persona_lineage_id FROM personal_memories m
            )
            SELECT count(*) INTO v_count FROM owned o
            WHERE o.scope = v_scope AND o.owner = v_owner AND o.lineage = ANY (v_counted);

            -- The victim, only at the cap and when the plan may evict: as one statement with the
            -- count, every save also started the victim's index walks (about +12 us per insert,
            -- measured). The walk is the *_eviction indexes of db/migrations/001_baseline.sql,
            -- an owner's evictable rows in this order, so the victim is the first entry past the
            -- dormancy cutoff whatever the table's size (without them: 102 buffers and 0.14 ms
            -- per choice at 1.2M rows, against 4 buffers and 0.02 ms).
            IF v_count = v_cap AND jsonb_array_length(v_plan -> 'blocked_by') = 0 THEN
                WITH owned AS (
                    SELECT 'server'::text AS scope, m.server_id AS owner, m.server_memory_id AS id,
                           m.persona_lineage_id AS lineage, m.manually_written, m.created_at, m.last_reinforced_at,
                           m.content
                    FROM server_memories m
                    UNION ALL
                    SELECT 'personal'::text, m.user_id, m.personal_memory_id, m.persona_lineage_id, m.manually_written,
                           m.created_at, m.last_reinforced_at, m.content
                    FROM personal_memories m
                )
                SELECT o.id, o.content INTO v_victim_id, v_victim_content FROM owned o
                WHERE o.scope = v_scope AND o.owner = v_owner
                  AND o.lineage = v_lineage AND v_lineage <> 0 AND NOT o.manually_written
                  AND coalesce(o.last_reinforced_at, o.created_at)
                      < now() - make_interval(days => (v_plan ->> 'decay_days')::integer)
                -- The eviction order (never reinforced first, then least recently reinforced;
                -- ties by age, then id): this one line, walking the *_eviction index in the same
                -- order (tests/integration/test_hot_path_plans.py fails on a Sort node, so a
                -- changed line needs that index rebuilt in a migration).
                ORDER BY o.last_reinforced_at IS NOT NULL, o.last_reinforced_at, o.created_at, o.id
                LIMIT 1;
            END IF;

            -- Over the cap (the cap was lowered) a save is refused: replacing one row would keep
            -- the owner over it, and one save never deletes more than one row.
            v_outcome := CASE
                WHEN v_count < v_cap THEN 'saved'
                WHEN v_count > v_cap THEN 'over_cap'
                WHEN v_victim_id IS NOT NULL THEN 'saved_with_eviction'
                ELSE 'at_cap' END;
        END IF;

        -- The write: the two tables' columns differ (a server row names its persona and teacher).
        IF v_outcome IN ('saved', 'saved_with_eviction') AND v_dry THEN
            v_new_id := memory_next_id(v_scope);
        ELSIF v_outcome IN ('saved', 'saved_with_eviction') THEN
            IF v_scope = 'server' THEN
                IF v_victim_id IS NOT NULL THEN
                    DELETE FROM server_memories WHERE server_memory_id = v_victim_id;
                END IF;
                INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, user_id, content,
                                             manually_written, source)
                VALUES (v_owner, (v_plan ->> 'persona_id')::integer, v_lineage,
                        (SELECT u.user_id FROM directory_users() u WHERE u.user_disc_id = v_plan ->> 'teacher_id'),
                        v_plan ->> 'content', false, 'model')
                RETURNING server_memory_id INTO v_new_id;
            ELSE
                IF v_victim_id IS NOT NULL THEN
                    DELETE FROM personal_memories WHERE personal_memory_id = v_victim_id;
                END IF;
                INSERT INTO personal_memories (user_id, persona_lineage_id, content, manually_written, source)
                VALUES (v_owner, v_lineage, v_plan ->> 'content', false, 'model')
                RETURNING personal_memory_id INTO v_new_id;
            END IF;
        END IF;

        IF v_dry THEN
            RETURN QUERY SELECT false, memory_stored_command(memory_unstored_command(
                v_command_id, 'create', op ->> 'workspace_id', v_plan, memory_save_facts(v_outcome, v_new_id,
                v_victim_id, v_victim_content, v_count)));
            CONTINUE;
        END IF;
        -- A plain insert, whatever the outcome: should a repeat slip past the look above, the
        -- transaction fails whole (this command's memory row with it) and the caller runs the
        -- command once more, finding it stored.
        INSERT INTO processed_commands (command_id, kind, workspace_id, decision, facts, applied_by)
        VALUES (v_command_id, 'create', op ->> 'workspace_id', v_plan,
                memory_save_facts(v_outcome, v_new_id, v_victim_id, v_victim_content, v_count),
                (op ->> 'applied_by')::bigint)
        RETURNING * INTO v_row;
        RETURN QUERY SELECT false, memory_stored_command(v_row);
    END LOOP;
END;
$$;

-- Planned once per session (memory_create_context.sql says why; the `owned` note above says
-- what it buys here). CREATE OR REPLACE resets the setting: it stays here, beside the body.
ALTER FUNCTION memory_worker.memory_create_batch(jsonb) SET plan_cache_mode = force_generic_plan;
