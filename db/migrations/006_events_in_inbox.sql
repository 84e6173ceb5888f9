-- Summary: a command's events are kept in its inbox row and published from there; the outbox table is only drained.
-- Events without an outbox (issue 27, fourth round). Until now a command's events were rows of
-- their own (memory_outbox_write: 2 to 4 INSERTs per create), marked published by a later
-- UPDATE, and a sweeper published what a crash left behind. They now travel with the command:
--
-- - processed_commands.events holds the command's events, in publish order ([{subject,
--   headers, payload}], NULL when it has none), written by the same INSERT that stores its
--   result; applied_by holds the MEMORY_COMMANDS stream sequence of the delivery that applied
--   it (NULL for rows stored before this migration, or by a caller without a delivery).
--   Both columns are added without a default: no row is rewritten.
-- - After commit the handler publishes the events, then replies and acknowledges. A command
--   is acknowledged only once its events are stored in MEMORY_EVENTS, so a crash in between
--   leaves it unacknowledged: its redelivery (the same stream message) finds the stored row
--   and publishes the events again, stored once by their Nats-Msg-Id. Another message with
--   the same command id (a re-send under a derived id, a dead letter replayed) publishes
--   nothing: worker/services/base.py, republishes(), has the rule.
-- - Every function that reported a repeat's pending outbox rows (memory_create_context,
--   memory_record_result, memory_create_save and memory_create_batch) now reports the
--   stored events and applied_by instead. memory_outbox_write is gone: the request carries
--   the events finished but for what only the save knows (the new id; after an eviction the
--   forgotten row and the notice), which memory_create_save sets in place with jsonb_set
--   (one rewrite of the array for a plain save; building the array element by element
--   measured about 0.1 ms per create, make bench-profile).
-- - The outbox table stays, only to be drained: rows an older worker left unpublished are
--   published by every worker at start-up (worker/consuming/outbox/legacy.py), and the hourly
--   prune removes them a week after. Nothing writes new rows to it.
--
-- Stop the workers of the older version before this migration runs (deploy/README.md,
-- "Upgrading"): they write events to the outbox and call the functions replaced here.
-- p is db/requests.py's CreateSaveRequest (tests/unit/test_sql_arguments.py holds the keys
-- read here to its fields).

ALTER TABLE memory_worker.processed_commands ADD COLUMN events jsonb, ADD COLUMN applied_by bigint;

DROP FUNCTION memory_worker.memory_create_batch(jsonb);
DROP FUNCTION memory_worker.memory_create_save(jsonb);
DROP FUNCTION memory_worker.memory_record_result(text, text, text, jsonb);
DROP FUNCTION memory_worker.memory_outbox_write(text, jsonb, bigint, bigint, text, jsonb);

