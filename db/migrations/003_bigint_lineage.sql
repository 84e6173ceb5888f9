-- Summary: 64-bit persona lineages: standalone lineage columns and the create's context read take bigint.
-- 64-bit persona lineages end to end. TomoriBot's lineage columns are bigint and its lineage
-- ids come from a sequence; the contract carried an int32 lineage, so a larger one could not
-- be sent at all. The contract now takes up to 2^63 - 1, and so does every statement:
-- - the standalone layout's lineage columns become bigint (the worker's own tables; an
--   adopted bot's are left exactly as they are: TomoriBot's are bigint already);
-- - the create's context read takes a bigint lineage.

DO $$
BEGIN
    IF (SELECT mode FROM memory_worker.database_mode) = 'standalone' THEN
        ALTER TABLE public.server_memories ALTER COLUMN persona_lineage_id TYPE bigint;
        ALTER TABLE public.personal_memories ALTER COLUMN persona_lineage_id TYPE bigint;
        ALTER TABLE public.persona_nicknames ALTER COLUMN lineage_id TYPE bigint;
    END IF;
END;
$$;

DROP FUNCTION memory_worker.memory_create_contexts(jsonb);
DROP FUNCTION memory_worker.memory_create_context(text, text, text[], integer);

CREATE FUNCTION memory_worker.memory_create_context(p_command_id text, p_workspace_id text, p_ids text[],
                                                 p_lineage_id bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'stored', pc.result,
        'stored_workspace', pc.workspace_id,
        'pending', CASE WHEN pc.command_id IS NULL THEN '[]'::jsonb ELSE memory_pending_outbox(p_command_id) END,
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

-- Planned once per session, as before (001_baseline.sql says why).
ALTER FUNCTION memory_worker.memory_create_context(text, text, text[], bigint) SET plan_cache_mode = force_generic_plan;

-- memory_create_context() for every request of p (a JSON array of {command_id, workspace_id,
-- ids, lineage_id}), in the same order.
CREATE FUNCTION memory_worker.memory_create_contexts(p jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(memory_create_context(e ->> 'command_id', e ->> 'workspace_id',
                                                    ARRAY(SELECT jsonb_array_elements_text(e -> 'ids')),
                                                    (e ->> 'lineage_id')::bigint) ORDER BY n), '[]'::jsonb)
    FROM jsonb_array_elements(p) WITH ORDINALITY AS t(e, n);
$$;
