-- Summary: memory_create_save() counts and chooses its victim once for both scopes.
-- The capacity rule once in live SQL (issue 26, item 7). 002's memory_create_save() wrote the
-- count and the victim's choice once per table (`IF v_scope = 'server'`), so the eviction rule
-- existed twice in the SQL. This replaces it (same argument, same result) with one path:
--
-- - the owner is resolved per scope, as before (a server row made if missing; privacy and a
--   proxy's hosts read again under the lock): that part is what differs between scopes;
-- - the memories are one scope-independent relation, `owned` (both tables' rows, tagged with
--   their scope and owner key): the count and the victim's choice are each written once over
--   it (counts_toward_cap(), is_eligible() and eviction_order_key() of
--   tests/support/capacity_rule.py), with the owner's scope and key as parameters;
-- - the write (forget the victim, insert the new row) names the owner's table once.
--
-- Cost: the plans stay cached (static SQL, no EXECUTE; a parameterised EXECUTE would be
-- planned on every call). plan_cache_mode is forced to generic plans, in which the other
-- scope's branch is a one-time filter that never runs; left to choose, PostgreSQL kept custom
-- plans, planning the count on every call (about +170 us per create, measured). The count and
-- the victim stay two statements, the second only at the cap: as one statement every save
-- also started the victim's index walks (about +12 us per insert, measured). Measured against
-- 002's function in one database, alternated over 20 rounds of 100 saves (server and
-- personal, inserting and evicting), the two are within noise of each other. `owned` is a CTE
-- rather than a view or an SQL function: a view would pin the bot's columns in an adopted
-- database, and a function must declare column types, which differ between TomoriBot's tables
-- (serial ids) and the standalone layout's (bigserial).
-- p is db/requests.py's CreateSaveRequest (tests/unit/test_sql_arguments.py holds the keys read
-- here to its fields).

CREATE OR REPLACE FUNCTION memory_worker.memory_create_save(p jsonb)
RETURNS TABLE (duplicate boolean, result jsonb, outbox jsonb, stored_workspace text)
LANGUAGE plpgsql AS $$
DECLARE
    v_command_id text := p ->> 'command_id';
    v_scope      text := p ->> 'scope';
    v_lineage    bigint := (p ->> 'lineage_id')::bigint;  -- TomoriBot's lineages are bigint
    v_cap        integer := (p ->> 'cap')::integer;
    v_may_evict  boolean := (p ->> 'may_evict')::boolean;
    v_cutoff     timestamptz := now() - make_interval(days => (p ->> 'decay_days')::integer);
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
    v_result     jsonb;
    v_notice     jsonb;
    v_stored_ws  text;
    v_rows       jsonb := '[]'::jsonb;
