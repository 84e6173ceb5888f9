-- Retention: inbox rows older than INBOX_RETENTION_DAYS (longer than a dead letter is kept, so
-- a replay is always recognised), and shadow pairs of the same age (012_shadow_pairs.sql). At
-- most p_batch rows of each a call, so a large backlog never holds
-- long locks: the caller calls again while rows go (worker/consuming/administration/inbox_prune.py).
CREATE OR REPLACE FUNCTION memory_worker.memory_prune(p_inbox_days integer, p_batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_inbox integer;
    v_pairs integer;
BEGIN
    DELETE FROM processed_commands WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM processed_commands
        WHERE processed_at < now() - make_interval(days => p_inbox_days) LIMIT p_batch));
    GET DIAGNOSTICS v_inbox = ROW_COUNT;
    DELETE FROM shadow_pairs WHERE command_id = ANY (ARRAY(
        SELECT command_id FROM shadow_pairs
        WHERE created_at < now() - make_interval(days => p_inbox_days) LIMIT p_batch));
    GET DIAGNOSTICS v_pairs = ROW_COUNT;
    RETURN v_inbox + v_pairs;
END;
$$;
