-- The hosts of a proxy identity's namespace as one workspace sees them: each host's privacy
-- level (0 when the host has no users row) and whether this workspace blacklists it. Empty when
-- the identity has no resolvable host link; every caller fails closed on that (docs/design.md,
-- section 4 step 9).
CREATE OR REPLACE FUNCTION memory_worker.memory_proxy_hosts(p_user_id integer, p_workspace_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'disc_id', a.host_user_disc_id,
               'privacy_level', coalesce(hu.privacy_level, 0),
               'blacklisted', EXISTS (
                   SELECT 1 FROM directory_blacklist() b JOIN directory_workspaces() s ON s.server_id = b.server_id
                   WHERE s.server_disc_id = p_workspace_id AND b.user_disc_id = a.host_user_disc_id))
               ORDER BY a.host_user_disc_id), '[]'::jsonb)
    FROM directory_proxy_hosts() a
    LEFT JOIN directory_users() hu ON hu.user_disc_id = a.host_user_disc_id
    WHERE a.user_id = p_user_id;
$$;
