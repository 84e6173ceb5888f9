-- Everything the pure create decision needs, read in one statement at processing time: the
-- command as stored if it was seen before (memory_stored_command; worker/services/stored.py's
-- seen_before() decides what that means), the workspace settings (notice settings included),
-- and for the candidate ids (the triggerer's, and every id the target may resolve to) their
-- users rows with what the target resolution reads (the naming layers: global affixes and
-- addressing style, the lineage's nickname and affixes), whether this workspace blacklists
-- them (the notice's footer) and a proxy identity's hosts.
CREATE OR REPLACE FUNCTION memory_worker.memory_create_context(p_command_id text, p_workspace_id text, p_ids text[],
                                                            p_lineage_id bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'stored', CASE WHEN pc.command_id IS NOT NULL THEN memory_stored_command(pc) END,
        'workspace', (SELECT jsonb_build_object(
                        'server_id', s.server_id,
                        'self_teaching_enabled', s.self_teaching_enabled,
                        'personal_memories_enabled', s.personal_memories_enabled,
                        'memory_decay_enabled', s.memory_decay_enabled,
                        'memory_decay_days', s.memory_decay_days,
                        'tool_notice_verbosity', s.tool_notice_verbosity,
                        'tool_notice_hidden_keys', s.tool_notice_hidden_keys,
                        'thought_log_channel_id', s.thought_log_channel_id,
                        'private_channel_ids', s.private_channel_ids,
                        'secret_guard_enabled', s.secret_guard_enabled)
                      FROM directory_workspaces() s WHERE s.server_disc_id = p_workspace_id),
        'users', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                        'user_id', u.user_id, 'disc_id', u.user_disc_id,
                        'nickname', u.nickname, 'privacy_level', u.privacy_level,
                        'prefix_override', un.prefix_override, 'suffix_override', un.suffix_override,
                        'addressing_style', un.addressing_style,
                        'persona_naming', pn.user_id IS NOT NULL, 'persona_nickname', pn.nickname,
                        'persona_prefix', pn.prefix_override, 'persona_suffix', pn.suffix_override,
                        'blacklisted', EXISTS (
                            SELECT 1 FROM directory_blacklist() b JOIN directory_workspaces() s ON s.server_id = b.server_id
                            WHERE s.server_disc_id = p_workspace_id AND b.user_disc_id = u.user_disc_id),
                        'proxy_hosts', CASE WHEN i.user_id IS NOT NULL
                                            THEN memory_proxy_hosts(u.user_id, p_workspace_id) END)), '[]'::jsonb)
                  FROM directory_users() u
                  LEFT JOIN directory_user_naming() un ON un.user_id = u.user_id
                  LEFT JOIN directory_persona_naming() pn ON pn.user_id = u.user_id AND pn.lineage_id = p_lineage_id
                  LEFT JOIN directory_proxy_identities() i ON i.user_id = u.user_id
                  WHERE u.user_disc_id = ANY (p_ids))
    )
    FROM (SELECT NULL) one
    LEFT JOIN processed_commands pc ON pc.command_id = p_command_id;
$$;

-- Planned once per session instead of once per call.
--
-- Left to choose (plan_cache_mode auto), PostgreSQL planned this query afresh on every call:
-- its custom plans, which see how many ids `ANY (p_ids)` has, always looked cheaper than the
-- generic plan, which guesses. Planning cost more than running the query. Measured on 2 cores
-- with a live inbox (make bench's world):
--   one call:                0.37-0.43 ms before, 0.17-0.21 ms after (0.13 ms is the round trip);
--   in batches of 30:        0.20 ms per create before, 0.033 ms after;
--   pgbench, the create SQL: 1,879-1,935 commands/s before, 2,291 after;
--   the worker end to end:   812-931 creates/s before, 1,027-1,119 after.
-- The generic plan is the one the custom plans picked (index scans on each key: the arrays
-- hold 0 to 3 ids). Like any cached plan it is made against the tables as they are when a
-- session first runs it: on a brand-new database, whose inbox is empty, it scans the inbox
-- until autovacuum's first ANALYZE replaces it, about a minute (tests/bench/README.md).
-- CREATE OR REPLACE resets the setting: it stays here, beside the body.
ALTER FUNCTION memory_worker.memory_create_context(text, text, text[], bigint) SET plan_cache_mode = force_generic_plan;
