-- A proxy identity's own privacy level travels with it: panel writes for an identity at full
-- privacy are refused like a person's own.

CREATE OR REPLACE FUNCTION memory_proxy_identity(p_disc_id text, p_workspace_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('user_id', u.user_id, 'disc_id', u.user_disc_id, 'privacy_level', u.privacy_level,
                              'hosts', memory_proxy_hosts(u.user_id, p_workspace_id))
    FROM users u JOIN message_proxy_identities i ON i.user_id = u.user_id
    WHERE u.user_disc_id = p_disc_id;
$$;
