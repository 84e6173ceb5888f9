-- Summary: the create's write functions with the save_outcome enum; the eviction notice completed in the save.
-- One protocol for a create (issue 17, item 2). The baseline (001) stays as adopted databases
-- ran it; this replaces the create's write functions:
--
-- - memory_worker.save_outcome: how a save can end under the owner lock, the labels of
--   worker/domain/outcome.py's SaveOutcome (tests/integration/test_save_outcome.py compares the
--   two). The save request carries one finished result per outcome; memory_create_save()
--   chooses the outcome and takes its result, instead of building a key by concatenation.
-- - The eviction notice is completed inside the save's transaction from the template the
--   request carries (memory_eviction_notice), so memory_set_notice(s), the second statement
--   after an evicting save, are gone.
-- - "Seen before?" is only reported here (duplicate, the stored result, its workspace and
--   pending events): worker/services/base.py's seen_before() decides the answer.

CREATE TYPE memory_worker.save_outcome AS ENUM (
    'saved', 'saved_with_eviction', 'at_cap', 'over_cap', 'privacy_partial', 'privacy_full', 'host_protected');

DROP FUNCTION memory_worker.memory_create_batch(jsonb);
DROP FUNCTION memory_worker.memory_set_notices(jsonb);
DROP FUNCTION memory_worker.memory_set_notice(text, jsonb);
DROP FUNCTION memory_worker.memory_create_save(jsonb);
DROP FUNCTION memory_worker.memory_record_result(text, text, text, jsonb);
DROP FUNCTION memory_worker.memory_outbox_write(text, jsonb, bigint, bigint, text);

-- A card field's value as worker/domain/notice.py's truncate_field() makes it: "(empty)" for
-- nothing, else cut to Discord's 1024-character limit, trailing white space (what Python's
-- str.isspace() calls white space, all 29 characters) dropped, ending in an ellipsis.
CREATE FUNCTION memory_worker.memory_notice_field(p_value text, OUT value text, OUT cut boolean)
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_value = '' THEN '(empty)'
                WHEN length(p_value) <= 1024 THEN p_value
                ELSE rtrim(left(p_value, 1023), U&'\0009\000A\000B\000C\000D\001C\001D\001E\001F\0020\0085\00A0\1680\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000') || U&'\2026' END,
           length(p_value) > 1024;
$$;