BEGIN
    PERFORM memory_lock_owner(v_scope, p ->> 'owner_id');

    SELECT pc.result, pc.workspace_id INTO v_result, v_stored_ws
    FROM processed_commands pc WHERE pc.command_id = v_command_id;
    IF FOUND THEN
        -- A repeat that raced the original: it answers, so it also publishes what is pending.
        RETURN QUERY SELECT true, v_result, memory_pending_outbox(v_command_id), v_stored_ws;
        RETURN;
    END IF;

    -- The owner, and what only the lock can tell about it.
    IF v_scope = 'server' THEN
        SELECT s.server_id INTO v_owner FROM directory_workspaces() s WHERE s.server_disc_id = p ->> 'workspace_id';
        IF v_owner IS NULL THEN
            -- The one directory write, the same in both modes: a workspace the bot never
            -- registered gets a servers row (every other column has a default).
            INSERT INTO servers (server_disc_id) VALUES (p ->> 'workspace_id')
            ON CONFLICT (server_disc_id) DO NOTHING;
            SELECT s.server_id INTO v_owner FROM directory_workspaces() s WHERE s.server_disc_id = p ->> 'workspace_id';
        END IF;
        v_counted := ARRAY[v_lineage];
    ELSE
        v_owner := (p ->> 'user_id')::integer;
        -- A user's global rows (lineage 0) count against every lineage's cap.
        v_counted := ARRAY[v_lineage, 0];
        -- Privacy is read again under the lock: a user who just opted out is never saved.
        SELECT u.privacy_level INTO v_privacy FROM directory_users() u WHERE u.user_id = v_owner;
        IF v_privacy IS DISTINCT FROM 0 THEN
            -- Fails closed: a vanished user row, or any level but 0 and 1, reads as full privacy
            -- (worker/domain/model.py's Privacy: 0 open, 1 partial, 2 full).
            v_outcome := CASE WHEN v_privacy = 1 THEN 'privacy_partial' ELSE 'privacy_full' END;
        ELSIF (p ->> 'proxy')::boolean THEN
            -- So are a proxy identity's hosts: one at full privacy, one blacklisted here, or
            -- none left linked, and nothing is saved.
            SELECT count(*), count(*) FILTER (WHERE (h ->> 'privacy_level')::integer >= 2
                                                 OR (h ->> 'blacklisted')::boolean)
            INTO v_hosts, v_protecting
            FROM jsonb_array_elements(memory_proxy_hosts(v_owner, p ->> 'workspace_id')) h;
            IF v_hosts = 0 OR v_protecting > 0 THEN
                v_outcome := 'host_protected';
            END IF;
        END IF;
    END IF;

    IF v_outcome IS NULL THEN
        -- `owned` is both tables' rows under one shape; its branches carry no WHERE of their
        -- own, so the planner flattens them and pushes the scope and owner into each: the
        -- other scope's branch becomes a one-time filter that never runs, and the victim is a
        -- merge of index walks (a branch with its own WHERE is planned apart, and sorts).
        -- counts_toward_cap(): the lineages in v_counted.
        WITH owned AS (
            SELECT 'server'::text AS scope, m.server_id AS owner, m.persona_lineage_id AS lineage
            FROM server_memories m
            UNION ALL
            SELECT 'personal'::text, m.user_id, m.persona_lineage_id FROM personal_memories m
        )
        SELECT count(*) INTO v_count FROM owned o
        WHERE o.scope = v_scope AND o.owner = v_owner AND o.lineage = ANY (v_counted);

        IF v_count = v_cap AND v_may_evict THEN
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
              AND coalesce(o.last_reinforced_at, o.created_at) < v_cutoff
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

    v_result := p -> 'results' -> v_outcome::text;
    IF v_outcome IN ('saved', 'saved_with_eviction') THEN
        IF v_victim_id IS NOT NULL THEN
            v_notice := memory_eviction_notice(p -> 'eviction_notice', v_victim_content);
            v_result := v_result || jsonb_build_object('notice', v_notice, 'data', (v_result -> 'data')
                                                       || jsonb_build_object('content_forgotten', v_victim_content));
        END IF;
        -- The write: the two tables' columns differ (a server row names its persona and teacher).
        IF v_scope = 'server' THEN
            IF v_victim_id IS NOT NULL THEN
                DELETE FROM server_memories WHERE server_memory_id = v_victim_id;
            END IF;
            INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, user_id, content,
                                         manually_written, source)
            VALUES (v_owner, (p ->> 'persona_id')::integer, v_lineage,
                    (SELECT u.user_id FROM directory_users() u WHERE u.user_disc_id = p ->> 'teacher_id'),
                    p ->> 'content', (p ->> 'manually_written')::boolean, p ->> 'source')
            RETURNING server_memory_id INTO v_new_id;
        ELSE
            IF v_victim_id IS NOT NULL THEN
                DELETE FROM personal_memories WHERE personal_memory_id = v_victim_id;
            END IF;
            INSERT INTO personal_memories (user_id, persona_lineage_id, content, manually_written, source)
            VALUES (v_owner, v_lineage, p ->> 'content', (p ->> 'manually_written')::boolean, p ->> 'source')
            RETURNING personal_memory_id INTO v_new_id;
        END IF;
        v_result := jsonb_set(v_result, '{data,memory_id}', to_jsonb(v_new_id));
        v_rows := memory_outbox_write(v_command_id, p -> 'events', v_new_id, v_victim_id, v_victim_content, v_notice);
    ELSIF v_outcome IN ('at_cap', 'over_cap') THEN
        v_result := jsonb_set(v_result, '{data,current_count}', to_jsonb(v_count));
    END IF;

    -- A plain insert: should a repeat slip past the check above (a refusal stored without the
    -- lock), the transaction fails whole and the caller runs the command once more.
    INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)
    VALUES (v_command_id, 'create', p ->> 'workspace_id', v_result #>> '{data,status}', v_result);
    RETURN QUERY SELECT false, v_result, v_rows, p ->> 'workspace_id';
END;
$$;

ALTER FUNCTION memory_worker.memory_create_save(jsonb) SET plan_cache_mode = force_generic_plan;
