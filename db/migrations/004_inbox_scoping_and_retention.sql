-- The inbox remembers which workspace a command belonged to (a result is never handed to
-- another workspace), a repeat racing the original gets the original's unpublished events,
-- decay days stay in a range that date arithmetic can handle, and old rows can be pruned.

ALTER TABLE processed_commands ADD COLUMN workspace_id text;
CREATE INDEX processed_commands_processed_at ON processed_commands (processed_at);
CREATE INDEX outbox_published_at ON outbox (published_at) WHERE published_at IS NOT NULL;

ALTER TABLE servers ADD CONSTRAINT servers_memory_decay_days_range
    CHECK (memory_decay_days BETWEEN 1 AND 36500) NOT VALID;

CREATE FUNCTION memory_pending_outbox(p_command_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'id', o.id, 'subject', o.subject, 'headers', o.headers, 'payload', o.payload) ORDER BY o.id),
           '[]'::jsonb)
    FROM outbox o WHERE o.command_id = p_command_id AND o.published_at IS NULL;
$$;

CREATE OR REPLACE FUNCTION memory_create_context(p_command_id text, p_workspace_id text, p_ids text[],
                                                 p_lineage_id integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'stored', (SELECT result FROM processed_commands WHERE command_id = p_command_id),
        'stored_workspace', (SELECT workspace_id FROM processed_commands WHERE command_id = p_command_id),
        'pending', memory_pending_outbox(p_command_id),
        'workspace', (SELECT jsonb_build_object(
                        'server_id', s.server_id,
                        'self_teaching_enabled', s.self_teaching_enabled,
                        'personal_memories_enabled', s.personal_memories_enabled,
                        'memory_decay_enabled', s.memory_decay_enabled,
                        'memory_decay_days', s.memory_decay_days)
                      FROM servers s WHERE s.server_disc_id = p_workspace_id),
        'users', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                        'user_id', u.user_id, 'disc_id', u.user_disc_id,
                        'nickname', u.user_nickname, 'privacy_level', u.privacy_level,
                        'persona_nickname', pn.nickname,
                        'proxy_hosts', CASE WHEN i.user_id IS NOT NULL
                                            THEN memory_proxy_hosts(u.user_id, p_workspace_id) END)), '[]'::jsonb)
                  FROM users u
                  LEFT JOIN persona_nicknames pn ON pn.user_id = u.user_id AND pn.lineage_id = p_lineage_id
                  LEFT JOIN message_proxy_identities i ON i.user_id = u.user_id
                  WHERE u.user_disc_id = ANY (p_ids))
    );
$$;

