-- A proxy identity (a synthetic users row with an identity row) with its own privacy level and
-- its hosts (memory_proxy_hosts), or null: what the panels and the bio seed check.
CREATE OR REPLACE FUNCTION memory_worker.memory_proxy_identity(p_disc_id text, p_workspace_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('user_id', u.user_id, 'disc_id', u.user_disc_id, 'privacy_level', u.privacy_level,
                              'hosts', memory_proxy_hosts(u.user_id, p_workspace_id))
    FROM directory_users() u JOIN directory_proxy_identities() i ON i.user_id = u.user_id
    WHERE u.user_disc_id = p_disc_id;
$$;
