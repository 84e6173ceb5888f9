-- The id the next memory row of a scope would get ('server' or 'personal'), read without
-- taking it (reading the sequence writes nothing, nextval would): what a dry run answers for
-- a memory it would have created. The sequence's own state says it: its last value and
-- whether that was handed out yet (a fresh or restarted sequence gives its last value first),
-- and its increment. A guess, as the shadow report says: any insert in between (a bot's own, a
-- rolled back one) takes it first.
CREATE OR REPLACE FUNCTION memory_worker.memory_next_id(p_scope text) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_sequence regclass := CASE p_scope
        WHEN 'server' THEN pg_get_serial_sequence('public.server_memories', 'server_memory_id')
        ELSE pg_get_serial_sequence('public.personal_memories', 'personal_memory_id') END::regclass;
    v_next bigint;
BEGIN
    EXECUTE format('SELECT CASE WHEN s.is_called THEN s.last_value + q.seqincrement ELSE s.last_value END'
                   ' FROM %s s, pg_catalog.pg_sequence q WHERE q.seqrelid = $1', v_sequence)
    INTO v_next USING v_sequence;
    RETURN v_next;
END;
$$;