DROP FUNCTION memory_record_result(text, text, jsonb);
CREATE FUNCTION memory_record_result(p_command_id text, p_kind text, p_workspace_id text, p_result jsonb)
RETURNS TABLE (duplicate boolean, result jsonb)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)
    VALUES (p_command_id, p_kind, p_workspace_id, p_result #>> '{data,status}', p_result)
    ON CONFLICT (command_id) DO NOTHING;
    IF FOUND THEN
        RETURN QUERY SELECT false, p_result;
    ELSE
        RETURN QUERY SELECT true, pc.result FROM processed_commands pc WHERE pc.command_id = p_command_id;
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION memory_create_save(p jsonb)
RETURNS TABLE (duplicate boolean, result jsonb, outbox jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    v_command_id text := p ->> 'command_id';
    v_scope      text := p ->> 'scope';
    v_lineage    integer := (p ->> 'lineage_id')::integer;
    v_cap        integer := (p ->> 'cap')::integer;
    v_cutoff     timestamptz := now() - make_interval(days => (p ->> 'decay_days')::integer);
    v_server_id  integer;
    v_user_id    integer := (p ->> 'user_id')::integer;
    v_count      integer;
    v_privacy    integer;
    v_victim_id  bigint;
    v_victim_content text;
    v_new_id     bigint;
    v_result     jsonb;
    v_rows       jsonb := '[]'::jsonb;
BEGIN
    PERFORM memory_lock_owner(v_scope, p ->> 'owner_id');

    SELECT pc.result INTO v_result FROM processed_commands pc WHERE pc.command_id = v_command_id;
    IF FOUND THEN
        -- A repeat that raced the original: it answers, so it also publishes what is pending.
        RETURN QUERY SELECT true, v_result, memory_pending_outbox(v_command_id);
        RETURN;
    END IF;

    IF v_scope = 'server' THEN
        SELECT s.server_id INTO v_server_id FROM servers s WHERE s.server_disc_id = p ->> 'workspace_id';
        IF v_server_id IS NULL THEN
            INSERT INTO servers (server_disc_id) VALUES (p ->> 'workspace_id')
            ON CONFLICT (server_disc_id) DO NOTHING;
            SELECT s.server_id INTO v_server_id FROM servers s WHERE s.server_disc_id = p ->> 'workspace_id';
        END IF;
        SELECT count(*) INTO v_count FROM server_memories m
        WHERE m.server_id = v_server_id AND m.persona_lineage_id = v_lineage;
    ELSE
        -- Privacy is read again under the lock: a user who just opted out is never saved.
        SELECT u.privacy_level INTO v_privacy FROM users u WHERE u.user_id = v_user_id;
        IF v_privacy IS DISTINCT FROM 0 THEN
            -- Fails closed: a vanished user row reads as full privacy.
            v_result := p -> 'results' -> ('privacy_' || coalesce(v_privacy, 2));
        END IF;
        SELECT count(*) INTO v_count FROM personal_memories m
        WHERE m.user_id = v_user_id AND m.persona_lineage_id IN (v_lineage, 0);
    END IF;

    IF v_result IS NULL AND v_count > v_cap THEN
        v_result := jsonb_set(p #> '{results,over_cap}', '{data,current_count}', to_jsonb(v_count));
    ELSIF v_result IS NULL AND v_count = v_cap THEN
        IF (p ->> 'may_evict')::boolean THEN
            -- Never-reinforced first, then least recently reinforced; ties by age, then id.
            IF v_scope = 'server' THEN
                SELECT m.server_memory_id, m.content INTO v_victim_id, v_victim_content
                FROM server_memories m
                WHERE m.server_id = v_server_id AND m.persona_lineage_id = v_lineage
                  AND v_lineage <> 0 AND NOT m.manually_written
                  AND coalesce(m.last_reinforced_at, m.created_at) < v_cutoff
                ORDER BY m.last_reinforced_at IS NOT NULL, m.last_reinforced_at, m.created_at, m.server_memory_id
                LIMIT 1;
                DELETE FROM server_memories WHERE server_memory_id = v_victim_id;
            ELSE
                SELECT m.personal_memory_id, m.content INTO v_victim_id, v_victim_content
                FROM personal_memories m
                WHERE m.user_id = v_user_id AND m.persona_lineage_id = v_lineage
                  AND v_lineage <> 0 AND NOT m.manually_written
                  AND coalesce(m.last_reinforced_at, m.created_at) < v_cutoff
                ORDER BY m.last_reinforced_at IS NOT NULL, m.last_reinforced_at, m.created_at, m.personal_memory_id
                LIMIT 1;
                DELETE FROM personal_memories WHERE personal_memory_id = v_victim_id;
            END IF;
        END IF;
        IF v_victim_id IS NULL THEN
            v_result := jsonb_set(p #> '{results,at_cap}', '{data,current_count}', to_jsonb(v_count));
        END IF;
    END IF;

    IF v_result IS NULL THEN
        IF v_scope = 'server' THEN
            INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, user_id, content,
                                         manually_written, source)
            VALUES (v_server_id, (p ->> 'persona_id')::integer, v_lineage,
                    (SELECT u.user_id FROM users u WHERE u.user_disc_id = p ->> 'teacher_id'),
                    p ->> 'content', (p ->> 'manually_written')::boolean, p ->> 'source')
            RETURNING server_memory_id INTO v_new_id;
        ELSE
            INSERT INTO personal_memories (user_id, persona_lineage_id, content, manually_written, source)
            VALUES (v_user_id, v_lineage, p ->> 'content', (p ->> 'manually_written')::boolean, p ->> 'source')
            RETURNING personal_memory_id INTO v_new_id;
        END IF;
        IF v_victim_id IS NULL THEN
            v_result := jsonb_set(p #> '{results,saved}', '{data,memory_id}', to_jsonb(v_new_id));
        ELSE
            v_result := jsonb_set(jsonb_set(p #> '{results,evicted}', '{data,memory_id}', to_jsonb(v_new_id)),
                                  '{data,content_forgotten}', to_jsonb(v_victim_content));
        END IF;
        v_rows := memory_outbox_write(v_command_id, p -> 'events', v_new_id, v_victim_id, v_victim_content);
    END IF;

    -- A plain insert: should a repeat slip past the check above (a refusal stored without the
    -- lock), the transaction fails whole and the caller reads the stored result.
    INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)
    VALUES (v_command_id, 'create', p ->> 'workspace_id', v_result #>> '{data,status}', v_result);
    RETURN QUERY SELECT false, v_result, v_rows;
END;
$$;

-- Retention: published events older than the stream's own horizon, and inbox rows older than
-- the configured window (well beyond JetStream's duplicate window and any replay). Batched so
-- a large backlog never holds long locks.
CREATE FUNCTION memory_prune(p_inbox_days integer, p_outbox_days integer, p_batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_inbox integer;
    v_outbox integer;
BEGIN
    DELETE FROM processed_commands WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM processed_commands
        WHERE processed_at < now() - make_interval(days => p_inbox_days) LIMIT p_batch));
    GET DIAGNOSTICS v_inbox = ROW_COUNT;
    DELETE FROM outbox WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM outbox
        WHERE published_at < now() - make_interval(days => p_outbox_days) LIMIT p_batch));
    GET DIAGNOSTICS v_outbox = ROW_COUNT;
    RETURN v_inbox + v_outbox;
END;
$$;
