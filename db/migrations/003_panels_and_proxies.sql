-- Proxy-identity hosts, and the context reads of memory.manual and memory.seed_bio.

-- The hosts of a proxy identity's namespace as one workspace sees them. Empty when the
-- identity has no resolvable host link (the caller fails closed on that).
CREATE FUNCTION memory_proxy_hosts(p_user_id integer, p_workspace_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'disc_id', a.host_user_disc_id,
               'privacy_level', coalesce(hu.privacy_level, 0),
               'blacklisted', EXISTS (
                   SELECT 1 FROM personalization_blacklist b JOIN servers s ON s.server_id = b.server_id
                   WHERE s.server_disc_id = p_workspace_id AND b.user_disc_id = a.host_user_disc_id))
               ORDER BY a.host_user_disc_id), '[]'::jsonb)
    FROM message_proxy_identities i
    JOIN message_proxy_namespace_accounts a ON a.namespace_id = i.namespace_id
    LEFT JOIN users hu ON hu.user_disc_id = a.host_user_disc_id
    WHERE i.user_id = p_user_id;
$$;

-- A proxy identity (synthetic users row with an identity row), or null.
CREATE FUNCTION memory_proxy_identity(p_disc_id text, p_workspace_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('user_id', u.user_id, 'disc_id', u.user_disc_id,
                              'hosts', memory_proxy_hosts(u.user_id, p_workspace_id))
    FROM users u JOIN message_proxy_identities i ON i.user_id = u.user_id
    WHERE u.user_disc_id = p_disc_id;
$$;

CREATE OR REPLACE FUNCTION memory_create_context(p_command_id text, p_workspace_id text, p_ids text[],
                                                 p_lineage_id integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'stored', (SELECT result FROM processed_commands WHERE command_id = p_command_id),
        'pending', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                        'id', o.id, 'subject', o.subject, 'headers', o.headers, 'payload', o.payload)
                        ORDER BY o.id), '[]'::jsonb)
                    FROM outbox o WHERE o.command_id = p_command_id AND o.published_at IS NULL),
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

-- What a panel decision needs, read inside the owner's locked transaction.
CREATE FUNCTION memory_manual_context(p jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_scope     text := p ->> 'scope';
    v_lineage   integer := (p ->> 'lineage_id')::integer;
    v_owner     text := p ->> 'owner_id';
    v_ws        servers%ROWTYPE;
    v_owner_uid integer;
    v_count     integer := 0;
    v_target    jsonb;
    v_existing  jsonb := '[]'::jsonb;
BEGIN
    SELECT * INTO v_ws FROM servers WHERE server_disc_id = p ->> 'workspace_id';
    IF v_scope = 'server' THEN
        IF v_ws.server_id IS NOT NULL THEN
            SELECT count(*) INTO v_count FROM server_memories
            WHERE server_id = v_ws.server_id AND persona_lineage_id = v_lineage;
            SELECT jsonb_build_object('memory_id', m.server_memory_id, 'lineage_id', m.persona_lineage_id,
                                      'content', m.content, 'tags', m.tags,
                                      'manually_written', m.manually_written, 'taught_by', tu.user_disc_id,
                                      'source', m.source)
            INTO v_target
            FROM server_memories m LEFT JOIN users tu ON tu.user_id = m.user_id
            WHERE m.server_memory_id = (p ->> 'memory_id')::bigint
              AND m.server_id = v_ws.server_id AND m.persona_lineage_id = v_lineage;
            IF (p ->> 'want_existing')::boolean THEN
                SELECT coalesce(jsonb_agg(content), '[]'::jsonb) INTO v_existing FROM server_memories
                WHERE server_id = v_ws.server_id AND persona_lineage_id = v_lineage;
            END IF;
        END IF;
    ELSE
        SELECT user_id INTO v_owner_uid FROM users WHERE user_disc_id = v_owner;
        IF v_owner_uid IS NOT NULL THEN
            SELECT count(*) INTO v_count FROM personal_memories
            WHERE user_id = v_owner_uid AND persona_lineage_id IN (v_lineage, 0);
            SELECT jsonb_build_object('memory_id', m.personal_memory_id, 'lineage_id', m.persona_lineage_id,
                                      'content', m.content, 'tags', m.tags,
                                      'manually_written', m.manually_written, 'taught_by', NULL,
                                      'source', m.source)
            INTO v_target
            FROM personal_memories m
            WHERE m.personal_memory_id = (p ->> 'memory_id')::bigint
              AND m.user_id = v_owner_uid AND m.persona_lineage_id = v_lineage;
            IF (p ->> 'want_existing')::boolean THEN
                SELECT coalesce(jsonb_agg(content), '[]'::jsonb) INTO v_existing FROM personal_memories
                WHERE user_id = v_owner_uid AND persona_lineage_id = v_lineage;
            END IF;
        END IF;
    END IF;
    RETURN jsonb_build_object(
        'workspace', CASE WHEN v_ws.server_id IS NOT NULL THEN jsonb_build_object(
                        'server_id', v_ws.server_id,
                        'self_teaching_enabled', v_ws.self_teaching_enabled,
                        'personal_memories_enabled', v_ws.personal_memories_enabled,
                        'memory_decay_enabled', v_ws.memory_decay_enabled,
                        'memory_decay_days', v_ws.memory_decay_days) END,
        'actor_privacy_level', coalesce((SELECT privacy_level FROM users WHERE user_disc_id = p ->> 'actor_id'), 0),
        'actor_blacklisted', EXISTS (SELECT 1 FROM personalization_blacklist
                                     WHERE server_id = v_ws.server_id AND user_disc_id = p ->> 'actor_id'),
        'identity', CASE WHEN p ->> 'identity_id' IS NOT NULL
                         THEN memory_proxy_identity(p ->> 'identity_id', p ->> 'workspace_id') END,
        'identity_hosted_by_actor', EXISTS (
            SELECT 1 FROM users u
            JOIN message_proxy_identities i ON i.user_id = u.user_id
            JOIN message_proxy_namespace_accounts a ON a.namespace_id = i.namespace_id
            WHERE u.user_disc_id = p ->> 'identity_id' AND a.host_user_disc_id = p ->> 'actor_id'),
        'owner_user_id', v_owner_uid,
        'count', v_count,
        'target', v_target,
        'existing', v_existing);
END;
$$;

-- What a bio seed decision needs, read inside the identity's locked transaction.
CREATE FUNCTION memory_seed_context(p_identity text, p_workspace_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'identity', memory_proxy_identity(p_identity, p_workspace_id),
        'already_seeded', EXISTS (SELECT 1 FROM bio_seeds b JOIN users u ON u.user_id = b.user_id
                                  WHERE u.user_disc_id = p_identity),
        'lineage0_count', (SELECT count(*) FROM personal_memories m JOIN users u ON u.user_id = m.user_id
                           WHERE u.user_disc_id = p_identity AND m.persona_lineage_id = 0));
$$;
