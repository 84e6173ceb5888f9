-- The create's context read (006's), reporting a stored command whole: its result as the text
-- stored (a JSON string, so its bytes survive), and the tenant, event facts and event time.
CREATE OR REPLACE FUNCTION memory_worker.memory_create_context(p_command_id text, p_workspace_id text, p_ids text[],
                                                            p_lineage_id bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'stored', pc.result::text,
        'stored_kind', pc.kind,
        'stored_workspace', pc.workspace_id,
        'stored_tenant', pc.tenant,
        'events', coalesce(pc.events, '[]'::jsonb),
        'event_facts', pc.event_facts,
        'event_time', memory_event_time(pc.processed_at),
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