-- The eviction notice: the template the pure planner made for an empty forgotten content
-- (worker/domain/eviction_notice.py), completed with the content the save forgot. The card's
-- third field is "Forgotten"; the expand action and attachment follow plan_notice(): set when a
-- field was cut, the full text as a description up to 4096 characters, else as notice.txt.
CREATE FUNCTION memory_worker.memory_eviction_notice(p_template jsonb, p_forgotten text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v_field  record;
    v_notice jsonb := p_template -> 'notice';
    v_card   jsonb;
    v_text   text;
    v_expand jsonb := 'null';
    v_attach jsonb := 'null';
BEGIN
    SELECT * INTO v_field FROM memory_notice_field(p_forgotten);
    v_card := jsonb_set(p_template -> 'card', '{fields,2,value}', to_jsonb(v_field.value));
    IF (p_template ->> 'saved_cut')::boolean OR v_field.cut THEN
        v_text := (p_template ->> 'text_head') || p_forgotten;
        IF length(v_text) <= 4096 THEN
            v_expand := jsonb_build_object('label', 'Show full text', 'delivery', 'description', 'description', v_text);
        ELSE
            v_expand := jsonb_build_object('label', 'Show full text', 'delivery', 'attachment', 'description', NULL);
            v_attach := jsonb_build_object('filename', 'notice.txt', 'content', v_text, 'ephemeral', true);
        END IF;
    END IF;
    IF v_notice #>> '{conversation,mode}' = 'card' THEN
        v_notice := jsonb_set(v_notice, '{conversation}', (v_notice -> 'conversation')
                              || jsonb_build_object('card', v_card, 'expand', v_expand, 'attachment', v_attach));
    END IF;
    IF jsonb_typeof(v_notice -> 'thought_log') = 'object' THEN
        v_notice := jsonb_set(v_notice, '{thought_log}', (v_notice -> 'thought_log')
                              || jsonb_build_object('card', v_card, 'expand', v_expand, 'attachment', v_attach));
    END IF;
    RETURN v_notice;
END;
$$;

-- Write the outbox rows of one command, in order, filling in what only the database knows:
-- the new memory's id and, after an eviction, the forgotten row and the eviction notice.
CREATE FUNCTION memory_worker.memory_outbox_write(p_command_id text, p_events jsonb, p_new_id bigint,
                                    p_victim_id bigint, p_victim_content text, p_notice jsonb)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    ev jsonb;
    body jsonb;
    rows jsonb := '[]'::jsonb;
    new_row outbox%ROWTYPE;
BEGIN
    FOR ev IN SELECT value FROM jsonb_array_elements(p_events) LOOP
        CONTINUE WHEN (ev ->> 'only_on_evict')::boolean AND p_victim_id IS NULL;
        body := ev -> 'payload';
        CASE ev ->> 'fill'
            WHEN 'saved' THEN
                body := jsonb_set(body, '{memory_id}', to_jsonb(p_new_id));
                IF p_victim_id IS NOT NULL THEN
                    body := body || jsonb_build_object(
                        'evicted', jsonb_build_object('memory_id', p_victim_id, 'content', p_victim_content),
                        'notice', p_notice);
                END IF;
            WHEN 'evicted' THEN
                body := body || jsonb_build_object('memory_id', p_victim_id,
                    'content_forgotten', p_victim_content, 'replaced_by', p_new_id);
            ELSE NULL;
        END CASE;
        INSERT INTO outbox (command_id, subject, headers, payload)
        VALUES (p_command_id, ev ->> 'subject', ev -> 'headers', body)
        RETURNING * INTO new_row;
        rows := rows || jsonb_build_object('id', new_row.id, 'subject', new_row.subject,
                                           'headers', new_row.headers, 'payload', new_row.payload);
    END LOOP;
    RETURN rows;
END;
$$;

-- Store a result that changed nothing (a refusal before persistence). A command stored
-- already (by a concurrent delivery) is reported as such, with what it stored and left
-- unpublished; the caller decides what that means (seen_before()).
CREATE FUNCTION memory_worker.memory_record_result(p_command_id text, p_kind text, p_workspace_id text, p_result jsonb)
RETURNS TABLE (duplicate boolean, result jsonb, outbox jsonb, stored_workspace text)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)
    VALUES (p_command_id, p_kind, p_workspace_id, p_result #>> '{data,status}', p_result)
    ON CONFLICT (command_id) DO NOTHING;
    IF FOUND THEN
        RETURN QUERY SELECT false, p_result, '[]'::jsonb, p_workspace_id;
    ELSE
        RETURN QUERY SELECT true, pc.result, memory_pending_outbox(p_command_id), pc.workspace_id
                     FROM processed_commands pc WHERE pc.command_id = p_command_id;
    END IF;
END;
$$;

-- The create transaction (docs/design.md, sections 4 step 8 and 5), top to bottom: lock the owner;
-- report a command seen before; read again what may have changed since the pure decision
-- (privacy, a proxy's hosts) and count; choose the outcome by the capacity rule, whose
-- specification is worker/domain/capacity.py (tests/integration/test_capacity_conformance.py
-- runs one table against both); write; store the chosen outcome's result. p is the request
-- worker/services/create_memory.py builds: the plan, a result per outcome (p.results, keyed by
-- save_outcome), the events, and the eviction notice's template when the plan may evict.
CREATE FUNCTION memory_worker.memory_create_save(p jsonb)
RETURNS TABLE (duplicate boolean, result jsonb, outbox jsonb, stored_workspace text)
LANGUAGE plpgsql AS $$
DECLARE
    v_command_id text := p ->> 'command_id';
    v_scope      text := p ->> 'scope';
    v_lineage    bigint := (p ->> 'lineage_id')::bigint;  -- TomoriBot's lineages are bigint
    v_cap        integer := (p ->> 'cap')::integer;
    v_cutoff     timestamptz := now() - make_interval(days => (p ->> 'decay_days')::integer);
    v_server_id  integer;
    v_user_id    integer := (p ->> 'user_id')::integer;
    v_count      integer;
    v_privacy    integer;
    v_hosts      integer;
    v_protecting integer;
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

    IF v_scope = 'server' THEN
        SELECT s.server_id INTO v_server_id FROM directory_workspaces() s WHERE s.server_disc_id = p ->> 'workspace_id';
        IF v_server_id IS NULL THEN
            -- The one directory write, the same in both modes: a workspace the bot never
            -- registered gets a servers row (every other column has a default).
            INSERT INTO servers (server_disc_id) VALUES (p ->> 'workspace_id')
            ON CONFLICT (server_disc_id) DO NOTHING;
            SELECT s.server_id INTO v_server_id FROM directory_workspaces() s WHERE s.server_disc_id = p ->> 'workspace_id';
        END IF;
        SELECT count(*) INTO v_count FROM server_memories m
        WHERE m.server_id = v_server_id AND m.persona_lineage_id = v_lineage;
    ELSE
        -- Privacy is read again under the lock: a user who just opted out is never saved.
        SELECT u.privacy_level INTO v_privacy FROM directory_users() u WHERE u.user_id = v_user_id;
        IF v_privacy IS DISTINCT FROM 0 THEN
            -- Fails closed: a vanished user row, or any level but 0 and 1, reads as full privacy.
            v_outcome := CASE WHEN v_privacy = 1 THEN 'privacy_partial' ELSE 'privacy_full' END;
        ELSIF (p ->> 'proxy')::boolean THEN
            -- So are a proxy identity's hosts: one at full privacy, one blacklisted here, or
            -- none left linked, and nothing is saved.
            SELECT count(*), count(*) FILTER (WHERE (h ->> 'privacy_level')::integer >= 2
                                                 OR (h ->> 'blacklisted')::boolean)
            INTO v_hosts, v_protecting
            FROM jsonb_array_elements(memory_proxy_hosts(v_user_id, p ->> 'workspace_id')) h;
            IF v_hosts = 0 OR v_protecting > 0 THEN
                v_outcome := 'host_protected';
            END IF;
        END IF;
        SELECT count(*) INTO v_count FROM personal_memories m
        WHERE m.user_id = v_user_id AND m.persona_lineage_id IN (v_lineage, 0);
    END IF;

    -- The capacity rule: capacity_action() of worker/domain/capacity.py.
    IF v_outcome IS NOT NULL THEN
        NULL;
    ELSIF v_count < v_cap THEN
        v_outcome := 'saved';
    ELSIF v_count > v_cap THEN
        v_outcome := 'over_cap';
    ELSE
        IF (p ->> 'may_evict')::boolean THEN
            -- choose_eviction(): never reinforced first, then least recently reinforced; ties
            -- by age, then id (an index walk: the *_eviction indexes of 001).
            IF v_scope = 'server' THEN
                SELECT m.server_memory_id, m.content INTO v_victim_id, v_victim_content
                FROM server_memories m
                WHERE m.server_id = v_server_id AND m.persona_lineage_id = v_lineage
                  AND v_lineage <> 0 AND NOT m.manually_written
                  AND coalesce(m.last_reinforced_at, m.created_at) < v_cutoff
                ORDER BY m.last_reinforced_at IS NOT NULL, m.last_reinforced_at, m.created_at, m.server_memory_id
                LIMIT 1;
            ELSE
                SELECT m.personal_memory_id, m.content INTO v_victim_id, v_victim_content
                FROM personal_memories m
                WHERE m.user_id = v_user_id AND m.persona_lineage_id = v_lineage
                  AND v_lineage <> 0 AND NOT m.manually_written
                  AND coalesce(m.last_reinforced_at, m.created_at) < v_cutoff
                ORDER BY m.last_reinforced_at IS NOT NULL, m.last_reinforced_at, m.created_at, m.personal_memory_id
                LIMIT 1;
            END IF;
        END IF;
        v_outcome := CASE WHEN v_victim_id IS NULL THEN 'at_cap' ELSE 'saved_with_eviction' END;
    END IF;

    v_result := p -> 'results' -> v_outcome::text;
    IF v_outcome IN ('saved', 'saved_with_eviction') THEN
        IF v_victim_id IS NOT NULL THEN
            IF v_scope = 'server' THEN
                DELETE FROM server_memories WHERE server_memory_id = v_victim_id;
            ELSE
                DELETE FROM personal_memories WHERE personal_memory_id = v_victim_id;
            END IF;
            v_notice := memory_eviction_notice(p -> 'eviction_notice', v_victim_content);
            v_result := v_result || jsonb_build_object('notice', v_notice, 'data', (v_result -> 'data')
                                                       || jsonb_build_object('content_forgotten', v_victim_content));
        END IF;
        IF v_scope = 'server' THEN
            INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, user_id, content,
                                         manually_written, source)
            VALUES (v_server_id, (p ->> 'persona_id')::integer, v_lineage,
                    (SELECT u.user_id FROM directory_users() u WHERE u.user_disc_id = p ->> 'teacher_id'),
                    p ->> 'content', (p ->> 'manually_written')::boolean, p ->> 'source')
            RETURNING server_memory_id INTO v_new_id;
        ELSE
            INSERT INTO personal_memories (user_id, persona_lineage_id, content, manually_written, source)
            VALUES (v_user_id, v_lineage, p ->> 'content', (p ->> 'manually_written')::boolean, p ->> 'source')
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

-- One transaction for several commands (worker/services/create_batch.py): p.owners ([scope,
-- owner id] pairs, in the caller's sorted order) are locked first, so two batches sharing
-- owners wait rather than deadlock; then each op runs in order: {plan} is
-- memory_create_save(plan), {command_id, workspace_id, result} is memory_record_result() of a
-- refusal. Returns one {duplicate, result, outbox, stored_workspace} per op. Any error rolls
-- the whole batch back; the caller then runs the commands one by one.
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
                                                      'outbox', r.outbox, 'stored_workspace', r.stored_workspace));
    END LOOP;
    RETURN to_jsonb(done);
END;
$$;
