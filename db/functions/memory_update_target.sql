-- What a memory.update plan learns under its owner's lock (docs/design.md, section 8.4;
-- worker/kinds/update/service.py), in one statement: the memory it names, locked for the write
-- (a server memory of this workspace and exactly this lineage; a personal memory of this user, of
-- this lineage or global, lineage 0: TomoriBot's removeByIdWithLineage and loadForUserLineage),
-- and for a personal memory what decides whether it may be written now: the user's privacy level
-- (null: the users row is gone), whether this workspace blacklists them (the notice's footer),
-- and a proxy identity's hosts (memory_proxy_hosts). p is db/requests.py's UpdateTargetRequest
-- (tests/unit/test_sql_arguments.py holds the keys read here to its fields). The row lock serves
-- the write that follows; a read-only transaction (a dry run) has none to serve and may take no
-- row lock (a row lock is a write), so it reads the same row unlocked.
CREATE OR REPLACE FUNCTION memory_worker.memory_update_target(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    v_writes  boolean := current_setting('transaction_read_only') = 'off';
    v_lineage bigint := (p ->> 'lineage_id')::bigint;
    v_user    integer := (p ->> 'user_id')::integer;
    v_server  integer;
    v_memory  jsonb;
BEGIN
    IF p ->> 'scope' = 'server' THEN
        SELECT s.server_id INTO v_server FROM directory_workspaces() s WHERE s.server_disc_id = p ->> 'workspace_id';
        IF v_writes THEN  -- locked first, so the read below is of the row the write changes
            PERFORM FROM server_memories m
            WHERE m.server_memory_id = (p ->> 'memory_id')::bigint AND m.server_id = v_server
              AND m.persona_lineage_id = v_lineage
            FOR UPDATE;
        END IF;
        SELECT jsonb_build_object('lineage_id', m.persona_lineage_id, 'content', m.content, 'source', m.source,
                                  'manually_written', m.manually_written)
        INTO v_memory
        FROM server_memories m
        WHERE m.server_memory_id = (p ->> 'memory_id')::bigint AND m.server_id = v_server
          AND m.persona_lineage_id = v_lineage;
        RETURN jsonb_build_object('memory', v_memory);
    END IF;
    IF v_writes THEN
        PERFORM FROM personal_memories m
        WHERE m.personal_memory_id = (p ->> 'memory_id')::bigint AND m.user_id = v_user
          AND m.persona_lineage_id IN (v_lineage, 0)
        FOR UPDATE;
    END IF;
    SELECT jsonb_build_object('lineage_id', m.persona_lineage_id, 'content', m.content, 'source', m.source,
                              'manually_written', m.manually_written)
    INTO v_memory
    FROM personal_memories m
    WHERE m.personal_memory_id = (p ->> 'memory_id')::bigint AND m.user_id = v_user
      AND m.persona_lineage_id IN (v_lineage, 0);
    RETURN jsonb_build_object(
        'memory', v_memory,
        'privacy_level', (SELECT u.privacy_level FROM directory_users() u WHERE u.user_id = v_user),
        'blacklisted', EXISTS (SELECT 1 FROM directory_blacklist() b JOIN directory_workspaces() s ON s.server_id = b.server_id
                               WHERE s.server_disc_id = p ->> 'workspace_id' AND b.user_disc_id = p ->> 'owner_id'),
        'hosts', CASE WHEN (p ->> 'proxy')::boolean THEN memory_proxy_hosts(v_user, p ->> 'workspace_id') END);
END;
$$;
