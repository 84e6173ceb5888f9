-- What a create's save learned under the lock, as its inbox row keeps it (`facts`;
-- worker/kinds/create/record.py's SaveSettled decodes it): stored by memory_create_batch, and
-- made the same way for a dry run, which stores nothing.
CREATE OR REPLACE FUNCTION memory_worker.memory_save_facts(p_outcome memory_worker.save_outcome, p_memory_id bigint,
                                                           p_evicted_id bigint, p_forgotten text, p_count integer)
RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'outcome', p_outcome, 'memory_id', p_memory_id, 'evicted_id', p_evicted_id, 'forgotten', p_forgotten,
        'count', CASE WHEN p_outcome IN ('at_cap', 'over_cap') THEN p_count END));
$$;