-- Store a result that changed nothing (a refusal before persistence: no events). A command
-- stored already (by a concurrent delivery) is reported as such, with what it stored; the
-- caller decides what that means (seen_before()).
CREATE FUNCTION memory_worker.memory_record_result(p_command_id text, p_kind text, p_workspace_id text, p_result jsonb)
RETURNS TABLE (duplicate boolean, result jsonb, events jsonb, stored_workspace text, applied_by bigint)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)
    VALUES (p_command_id, p_kind, p_workspace_id, p_result #>> '{data,status}', p_result)
    ON CONFLICT (command_id) DO NOTHING;
    IF FOUND THEN
        RETURN QUERY SELECT false, p_result, '[]'::jsonb, p_workspace_id, NULL::bigint;
    ELSE
        RETURN QUERY SELECT true, pc.result, coalesce(pc.events, '[]'::jsonb), pc.workspace_id, pc.applied_by
                     FROM processed_commands pc WHERE pc.command_id = p_command_id;
    END IF;
END;
$$;

-- The create transaction, as 005 made it; the events are stored in the inbox row.
CREATE FUNCTION memory_worker.memory_create_save(p jsonb)
RETURNS TABLE (duplicate boolean, result jsonb, events jsonb, stored_workspace text, applied_by bigint)
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
    v_events     jsonb;
    v_applied_by bigint;
    v_saved_at   text := p ->> 'saved_at';  -- the memory.saved event's place in p.events
    v_evictions  jsonb;
BEGIN
    PERFORM memory_lock_owner(v_scope, p ->> 'owner_id');

    SELECT pc.result, pc.workspace_id, pc.events, pc.applied_by INTO v_result, v_stored_ws, v_events, v_applied_by
    FROM processed_commands pc WHERE pc.command_id = v_command_id;
    IF FOUND THEN
        -- A repeat that raced the original: it answers with what was stored, and
        -- worker/services/base.py's seen_before() decides whether it publishes the events too.
        RETURN QUERY SELECT true, v_result, coalesce(v_events, '[]'::jsonb), v_stored_ws, v_applied_by;
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
        -- The events: p.events with the new id in memory.saved; after an eviction also the
        -- forgotten row and the notice there, then p.eviction_events (memory.evicted, filled
        -- in, and the eviction metric).
        v_events := jsonb_set(p -> 'events', ARRAY[v_saved_at, 'payload', 'memory_id'], to_jsonb(v_new_id));
        IF v_victim_id IS NOT NULL THEN
            v_events := jsonb_set(v_events, ARRAY[v_saved_at, 'payload'], (v_events #> ARRAY[v_saved_at, 'payload'])
                                  || jsonb_build_object('evicted', jsonb_build_object('memory_id', v_victim_id,
                                                                                      'content', v_victim_content),
                                                        'notice', v_notice));
            v_evictions := p -> 'eviction_events';
            v_events := v_events || jsonb_set(v_evictions, '{0,payload}', (v_evictions #> '{0,payload}')
                        || jsonb_build_object('memory_id', v_victim_id, 'content_forgotten', v_victim_content,
                                              'replaced_by', v_new_id));
        END IF;
    ELSIF v_outcome IN ('at_cap', 'over_cap') THEN
        v_result := jsonb_set(v_result, '{data,current_count}', to_jsonb(v_count));
    END IF;

    -- A plain insert: should a repeat slip past the check above (a refusal stored without the
    -- lock), the transaction fails whole and the caller runs the command once more. The
    -- events go into the same row: no other write.
    v_applied_by := (p ->> 'applied_by')::bigint;
    INSERT INTO processed_commands (command_id, kind, workspace_id, status, result, events, applied_by)
    VALUES (v_command_id, 'create', p ->> 'workspace_id', v_result #>> '{data,status}', v_result, v_events,
            v_applied_by);
    RETURN QUERY SELECT false, v_result, coalesce(v_events, '[]'::jsonb), p ->> 'workspace_id', v_applied_by;
END;
$$;

ALTER FUNCTION memory_worker.memory_create_save(jsonb) SET plan_cache_mode = force_generic_plan;

-- One transaction for several commands (worker/services/create_batch.py), as in 002: p.owners
-- locked first in the caller's order, then each op in order. Returns one {duplicate, result,
-- events, stored_workspace, applied_by} per op.
CREATE FUNCTION memory_worker.memory_create_batch(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    owner jsonb;
    op    jsonb;
    r     record;
    done  jsonb[] := '{}';  -- an expanded array: appending is in place
BEGIN
    FOR owner IN SELECT value FROM jsonb_array_elements(p -> 'owners') LOOP
        PERFORM memory_lock_owner(owner ->> 0, owner ->> 1);
    END LOOP;
    FOR op IN SELECT value FROM jsonb_array_elements(p -> 'ops') LOOP
        IF op ? 'plan' THEN
            SELECT * INTO r FROM memory_create_save(op -> 'plan');
        ELSE
            SELECT * INTO r FROM memory_record_result(op ->> 'command_id', 'create', op ->> 'workspace_id',
                                                      op -> 'result');
        END IF;
        done := array_append(done, jsonb_build_object('duplicate', r.duplicate, 'result', r.result,
                                                      'events', r.events, 'stored_workspace', r.stored_workspace,
                                                      'applied_by', r.applied_by));
    END LOOP;
    RETURN to_jsonb(done);
END;
$$;

-- The create's context read (003's), reporting a stored command's events and the delivery
-- that applied it instead of its pending outbox rows: one row read, no second table.
CREATE OR REPLACE FUNCTION memory_worker.memory_create_context(p_command_id text, p_workspace_id text, p_ids text[],
                                                            p_lineage_id bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'stored', pc.result,
        'stored_workspace', pc.workspace_id,
        'events', coalesce(pc.events, '[]'::jsonb),
        'applied_by', pc.applied_by,
        'workspace', (SELECT jsonb_build_object(
                        'server_id', s.server_id,
                        'self_teaching_enabled', s.self_teaching_enabled,
                        'personal_memories_enabled', s.personal_memories_enabled,
                        'memory_decay_enabled', s.memory_decay_enabled,
                        'memory_decay_days', s.memory_decay_days,
                        'tool_notice_verbosity', s.tool_notice_verbosity,
                        'tool_notice_hidden_keys', s.tool_notice_hidden_keys,
                        'thought_log_channel_id', s.thought_log_channel_id,
                        'private_channel_ids', s.private_channel_ids)
                      FROM directory_workspaces() s WHERE s.server_disc_id = p_workspace_id),
        'users', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                        'user_id', u.user_id, 'disc_id', u.user_disc_id,
                        'nickname', u.nickname, 'privacy_level', u.privacy_level,
                        'persona_nickname', pn.nickname,
                        'proxy_hosts', CASE WHEN i.user_id IS NOT NULL
                                            THEN memory_proxy_hosts(u.user_id, p_workspace_id) END)), '[]'::jsonb)
                  FROM directory_users() u
                  LEFT JOIN directory_persona_nicknames() pn ON pn.user_id = u.user_id AND pn.lineage_id = p_lineage_id
                  LEFT JOIN directory_proxy_identities() i ON i.user_id = u.user_id
                  WHERE u.user_disc_id = ANY (p_ids))
    )
    FROM (SELECT NULL) one
    LEFT JOIN processed_commands pc ON pc.command_id = p_command_id;
$$;

-- Planned once per session, as before (001_baseline.sql says why); CREATE OR REPLACE reset it.
ALTER FUNCTION memory_worker.memory_create_context(text, text, text[], bigint) SET plan_cache_mode = force_generic_plan;

-- Nothing reads a command's outbox rows any more.
DROP FUNCTION memory_worker.memory_pending_outbox(text);
