-- What a panel decision needs (docs/design.md, section 8.1), read inside the owner's locked
-- transaction: the workspace's settings, the actor's privacy and blacklisting, the proxy identity
-- acted for, the owner's count, the memory edited or removed, for a batch the texts it is
-- de-duplicated against, and for an import every row of the owner and exact lineage (what a
-- merge compares with and a replace deletes). A global (lineage 0) personal add counts against the fullest lineage
-- too: every lineage's cap includes the global rows. p is db/requests.py's ManualContextRequest
-- (tests/unit/test_sql_arguments.py holds the keys read here to its fields).
CREATE OR REPLACE FUNCTION memory_worker.memory_manual_context(p jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_scope     text := p ->> 'scope';
    v_lineage   bigint := (p ->> 'lineage_id')::bigint;
    v_owner     text := p ->> 'owner_id';
    v_ws        record;
    v_owner_uid integer;
    v_count     integer := 0;
    v_target    jsonb;
    v_existing  jsonb := '[]'::jsonb;
    v_lineage_rows jsonb := '[]'::jsonb;
BEGIN
    SELECT * INTO v_ws FROM directory_workspaces() w WHERE w.server_disc_id = p ->> 'workspace_id';
    IF v_scope = 'server' THEN
        IF v_ws.server_id IS NOT NULL THEN
            SELECT count(*) INTO v_count FROM server_memories
            WHERE server_id = v_ws.server_id AND persona_lineage_id = v_lineage;
            SELECT jsonb_build_object('memory_id', m.server_memory_id, 'lineage_id', m.persona_lineage_id,
                                      'content', m.content, 'tags', coalesce(m.tags, '{}'),
                                      'manually_written', m.manually_written, 'taught_by', tu.user_disc_id,
                                      'source', m.source)
            INTO v_target
            FROM server_memories m LEFT JOIN directory_users() tu ON tu.user_id = m.user_id
            WHERE m.server_memory_id = (p ->> 'memory_id')::bigint
              AND m.server_id = v_ws.server_id AND m.persona_lineage_id = v_lineage;
            IF (p ->> 'want_existing')::boolean THEN
                SELECT coalesce(jsonb_agg(content), '[]'::jsonb) INTO v_existing FROM server_memories
                WHERE server_id = v_ws.server_id AND persona_lineage_id = v_lineage;
            END IF;
            IF (p ->> 'want_lineage_rows')::boolean THEN
                SELECT coalesce(jsonb_agg(jsonb_build_object('memory_id', server_memory_id, 'content', content,
                                                             'tags', coalesce(tags, '{}'))
                                          ORDER BY server_memory_id), '[]'::jsonb)
                INTO v_lineage_rows FROM server_memories
                WHERE server_id = v_ws.server_id AND persona_lineage_id = v_lineage;
            END IF;
        END IF;
    ELSE
        SELECT u.user_id INTO v_owner_uid FROM directory_users() u WHERE u.user_disc_id = v_owner;
        IF v_owner_uid IS NOT NULL THEN
            IF v_lineage = 0 THEN
                -- A global row counts against every lineage's cap: the fullest lineage binds.
                SELECT (SELECT count(*) FROM personal_memories
                        WHERE user_id = v_owner_uid AND persona_lineage_id = 0)
                     + coalesce((SELECT max(n) FROM (SELECT count(*) AS n FROM personal_memories
                                                     WHERE user_id = v_owner_uid AND persona_lineage_id <> 0
                                                     GROUP BY persona_lineage_id) per_lineage), 0)
                INTO v_count;
            ELSE
                SELECT count(*) INTO v_count FROM personal_memories
                WHERE user_id = v_owner_uid AND persona_lineage_id IN (v_lineage, 0);
            END IF;
            SELECT jsonb_build_object('memory_id', m.personal_memory_id, 'lineage_id', m.persona_lineage_id,
                                      'content', m.content, 'tags', coalesce(m.tags, '{}'),
                                      'manually_written', m.manually_written, 'taught_by', NULL,
                                      'source', m.source)
            INTO v_target
            FROM personal_memories m
            WHERE m.personal_memory_id = (p ->> 'memory_id')::bigint
              AND m.user_id = v_owner_uid AND m.persona_lineage_id = v_lineage;
            IF (p ->> 'want_existing')::boolean THEN
                -- A batch is de-duplicated against the user's global rows too, as TomoriBot's
                -- panel does (docs/design.md, section 8.1).
                SELECT coalesce(jsonb_agg(content), '[]'::jsonb) INTO v_existing FROM personal_memories
                WHERE user_id = v_owner_uid AND persona_lineage_id IN (v_lineage, 0);
            END IF;
            IF (p ->> 'want_lineage_rows')::boolean THEN
                -- Exactly the lineage, as TomoriBot's import compares and replaces (never the global
                -- rows of another lineage's import).
                SELECT coalesce(jsonb_agg(jsonb_build_object('memory_id', personal_memory_id, 'content', content,
                                                             'tags', coalesce(tags, '{}'))
                                          ORDER BY personal_memory_id), '[]'::jsonb)
                INTO v_lineage_rows FROM personal_memories
                WHERE user_id = v_owner_uid AND persona_lineage_id = v_lineage;
            END IF;
        END IF;
    END IF;
    RETURN jsonb_build_object(
        'workspace', CASE WHEN v_ws.server_id IS NOT NULL THEN jsonb_build_object(
                        'server_id', v_ws.server_id,
                        'self_teaching_enabled', v_ws.self_teaching_enabled,
                        'personal_memories_enabled', v_ws.personal_memories_enabled,
                        'member_teaching_enabled', v_ws.member_teaching_enabled,
                        'memory_decay_enabled', v_ws.memory_decay_enabled,
                        'memory_decay_days', v_ws.memory_decay_days) END,
        'actor_privacy_level', coalesce((SELECT u.privacy_level FROM directory_users() u
                                         WHERE u.user_disc_id = p ->> 'actor_id'), 0),
        'actor_blacklisted', EXISTS (SELECT 1 FROM directory_blacklist() b
                                     WHERE b.server_id = v_ws.server_id AND b.user_disc_id = p ->> 'actor_id'),
        'identity', CASE WHEN p ->> 'identity_id' IS NOT NULL
                         THEN memory_proxy_identity(p ->> 'identity_id', p ->> 'workspace_id') END,
        'identity_hosted_by_actor', EXISTS (
            SELECT 1 FROM directory_users() u
            JOIN directory_proxy_hosts() a ON a.user_id = u.user_id
            WHERE u.user_disc_id = p ->> 'identity_id' AND a.host_user_disc_id = p ->> 'actor_id'),
        'owner_user_id', v_owner_uid,
        'count', v_count,
        'target', v_target,
        'existing', v_existing,
        'lineage_rows', v_lineage_rows);
END;
$$;
