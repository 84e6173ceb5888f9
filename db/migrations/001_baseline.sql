-- Summary: the inbox, the outbox, bio seeds, the memory indexes and the server-side functions.
-- The worker's objects, in its own schema (docs/design.md, sections 7 and 7.1): the same in the standalone
-- layout and in an adopted bot database. db/migrate.py runs this after the layout (the
-- standalone tables, or a bot's memory tables with the worker's columns added) and after the
-- directory functions of db/facts.py, which are the only way these functions read directory
-- facts. Connections name the worker's schema first (search_path memory_worker, public), so
-- unqualified names below are the worker's objects, then the memory and directory tables.
--
-- Tables and indexes first, then each function's final body. Reads that feed the pure domain
-- are one statement each; every write is one transaction that starts by taking the owner's
-- advisory lock.

-- ----------------------------------------------------------------------------------------
-- Tables

-- A proxy identity's one-time bio seed (docs/design.md, section 8.3); TomoriBot has no equivalent.
CREATE TABLE memory_worker.bio_seeds (
    user_id   integer PRIMARY KEY REFERENCES public.users ON DELETE CASCADE,
    memory_id bigint,
    seeded_at timestamptz NOT NULL DEFAULT now()
);

-- The inbox: one stored result per command id, written in the command's own transaction.
-- workspace_id: a result is never handed to another workspace (ids must be unique, but a
-- clash is refused rather than answered).
CREATE TABLE memory_worker.processed_commands (
    command_id   text PRIMARY KEY,
    kind         text NOT NULL,
    workspace_id text,
    status       text NOT NULL,
    result       jsonb NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX processed_commands_processed_at ON processed_commands (processed_at);

-- The transactional outbox: events become visible only when the command commits.
CREATE TABLE memory_worker.outbox (
    id           bigserial PRIMARY KEY,
    command_id   text NOT NULL,
    subject      text NOT NULL,
    headers      jsonb NOT NULL DEFAULT '{}',
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
CREATE INDEX outbox_command ON outbox (command_id);
CREATE INDEX outbox_published_at ON outbox (published_at) WHERE published_at IS NOT NULL;

-- The memory tables' indexes (the standalone layout's or the bot's tables): every per-command
-- query is bounded to one owner and lineage, so count and eviction scan at most about a cap's
-- worth of rows whatever the table size.
CREATE INDEX IF NOT EXISTS server_memories_owner ON public.server_memories (server_id, persona_lineage_id);
CREATE INDEX IF NOT EXISTS personal_memories_owner ON public.personal_memories (user_id, persona_lineage_id);

-- The eviction choice (memory_create_save) as an index walk: an owner's evictable rows in
-- eviction order (never reinforced first, then least recently reinforced; ties by age, then
-- id), so the victim is the first entry past the dormancy cutoff. Without it every save at
-- the cap reads and sorts all of the owner's rows, which are scattered over the table: the
-- cost then grows with the table (measured: 102 buffers and 0.14 ms per choice at 1.2M rows,
-- 4 buffers and 0.02 ms with the index).
CREATE INDEX IF NOT EXISTS server_memories_eviction ON public.server_memories
    (server_id, persona_lineage_id, (last_reinforced_at IS NOT NULL), last_reinforced_at, created_at,
     server_memory_id)
    WHERE NOT manually_written;
CREATE INDEX IF NOT EXISTS personal_memories_eviction ON public.personal_memories
    (user_id, persona_lineage_id, (last_reinforced_at IS NOT NULL), last_reinforced_at, created_at,
     personal_memory_id)
    WHERE NOT manually_written;

-- ----------------------------------------------------------------------------------------
-- Functions

-- The per-owner lock, taken in exactly this one place: every write calls it first, in its
-- transaction (memory_create_save, and MemoryRepository.owner_transaction for the rest).
CREATE FUNCTION memory_worker.memory_lock_owner(p_scope text, p_owner_id text) RETURNS void
LANGUAGE sql AS $$
    -- Namespaced so the key cannot collide with other advisory-lock users of the database.
    SELECT pg_advisory_xact_lock(hashtextextended('memory-owner:' || p_scope || ':' || p_owner_id, 0));
$$;

-- A command's unpublished outbox rows, found through outbox_command only. Filtering on
-- published_at in the WHERE clause let the planner walk outbox_unpublished instead, a partial
-- index that every published row leaves a dead entry in until vacuum: measured at 1.3 ms per
-- call and growing with the rows published since the last vacuum.
CREATE FUNCTION memory_worker.memory_pending_outbox(p_command_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'id', o.id, 'subject', o.subject, 'headers', o.headers, 'payload', o.payload) ORDER BY o.id)
               FILTER (WHERE o.published_at IS NULL),
           '[]'::jsonb)
    FROM outbox o WHERE o.command_id = p_command_id;
