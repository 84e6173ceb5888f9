-- What a bio seed decision needs (docs/design.md, section 8.3), read inside the identity's
-- locked transaction: the identity and its hosts, whether it was seeded already, and its
-- lineage-0 count (a seed counts only against lineage 0).
CREATE OR REPLACE FUNCTION memory_worker.memory_seed_context(p_identity text, p_workspace_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'identity', memory_proxy_identity(p_identity, p_workspace_id),
        'already_seeded', EXISTS (SELECT 1 FROM bio_seeds b JOIN directory_users() u ON u.user_id = b.user_id
                                  WHERE u.user_disc_id = p_identity),
        'lineage0_count', (SELECT count(*) FROM personal_memories m JOIN directory_users() u ON u.user_id = m.user_id
                           WHERE u.user_disc_id = p_identity AND m.persona_lineage_id = 0));
$$;
