-- memory_create_context() for every request of p (a JSON array of db/requests.py's
-- CreateContextRequest: {command_id, workspace_id, ids, lineage_id}), in the same order: the
-- creates that arrive together read their contexts in one round trip
-- (worker/kinds/create/service.py; a lone create is a list of one).
CREATE OR REPLACE FUNCTION memory_worker.memory_create_contexts(p jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(memory_create_context(e ->> 'command_id', e ->> 'workspace_id',
                                                    ARRAY(SELECT jsonb_array_elements_text(e -> 'ids')),
                                                    (e ->> 'lineage_id')::bigint) ORDER BY n), '[]'::jsonb)
    FROM jsonb_array_elements(p) WITH ORDINALITY AS t(e, n);
$$;