$$;

-- The hosts of a proxy identity's namespace as one workspace sees them. Empty when the
-- identity has no resolvable host link (the caller fails closed on that).
CREATE FUNCTION memory_worker.memory_proxy_hosts(p_user_id integer, p_workspace_id text) RETURNS jsonb
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

-- A proxy identity (synthetic users row with an identity row) with its own privacy and its
-- hosts, or null.
CREATE FUNCTION memory_worker.memory_proxy_identity(p_disc_id text, p_workspace_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('user_id', u.user_id, 'disc_id', u.user_disc_id, 'privacy_level', u.privacy_level,
                              'hosts', memory_proxy_hosts(u.user_id, p_workspace_id))
    FROM directory_users() u JOIN directory_proxy_identities() i ON i.user_id = u.user_id
    WHERE u.user_disc_id = p_disc_id;
$$;

-- Everything the pure create decision needs, read in one statement at processing time:
-- a stored result (and its unpublished events) if the command was already handled, the
-- workspace settings (notice settings included), and the users rows, persona nicknames and
-- proxy hosts of the candidate ids. A command seen for the first time (no stored result)
-- skips the outbox read: only a repeat publishes pending events. Reading the outbox on every
-- call, even with memory_pending_outbox's FILTER, measured 0.5 ms a call with the outbox growing under
-- load (make bench-profile).
CREATE FUNCTION memory_worker.memory_create_context(p_command_id text, p_workspace_id text, p_ids text[],
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

-- The create's context read, planned once per session instead of once per call.
--
-- Left to choose (plan_cache_mode auto), PostgreSQL planned memory_create_context's query
-- afresh on every call: its custom plans, which see how many ids `ANY (p_ids)` has, always
-- looked cheaper than the generic plan, which guesses. Planning cost more than running the
-- query. Measured on 2 cores with a live inbox (make bench's world):
--   one call:                0.37-0.43 ms before, 0.17-0.21 ms after (0.13 ms is the round trip);
--   in batches of 30:        0.20 ms per create before, 0.033 ms after;
--   pgbench, the create SQL: 1,879-1,935 commands/s before, 2,291 after;
--   the worker end to end:   812-931 creates/s before, 1,027-1,119 after.
-- The generic plan is the one the custom plans picked (index scans on each key: the arrays
-- hold 0 to 3 ids). Like any cached plan it is made against the tables as they are when a
-- session first runs it: on a brand-new database, whose inbox is empty, it scans the inbox
-- until autovacuum's first ANALYZE replaces it, about a minute (tests/bench/README.md).
ALTER FUNCTION memory_worker.memory_create_context(text, text, text[], integer) SET plan_cache_mode = force_generic_plan;

-- Store a result that changed nothing (a refusal before persistence). Returns the result
-- that is now stored: this one, or the one a concurrent delivery stored first.
CREATE FUNCTION memory_worker.memory_record_result(p_command_id text, p_kind text, p_workspace_id text, p_result jsonb)
RETURNS TABLE (duplicate boolean, result jsonb)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)
    VALUES (p_command_id, p_kind, p_workspace_id, p_result #>> '{data,status}', p_result)
    ON CONFLICT (command_id) DO NOTHING;
    IF FOUND THEN
        RETURN QUERY SELECT false, p_result;
    ELSE
        RETURN QUERY SELECT true, pc.result FROM processed_commands pc WHERE pc.command_id = p_command_id;
    END IF;
END;
$$;

-- Write the outbox rows of one command, in order, filling in what only the database knows.
CREATE FUNCTION memory_worker.memory_outbox_write(p_command_id text, p_events jsonb, p_new_id bigint,
                                    p_victim_id bigint, p_victim_content text)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    ev jsonb;
    body jsonb;
    rows jsonb := '[]'::jsonb;
    new_row outbox%ROWTYPE;
BEGIN
    FOR ev IN SELECT value FROM jsonb_array_elements(p_events) LOOP
        CONTINUE WHEN (ev ->> 'only_on_evict')::boolean AND p_victim_id IS NULL;
        body := ev -> 'payload';
        CASE ev ->> 'fill'
            WHEN 'saved' THEN
                body := jsonb_set(body, '{memory_id}', to_jsonb(p_new_id));
                IF p_victim_id IS NOT NULL THEN
                    body := jsonb_set(body, '{evicted}', jsonb_build_object(
                        'memory_id', p_victim_id, 'content', p_victim_content));
                END IF;
            WHEN 'evicted' THEN
                body := body || jsonb_build_object('memory_id', p_victim_id,
                    'content_forgotten', p_victim_content, 'replaced_by', p_new_id);
            ELSE NULL;
        END CASE;
        INSERT INTO outbox (command_id, subject, headers, payload)
        VALUES (p_command_id, ev ->> 'subject', ev -> 'headers', body)
        RETURNING * INTO new_row;
        rows := rows || jsonb_build_object('id', new_row.id, 'subject', new_row.subject,
                                           'headers', new_row.headers, 'payload', new_row.payload);
    END LOOP;
    RETURN rows;
END;
$$;

-- The create transaction (docs/design.md, sections 4 step 8 and 5). p carries the plan the pure
-- domain made and every possible result and event, pre-built; this function only decides
-- what needs the owner's rows under the lock (count, eviction victim) and fills in ids.
CREATE FUNCTION memory_worker.memory_create_save(p jsonb)
RETURNS TABLE (duplicate boolean, result jsonb, outbox jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    v_command_id text := p ->> 'command_id';
    v_scope      text := p ->> 'scope';
    v_lineage    bigint := (p ->> 'lineage_id')::bigint;  -- TomoriBot's lineages are bigint
    v_cap        integer := (p ->> 'cap')::integer;
    v_cutoff     timestamptz := now() - make_interval(days => (p ->> 'decay_days')::integer);
    v_server_id  integer;
    v_user_id    integer := (p ->> 'user_id')::integer;
    v_count      integer;
    v_privacy    integer;
    v_hosts      integer;
    v_protecting integer;
    v_victim_id  bigint;
    v_victim_content text;
    v_new_id     bigint;
    v_result     jsonb;
    v_rows       jsonb := '[]'::jsonb;
BEGIN
    PERFORM memory_lock_owner(v_scope, p ->> 'owner_id');

    SELECT pc.result INTO v_result FROM processed_commands pc WHERE pc.command_id = v_command_id;
    IF FOUND THEN
        -- A repeat that raced the original: it answers, so it also publishes what is pending.
        RETURN QUERY SELECT true, v_result, memory_pending_outbox(v_command_id);
        RETURN;
    END IF;

    IF v_scope = 'server' THEN
        SELECT s.server_id INTO v_server_id FROM directory_workspaces() s WHERE s.server_disc_id = p ->> 'workspace_id';
        IF v_server_id IS NULL THEN
            -- The one directory write, the same in both modes: a workspace the bot never
            -- registered gets a servers row (every other column has a default).
            INSERT INTO servers (server_disc_id) VALUES (p ->> 'workspace_id')
            ON CONFLICT (server_disc_id) DO NOTHING;
            SELECT s.server_id INTO v_server_id FROM directory_workspaces() s WHERE s.server_disc_id = p ->> 'workspace_id';
        END IF;
        SELECT count(*) INTO v_count FROM server_memories m
        WHERE m.server_id = v_server_id AND m.persona_lineage_id = v_lineage;
    ELSE
        -- Privacy is read again under the lock: a user who just opted out is never saved.
        SELECT u.privacy_level INTO v_privacy FROM directory_users() u WHERE u.user_id = v_user_id;
        IF v_privacy IS DISTINCT FROM 0 THEN
            -- Fails closed: a vanished user row reads as full privacy.
            v_result := p -> 'results' -> ('privacy_' || coalesce(v_privacy, 2));
        ELSIF (p ->> 'proxy')::boolean THEN
            -- So are a proxy identity's hosts: one at full privacy, one blacklisted here, or
            -- none left linked, and nothing is saved.
            SELECT count(*), count(*) FILTER (WHERE (h ->> 'privacy_level')::integer >= 2
                                                 OR (h ->> 'blacklisted')::boolean)
            INTO v_hosts, v_protecting
            FROM jsonb_array_elements(memory_proxy_hosts(v_user_id, p ->> 'workspace_id')) h;
            IF v_hosts = 0 OR v_protecting > 0 THEN
                v_result := p #> '{results,host_protected}';
            END IF;
        END IF;
        SELECT count(*) INTO v_count FROM personal_memories m
        WHERE m.user_id = v_user_id AND m.persona_lineage_id IN (v_lineage, 0);
    END IF;

    IF v_result IS NULL AND v_count > v_cap THEN
        v_result := jsonb_set(p #> '{results,over_cap}', '{data,current_count}', to_jsonb(v_count));
    ELSIF v_result IS NULL AND v_count = v_cap THEN
        IF (p ->> 'may_evict')::boolean THEN
            -- Never-reinforced first, then least recently reinforced; ties by age, then id.
            IF v_scope = 'server' THEN
                SELECT m.server_memory_id, m.content INTO v_victim_id, v_victim_content
                FROM server_memories m
                WHERE m.server_id = v_server_id AND m.persona_lineage_id = v_lineage
                  AND v_lineage <> 0 AND NOT m.manually_written
                  AND coalesce(m.last_reinforced_at, m.created_at) < v_cutoff
                ORDER BY m.last_reinforced_at IS NOT NULL, m.last_reinforced_at, m.created_at, m.server_memory_id
                LIMIT 1;
                DELETE FROM server_memories WHERE server_memory_id = v_victim_id;
            ELSE
                SELECT m.personal_memory_id, m.content INTO v_victim_id, v_victim_content
                FROM personal_memories m
                WHERE m.user_id = v_user_id AND m.persona_lineage_id = v_lineage
                  AND v_lineage <> 0 AND NOT m.manually_written
                  AND coalesce(m.last_reinforced_at, m.created_at) < v_cutoff
                ORDER BY m.last_reinforced_at IS NOT NULL, m.last_reinforced_at, m.created_at, m.personal_memory_id
                LIMIT 1;
                DELETE FROM personal_memories WHERE personal_memory_id = v_victim_id;
            END IF;
        END IF;
        IF v_victim_id IS NULL THEN
            v_result := jsonb_set(p #> '{results,at_cap}', '{data,current_count}', to_jsonb(v_count));
        END IF;
    END IF;

    IF v_result IS NULL THEN
        IF v_scope = 'server' THEN
            INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, user_id, content,
                                         manually_written, source)
            VALUES (v_server_id, (p ->> 'persona_id')::integer, v_lineage,
                    (SELECT u.user_id FROM directory_users() u WHERE u.user_disc_id = p ->> 'teacher_id'),
                    p ->> 'content', (p ->> 'manually_written')::boolean, p ->> 'source')
            RETURNING server_memory_id INTO v_new_id;
        ELSE
            INSERT INTO personal_memories (user_id, persona_lineage_id, content, manually_written, source)
            VALUES (v_user_id, v_lineage, p ->> 'content', (p ->> 'manually_written')::boolean, p ->> 'source')
            RETURNING personal_memory_id INTO v_new_id;
        END IF;
        IF v_victim_id IS NULL THEN
            v_result := jsonb_set(p #> '{results,saved}', '{data,memory_id}', to_jsonb(v_new_id));
        ELSE
            v_result := jsonb_set(jsonb_set(p #> '{results,evicted}', '{data,memory_id}', to_jsonb(v_new_id)),
                                  '{data,content_forgotten}', to_jsonb(v_victim_content));
        END IF;
        v_rows := memory_outbox_write(v_command_id, p -> 'events', v_new_id, v_victim_id, v_victim_content);
    END IF;

    -- A plain insert: should a repeat slip past the check above (a refusal stored without the
    -- lock), the transaction fails whole and the caller reads the stored result.
    INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)
    VALUES (v_command_id, 'create', p ->> 'workspace_id', v_result #>> '{data,status}', v_result);
    RETURN QUERY SELECT false, v_result, v_rows;
END;
$$;

-- Set the notice of a command's stored result and of its memory.saved event; returns the
-- updated result and the command's outbox rows. Called in the transaction of a save that
-- evicted: the eviction card shows the forgotten content only the locked transaction knew.
CREATE FUNCTION memory_worker.memory_set_notice(p_command_id text, p_notice jsonb)
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

-- What a panel decision needs, read inside the owner's locked transaction. A global
-- (lineage 0) personal add counts against the fullest lineage too: every lineage's cap
-- includes the global rows.
CREATE FUNCTION memory_worker.memory_manual_context(p jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_scope     text := p ->> 'scope';
    v_lineage   bigint := (p ->> 'lineage_id')::bigint;
    v_owner     text := p ->> 'owner_id';
    v_ws        record;
    v_owner_uid integer;
    v_count     integer := 0;
    v_target    jsonb;
    v_existing  jsonb := '[]'::jsonb;
BEGIN
    SELECT * INTO v_ws FROM directory_workspaces() w WHERE w.server_disc_id = p ->> 'workspace_id';
    IF v_scope = 'server' THEN
        IF v_ws.server_id IS NOT NULL THEN
            SELECT count(*) INTO v_count FROM server_memories
            WHERE server_id = v_ws.server_id AND persona_lineage_id = v_lineage;
            SELECT jsonb_build_object('memory_id', m.server_memory_id, 'lineage_id', m.persona_lineage_id,
                                      'content', m.content, 'tags', coalesce(m.tags, '{}'),
                                      'manually_written', m.manually_written, 'taught_by', tu.user_disc_id,
                                      'source', m.source)
            INTO v_target
            FROM server_memories m LEFT JOIN directory_users() tu ON tu.user_id = m.user_id
            WHERE m.server_memory_id = (p ->> 'memory_id')::bigint
              AND m.server_id = v_ws.server_id AND m.persona_lineage_id = v_lineage;
            IF (p ->> 'want_existing')::boolean THEN
                SELECT coalesce(jsonb_agg(content), '[]'::jsonb) INTO v_existing FROM server_memories
                WHERE server_id = v_ws.server_id AND persona_lineage_id = v_lineage;
            END IF;
        END IF;
    ELSE
        SELECT u.user_id INTO v_owner_uid FROM directory_users() u WHERE u.user_disc_id = v_owner;
        IF v_owner_uid IS NOT NULL THEN
            IF v_lineage = 0 THEN
                -- A global row counts against every lineage's cap: the fullest lineage binds.
                SELECT (SELECT count(*) FROM personal_memories
                        WHERE user_id = v_owner_uid AND persona_lineage_id = 0)
                     + coalesce((SELECT max(n) FROM (SELECT count(*) AS n FROM personal_memories
                                                     WHERE user_id = v_owner_uid AND persona_lineage_id <> 0
                                                     GROUP BY persona_lineage_id) per_lineage), 0)
                INTO v_count;
            ELSE
                SELECT count(*) INTO v_count FROM personal_memories
                WHERE user_id = v_owner_uid AND persona_lineage_id IN (v_lineage, 0);
            END IF;
            SELECT jsonb_build_object('memory_id', m.personal_memory_id, 'lineage_id', m.persona_lineage_id,
                                      'content', m.content, 'tags', coalesce(m.tags, '{}'),
                                      'manually_written', m.manually_written, 'taught_by', NULL,
                                      'source', m.source)
            INTO v_target
            FROM personal_memories m
            WHERE m.personal_memory_id = (p ->> 'memory_id')::bigint
              AND m.user_id = v_owner_uid AND m.persona_lineage_id = v_lineage;
            IF (p ->> 'want_existing')::boolean THEN
                -- A batch is de-duplicated against the user's global rows too, as TomoriBot's
                -- panel does (docs/design.md, section 8.1).
                SELECT coalesce(jsonb_agg(content), '[]'::jsonb) INTO v_existing FROM personal_memories
                WHERE user_id = v_owner_uid AND persona_lineage_id IN (v_lineage, 0);
            END IF;
        END IF;
    END IF;
    RETURN jsonb_build_object(
        'workspace', CASE WHEN v_ws.server_id IS NOT NULL THEN jsonb_build_object(
                        'server_id', v_ws.server_id,
                        'self_teaching_enabled', v_ws.self_teaching_enabled,
                        'personal_memories_enabled', v_ws.personal_memories_enabled,
                        'member_teaching_enabled', v_ws.member_teaching_enabled,
                        'memory_decay_enabled', v_ws.memory_decay_enabled,
                        'memory_decay_days', v_ws.memory_decay_days) END,
        'actor_privacy_level', coalesce((SELECT u.privacy_level FROM directory_users() u
                                         WHERE u.user_disc_id = p ->> 'actor_id'), 0),
        'actor_blacklisted', EXISTS (SELECT 1 FROM directory_blacklist() b
                                     WHERE b.server_id = v_ws.server_id AND b.user_disc_id = p ->> 'actor_id'),
        'identity', CASE WHEN p ->> 'identity_id' IS NOT NULL
                         THEN memory_proxy_identity(p ->> 'identity_id', p ->> 'workspace_id') END,
        'identity_hosted_by_actor', EXISTS (
            SELECT 1 FROM directory_users() u
            JOIN directory_proxy_hosts() a ON a.user_id = u.user_id
            WHERE u.user_disc_id = p ->> 'identity_id' AND a.host_user_disc_id = p ->> 'actor_id'),
        'owner_user_id', v_owner_uid,
        'count', v_count,
        'target', v_target,
        'existing', v_existing);
END;
$$;

-- What a bio seed decision needs, read inside the identity's locked transaction.
CREATE FUNCTION memory_worker.memory_seed_context(p_identity text, p_workspace_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'identity', memory_proxy_identity(p_identity, p_workspace_id),
        'already_seeded', EXISTS (SELECT 1 FROM bio_seeds b JOIN directory_users() u ON u.user_id = b.user_id
                                  WHERE u.user_disc_id = p_identity),
        'lineage0_count', (SELECT count(*) FROM personal_memories m JOIN directory_users() u ON u.user_id = m.user_id
                           WHERE u.user_disc_id = p_identity AND m.persona_lineage_id = 0));
$$;

-- Retention: published events older than the stream's own horizon, and inbox rows older than
-- the configured window (longer than a dead letter is kept). Batched so a large backlog never
-- holds long locks.
CREATE FUNCTION memory_worker.memory_prune(p_inbox_days integer, p_outbox_days integer, p_batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_inbox integer;
    v_outbox integer;
BEGIN
    DELETE FROM processed_commands WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM processed_commands
        WHERE processed_at < now() - make_interval(days => p_inbox_days) LIMIT p_batch));
    GET DIAGNOSTICS v_inbox = ROW_COUNT;
    DELETE FROM outbox WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM outbox
        WHERE published_at < now() - make_interval(days => p_outbox_days) LIMIT p_batch));
    GET DIAGNOSTICS v_outbox = ROW_COUNT;
    RETURN v_inbox + v_outbox;
END;
$$;

-- Creates that arrive together from several partitions, handled in one round trip each for
-- the read and for the write (worker/services/create_batch.py). Each command still runs
-- exactly the single-command functions above; only the round trips and the commit are shared.

-- memory_create_context() for every request of p (a JSON array of {command_id, workspace_id,
-- ids, lineage_id}), in the same order.
CREATE FUNCTION memory_worker.memory_create_contexts(p jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(memory_create_context(e ->> 'command_id', e ->> 'workspace_id',
                                                    ARRAY(SELECT jsonb_array_elements_text(e -> 'ids')),
                                                    (e ->> 'lineage_id')::integer) ORDER BY n), '[]'::jsonb)
    FROM jsonb_array_elements(p) WITH ORDINALITY AS t(e, n);
$$;

-- One transaction for several commands: p.owners ([scope, owner id] pairs, in the caller's
-- sorted order) are locked first, so two batches sharing owners wait rather than deadlock;
-- then each op runs in order: {plan} is memory_create_save(plan), {command_id, workspace_id,
-- result} is memory_record_result() of a refusal. Returns [{duplicate, result, outbox}], one
-- per op. Any error rolls the whole batch back; the caller then runs the commands one by one.
CREATE FUNCTION memory_worker.memory_create_batch(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    owner jsonb;
    op    jsonb;
    r     record;
    done  jsonb[] := '{}';  -- an expanded array: appending is in place
BEGIN
    FOR owner IN SELECT value FROM jsonb_array_elements(p -> 'owners') LOOP
        PERFORM memory_lock_owner(owner ->> 0, owner ->> 1);
    END LOOP;
    FOR op IN SELECT value FROM jsonb_array_elements(p -> 'ops') LOOP
        IF op ? 'plan' THEN
            SELECT * INTO r FROM memory_create_save(op -> 'plan');
            done := array_append(done, jsonb_build_object('duplicate', r.duplicate, 'result', r.result,
                                                          'outbox', r.outbox));
        ELSE
            SELECT * INTO r FROM memory_record_result(op ->> 'command_id', 'create', op ->> 'workspace_id',
                                                      op -> 'result');
            done := array_append(done, jsonb_build_object('duplicate', r.duplicate, 'result', r.result,
                                                          'outbox', '[]'::jsonb));
        END IF;
    END LOOP;
    RETURN to_jsonb(done);
END;
$$;

-- memory_set_notice() for several evicting saves of one batch (p: [{command_id, notice}]),
-- in the batch's transaction. Returns [{duplicate: false, result, outbox}] in the same order.
CREATE FUNCTION memory_worker.memory_set_notices(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    e    jsonb;
    r    record;
    done jsonb[] := '{}';
BEGIN
    FOR e IN SELECT value FROM jsonb_array_elements(p) LOOP
        SELECT * INTO r FROM memory_set_notice(e ->> 'command_id', e -> 'notice');
        done := array_append(done, jsonb_build_object('duplicate', false, 'result', r.result,
                                                  'outbox', r.outbox));
    END LOOP;
    RETURN to_jsonb(done);
END;
$$;
