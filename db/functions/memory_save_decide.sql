-- The capacity and eviction rule under the owner's lock, and its one home: what one save would
-- do (its effects, as data), decided from the owner's rows and written nowhere. p_plan is a
-- create's SavePlan (worker/kinds/create/record.py), its owner locked by the caller.
-- memory_create_batch() applies what this returns; memory_create_dry_batch() only answers it.
-- STABLE, so PostgreSQL refuses any write here: a dry run, which calls only this, cannot write.
-- tests/integration/test_capacity_conformance.py holds it to one table of cases.
--
-- Returns the owner's key (servers.server_id or users.user_id; NULL for a workspace the bot
-- never registered, whose servers row the apply makes), the outcome, the count that decided it,
-- and the victim of a save with eviction.
CREATE OR REPLACE FUNCTION memory_worker.memory_save_decide(p_plan jsonb, p_workspace_id text,
                                                            OUT owner_key integer, OUT outcome memory_worker.save_outcome,
                                                            OUT counted integer, OUT victim_id bigint,
                                                            OUT victim_content text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_scope      text := p_plan ->> 'scope';
    v_lineage    bigint := (p_plan ->> 'lineage_id')::bigint;  -- TomoriBot's lineages are bigint
    v_cap        integer := (p_plan ->> 'cap')::integer;
    v_counted    bigint[];  -- the lineages whose rows count toward the cap
    v_privacy    integer;
    v_hosts      integer;
    v_protecting integer;
BEGIN
    IF v_scope = 'server' THEN
        SELECT s.server_id INTO owner_key FROM directory_workspaces() s WHERE s.server_disc_id = p_plan ->> 'owner_id';
        v_counted := ARRAY[v_lineage];
    ELSE
        owner_key := (p_plan ->> 'user_id')::integer;
        -- A user's global rows (lineage 0) count against every lineage's cap.
        v_counted := ARRAY[v_lineage, 0];
        -- Privacy is read again under the lock: a user who just opted out is never saved.
        SELECT u.privacy_level INTO v_privacy FROM directory_users() u WHERE u.user_id = owner_key;
        IF v_privacy IS DISTINCT FROM 0 THEN
            -- Fails closed: a vanished user row, or any level but 0 and 1, reads as full privacy
            -- (worker/domain/people.py's Privacy: 0 open, 1 partial, 2 full).
            outcome := CASE WHEN v_privacy = 1 THEN 'privacy_partial' ELSE 'privacy_full' END;
            RETURN;
        ELSIF (p_plan ->> 'proxy')::boolean THEN
            -- So are a proxy identity's hosts: one at full privacy, one blacklisted here, or
            -- none left linked, and nothing is saved.
            SELECT count(*), count(*) FILTER (WHERE (h ->> 'privacy_level')::integer >= 2
                                                 OR (h ->> 'blacklisted')::boolean)
            INTO v_hosts, v_protecting
            FROM jsonb_array_elements(memory_proxy_hosts(owner_key, p_workspace_id)) h;
            IF v_hosts = 0 OR v_protecting > 0 THEN
                outcome := 'host_protected';
                RETURN;
            END IF;
        END IF;
    END IF;

    -- The memories are one scope-independent relation, `owned` (both tables' rows, tagged with
    -- their scope and owner key), so the count and the victim's choice are each written once.
    -- Cost: the plans stay cached (static SQL, no EXECUTE, which would be planned on every
    -- call), and with plan_cache_mode forced to generic plans (by the callers, whose setting
    -- holds here) the other scope's branch is a one-time filter that never runs; left to
    -- choose, PostgreSQL kept custom plans, planning the count on every call (about +170 us
    -- per create, measured). `owned` is a CTE rather than a view or an SQL function: a view
    -- would pin the bot's columns in an adopted database, and a function must declare column
    -- types, which differ between TomoriBot's tables (serial ids) and the standalone layout's
    -- (bigserial).
    WITH owned AS (
        SELECT 'server'::text AS scope, m.server_id AS owner, m.persona_lineage_id AS lineage
        FROM server_memories m
        UNION ALL
        SELECT 'personal'::text, m.user_id, m.persona_lineage_id FROM personal_memories m
    )
    SELECT count(*) INTO counted FROM owned o
    WHERE o.scope = v_scope AND o.owner = owner_key AND o.lineage = ANY (v_counted);

    -- The victim, only at the cap and when the plan may evict: as one statement with the count,
    -- every save also started the victim's index walks (about +12 us per insert, measured).
    -- The walk is the *_eviction indexes of db/migrations/001_baseline.sql, an owner's
    -- evictable rows in this order, so the victim is the first entry past the dormancy cutoff
    -- whatever the table's size (without them: 102 buffers and 0.14 ms per choice at 1.2M rows,
    -- against 4 buffers and 0.02 ms).
    IF counted = v_cap AND jsonb_array_length(p_plan -> 'blocked_by') = 0 THEN
        WITH owned AS (
            SELECT 'server'::text AS scope, m.server_id AS owner, m.server_memory_id AS id,
                   m.persona_lineage_id AS lineage, m.manually_written, m.created_at, m.last_reinforced_at,
                   m.content
            FROM server_memories m
            UNION ALL
            SELECT 'personal'::text, m.user_id, m.personal_memory_id, m.persona_lineage_id, m.manually_written,
                   m.created_at, m.last_reinforced_at, m.content
            FROM personal_memories m
        )
        SELECT o.id, o.content INTO victim_id, victim_content FROM owned o
        WHERE o.scope = v_scope AND o.owner = owner_key
          AND o.lineage = v_lineage AND v_lineage <> 0 AND NOT o.manually_written
          AND coalesce(o.last_reinforced_at, o.created_at)
              < now() - make_interval(days => (p_plan ->> 'decay_days')::integer)
        -- The eviction order (never reinforced first, then least recently reinforced; ties by
        -- age, then id): this one line, walking the *_eviction index in the same order
        -- (tests/integration/test_hot_path_plans.py fails on a Sort node, so a changed line
        -- needs that index rebuilt in a migration).
        ORDER BY o.last_reinforced_at IS NOT NULL, o.last_reinforced_at, o.created_at, o.id
        LIMIT 1;
    END IF;

    -- Over the cap (the cap was lowered) a save is refused: replacing one row would keep the
    -- owner over it, and one save never deletes more than one row.
    outcome := CASE
        WHEN counted < v_cap THEN 'saved'
        WHEN counted > v_cap THEN 'over_cap'
        WHEN victim_id IS NOT NULL THEN 'saved_with_eviction'
        ELSE 'at_cap' END;
END;
$$;
