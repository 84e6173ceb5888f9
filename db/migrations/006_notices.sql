-- Notices (DESIGN.md section 6): the create context carries the workspace's notice settings,
-- and a save that evicted gets its notice (which shows the forgotten content, known only
-- under the lock) set inside the same transaction.

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
                        'memory_decay_days', s.memory_decay_days,
                        'tool_notice_verbosity', s.tool_notice_verbosity,
                        'tool_notice_hidden_keys', s.tool_notice_hidden_keys,
                        'thought_log_channel_id', s.thought_log_channel_id,
                        'private_channel_ids', s.private_channel_ids)
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

-- Set the notice of a command's stored result and of its memory.saved event; returns the
-- updated result and the command's outbox rows. Called in the transaction of the save.
CREATE FUNCTION memory_set_notice(p_command_id text, p_notice jsonb)
RETURNS TABLE (result jsonb, outbox jsonb)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE processed_commands SET result = jsonb_set(processed_commands.result, '{notice}', p_notice)
    WHERE command_id = p_command_id;
    UPDATE outbox SET payload = jsonb_set(payload, '{notice}', p_notice)
    WHERE command_id = p_command_id AND subject LIKE 'memory.saved.%';
    RETURN QUERY SELECT pc.result, memory_pending_outbox(p_command_id)
                 FROM processed_commands pc WHERE pc.command_id = p_command_id;
END;
$$;
