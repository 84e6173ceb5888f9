-- The id the next memory row of a scope would get ('server' or 'personal'), read without
-- taking it (pg_sequence_last_value writes nothing, nextval would): what a dry run answers for
-- a memory it would have created. A guess, as the shadow report says: any insert in between
-- (a bot's own, a rolled back one) takes it first.
CREATE OR REPLACE FUNCTION memory_worker.memory_next_id(p_scope text) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce(pg_sequence_last_value(
               CASE p_scope WHEN 'server' THEN pg_get_serial_sequence('public.server_memories', 'server_memory_id')
                            ELSE pg_get_serial_sequence('public.personal_memories', 'personal_memory_id') END::regclass),
           0) + 1;
$$;
