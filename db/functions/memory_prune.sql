-- Retention: inbox rows older than INBOX_RETENTION_DAYS (longer than a dead letter is kept, so
-- a replay is always recognised), and published rows of the outbox table releases before
-- migration 006 wrote, older than the events stream's own horizon. At most p_batch rows of
-- each a call, so a large backlog never holds long locks: the caller calls again while rows
-- go (worker/consuming/outbox/prune.py).
CREATE OR REPLACE FUNCTION memory_worker.memory_prune(p_inbox_days integer, p_outbox_days integer, p_batch integer)
RETURNS integer
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
