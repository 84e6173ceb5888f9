-- The writes of several creates in one transaction (worker/services/create_batch.py; a lone
-- create is a batch of one): p.owners locked first, in the caller's order, then each op in
-- order. An op is a refusal decided before the lock (type 'record': its result stored as is)
-- or a save (type 'save'). One row per op, in order:
--
-- - a command stored already (a repeat that raced the original): duplicate, with what was
--   stored; worker/services/base.py's seen_before() decides what it answers and publishes;
-- - a save that wrote: its outcome (saved, saved_with_eviction), the result as stored, the
--   event facts and time its events are built from;
-- - a save that wrote nothing: its outcome and the count read under the lock, nothing stored;
-- - a refusal stored: outcome NULL, the result as stored.
CREATE OR REPLACE FUNCTION memory_worker.memory_create_batch(p jsonb)
RETURNS TABLE (duplicate boolean, outcome text, result text, current_count integer, event_time text,
               stored_kind text, stored_workspace text, stored_tenant text, applied_by bigint, events jsonb,
               event_facts jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    owner        jsonb;
    op           jsonb;
    v_seen       boolean;
    v_time       text := memory_event_time(now());  -- every row of this transaction has it
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
    v_text       text;
    v_forgotten  text;
    v_status     text;
    v_facts      jsonb;
BEGIN
    FOR owner IN SELECT value FROM jsonb_array_elements(p -> 'owners') LOOP
        PERFORM memory_lock_owner(owner ->> 0, owner ->> 1);
    END LOOP;
    -- Repeats are rare: one look for all ops, and a look per op only when one was found.
    v_seen := EXISTS (SELECT 1 FROM processed_commands pc
                      WHERE pc.command_id IN (SELECT e ->> 'command_id' FROM jsonb_array_elements(p -> 'ops') e));
    FOR op IN SELECT value FROM jsonb_array_elements(p -> 'ops') LOOP
        v_command_id := op ->> 'command_id';
        IF v_seen THEN
            RETURN QUERY SELECT true, NULL::text, pc.result::text, NULL::integer, memory_event_time(pc.processed_at),
                                pc.kind, pc.workspace_id, pc.tenant, pc.applied_by, pc.events, pc.event_facts
                         FROM processed_commands pc WHERE pc.command_id = v_command_id;
            IF FOUND THEN
                CONTINUE;
            END IF;
        END IF;

        IF op ->> 'type' = 'record' THEN
            -- A refusal writes nothing else, so a racing delivery's row stored meanwhile is
            -- simply its answer (a save cannot do that: see its insert below).
            INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)
            VALUES (v_command_id, 'create', op ->> 'workspace_id', op ->> 'status', (op ->> 'result')::json)
            ON CONFLICT (command_id) DO NOTHING;
            IF FOUND THEN
                RETURN QUERY SELECT false, NULL::text, op ->> 'result', NULL::integer, v_time, 'create'::text,
                                    op ->> 'workspace_id', NULL::text, NULL::bigint, NULL::jsonb, NULL::jsonb;
            ELSE
                RETURN QUERY SELECT true, NULL::text, pc.result::text, NULL::integer, memory_event_time(pc.processed_at),
                                    pc.kind, pc.workspace_id, pc.tenant, pc.applied_by, pc.events, pc.event_facts
                             FROM processed_commands pc WHERE pc.command_id = v_command_id;
            END IF;
            CONTINUE;
        END IF;

        v_scope := op ->> 'scope';
        v_lineage := (op ->> 'lineage_id')::bigint;  -- TomoriBot's lineages are bigint
        v_cap := (op ->> 'cap')::integer;
        v_outcome := NULL;
        v_count := NULL;
        v_victim_id := NULL;
        v_victim_content := NULL;
        -- The owner, and what only the lock can tell about it.
        IF v_scope = 'server' THEN
            SELECT s.server_id INTO v_owner FROM directory_workspaces() s WHERE s.server_disc_id = op ->> 'workspace_id';
            IF v_owner IS NULL THEN
                -- The one directory write, the same in both modes: a workspace the bot never
                -- registered gets a servers row (every other column has a default).
                INSERT INTO servers (server_disc_id) VALUES (op ->> 'workspace_id')
                ON CONFLICT (server_disc_id) DO NOTHING;
                SELECT s.server_id INTO v_owner FROM directory_workspaces() s WHERE s.server_disc_id = op ->> 'workspace_id';
            END IF;
            v_counted := ARRAY[v_lineage];
        ELSE
            v_owner := (op ->> 'user_id')::integer;
            -- A user's global rows (lineage 0) count against every lineage's cap.
            v_counted := ARRAY[v_lineage, 0];
            -- Privacy is read again under the lock: a user who just opted out is never saved.
            SELECT u.privacy_level INTO v_privacy FROM directory_users() u WHERE u.user_id = v_owner;
            IF v_privacy IS DISTINCT FROM 0 THEN
                -- Fails closed: a vanished user row, or any level but 0 and 1, reads as full privacy
                -- (worker/domain/model.py's Privacy: 0 open, 1 partial, 2 full).
                v_outcome := CASE WHEN v_privacy = 1 THEN 'privacy_partial' ELSE 'privacy_full' END;
            ELSIF (op ->> 'proxy')::boolean THEN
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
            -- `owned` is both tables' rows under one shape (005_one_save_path.sql says why it
            -- is planned well); counts_toward_cap(): the lineages in v_counted.
            WITH owned AS (
                SELECT 'server'::text AS scope, m.server_id AS owner, m.persona_lineage_id AS lineage
                FROM server_memories m
                UNION ALL
                SELECT 'personal'::text, m.user_id, m.persona_lineage_id FROM personal_memories m
            )
            SELECT count(*) INTO v_count FROM owned o
            WHERE o.scope = v_scope AND o.owner = v_owner AND o.lineage = ANY (v_counted);

            IF v_count = v_cap AND jsonb_typeof(op -> 'eviction') = 'object' THEN  -- the plan may evict
                -- is_eligible() and eviction_order_key(): never reinforced first, then least
                -- recently reinforced; ties by age, then id (an index walk: the *_eviction indexes).
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
                      < now() - make_interval(days => (op #>> '{eviction,facts,decay_days}')::integer)
                ORDER BY o.last_reinforced_at IS NOT NULL, o.last_reinforced_at, o.created_at, o.id
                LIMIT 1;
            END IF;

            -- The capacity rule: capacity_action() of tests/support/capacity_rule.py.
            v_outcome := CASE
                WHEN v_count < v_cap THEN 'saved'
                WHEN v_count > v_cap THEN 'over_cap'
                WHEN v_victim_id IS NOT NULL THEN 'saved_with_eviction'
                ELSE 'at_cap' END;
        END IF;

        IF v_outcome NOT IN ('saved', 'saved_with_eviction') THEN
            -- Nothing written, nothing stored: the caller words this refusal and stores it.
            RETURN QUERY SELECT false, v_outcome::text, NULL::text, v_count, NULL::text, NULL::text, NULL::text,
                                NULL::text, NULL::bigint, NULL::jsonb, NULL::jsonb;
            CONTINUE;
        END IF;

        -- The write: the two tables' columns differ (a server row names its persona and teacher).
        IF v_scope = 'server' THEN
            IF v_victim_id IS NOT NULL THEN
                DELETE FROM server_memories WHERE server_memory_id = v_victim_id;
            END IF;
            INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, user_id, content,
                                         manually_written, source)
            VALUES (v_owner, (op ->> 'persona_id')::integer, v_lineage,
                    (SELECT u.user_id FROM directory_users() u WHERE u.user_disc_id = op ->> 'teacher_id'),
                    op ->> 'content', false, 'model')
            RETURNING server_memory_id INTO v_new_id;
        ELSE
            IF v_victim_id IS NOT NULL THEN
                DELETE FROM personal_memories WHERE personal_memory_id = v_victim_id;
            END IF;
            INSERT INTO personal_memories (user_id, persona_lineage_id, content, manually_written, source)
            VALUES (v_owner, v_lineage, op ->> 'content', false, 'model')
            RETURNING personal_memory_id INTO v_new_id;
        END IF;

        v_facts := nullif(op -> 'facts', '{}'::jsonb);
        IF v_victim_id IS NULL THEN
            -- The plain save's result as the worker encoded it, with the new id in its place.
            v_text := (op #>> '{result,0}') || v_new_id || (op #>> '{result,1}');
            v_status := op ->> 'status';
        ELSE
            -- The eviction's, with the new id, the forgotten content (escaped, inside the
            -- quotes the worker left) and the notice completed with it (002_save_outcome.sql).
            v_forgotten := to_json(v_victim_content)::text;
            v_text := (op #>> '{eviction,result,0}') || v_new_id || (op #>> '{eviction,result,1}')
                      || substr(v_forgotten, 2, length(v_forgotten) - 2) || (op #>> '{eviction,result,2}')
                      || memory_eviction_notice(op #> '{eviction,notice}', v_victim_content)::text
                      || (op #>> '{eviction,result,3}');
            v_status := op #>> '{eviction,status}';
            v_facts := coalesce(v_facts, '{}'::jsonb) || (op #> '{eviction,facts}')
                       || jsonb_build_object('evicted_id', v_victim_id);
        END IF;

        -- A plain insert: should a repeat slip past the look above, the transaction fails whole
        -- (this command's memory row with it) and the caller runs the command once more.
        INSERT INTO processed_commands (command_id, kind, workspace_id, status, result, applied_by, event_facts)
        VALUES (v_command_id, 'create', op ->> 'workspace_id', v_status, v_text::json,
                (op ->> 'applied_by')::bigint, v_facts);
        RETURN QUERY SELECT false, v_outcome::text, v_text, NULL::integer, v_time, 'create'::text, op ->> 'workspace_id',
                            NULL::text, (op ->> 'applied_by')::bigint, NULL::jsonb, v_facts;
    END LOOP;
END;
$$;

-- Planned once per session (001_baseline.sql and 005_one_save_path.sql say why).
ALTER FUNCTION memory_worker.memory_create_batch(jsonb) SET plan_cache_mode = force_generic_plan;
