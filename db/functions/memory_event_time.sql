-- The events' occurred_at: when the command's transaction ran (its processed_at), in one
-- format whatever the session's time zone, so an event rebuilt later carries the same text.
-- STABLE, as to_char is, so that it is inlined where it is called.
CREATE OR REPLACE FUNCTION memory_worker.memory_event_time(p_at timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"');
$$;
