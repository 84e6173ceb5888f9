-- Creates that arrive together from several partitions, handled in one round trip each for
-- the read and for the write (worker/services/create_batch.py). Each command still runs
-- exactly the single-command functions above; only the round trips and the commit are shared.

-- memory_create_context() for every request of p (a JSON array of {command_id, workspace_id,
-- ids, lineage_id}), in the same order.
CREATE FUNCTION memory_create_contexts(p jsonb) RETURNS jsonb
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
CREATE FUNCTION memory_create_batch(p jsonb) RETURNS jsonb
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
CREATE FUNCTION memory_set_notices(p jsonb) RETURNS jsonb
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
