-- The create hot path, measured under load (tests/bench): what made it cost more than it must.

-- The eviction choice (memory_create_save) as an index walk: an owner's evictable rows in
-- eviction order (never reinforced first, then least recently reinforced; ties by age, then
-- id), so the victim is the first entry past the dormancy cutoff. Without it every save at
-- the cap reads and sorts all of the owner's rows, which are scattered over the table: the
-- cost then grows with the table (measured: 102 buffers and 0.14 ms per choice at 1.2M rows,
-- 4 buffers and 0.02 ms with the index).
CREATE INDEX IF NOT EXISTS server_memories_eviction ON server_memories
    (server_id, persona_lineage_id, (last_reinforced_at IS NOT NULL), last_reinforced_at, created_at,
     server_memory_id)
    WHERE NOT manually_written;
CREATE INDEX IF NOT EXISTS personal_memories_eviction ON personal_memories
    (user_id, persona_lineage_id, (last_reinforced_at IS NOT NULL), last_reinforced_at, created_at,
     personal_memory_id)
    WHERE NOT manually_written;

-- A command's unpublished outbox rows, found through outbox_command only. Filtering on
-- published_at in the WHERE clause let the planner walk outbox_unpublished instead, a partial
-- index that every published row leaves a dead entry in until vacuum: measured at 1.3 ms per
-- call and growing with the rows published since the last vacuum.
CREATE OR REPLACE FUNCTION memory_pending_outbox(p_command_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'id', o.id, 'subject', o.subject, 'headers', o.headers, 'payload', o.payload) ORDER BY o.id)
               FILTER (WHERE o.published_at IS NULL),
           '[]'::jsonb)
    FROM outbox o WHERE o.command_id = p_command_id;
$$;

-- As in 002 (CREATE OR REPLACE restates the whole body), but a command seen for the first
-- time (no stored result) skips the outbox read: only a repeat publishes pending events. The
-- FILTER rewrite above alone is not enough: with the outbox growing under load it still
-- measured 0.5 ms a call (make bench-profile).
CREATE OR REPLACE FUNCTION memory_create_context(p_command_id text, p_workspace_id text, p_ids text[],
                                                 p_lineage_id integer) RETURNS jsonb
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
    )
    FROM (SELECT NULL) one
    LEFT JOIN processed_commands pc ON pc.command_id = p_command_id;
$$;
