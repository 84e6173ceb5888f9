-- A stored command, as every reader gets it: the one row shape of the inbox
-- (db/inbox.py's StoredInboxRow decodes it). The create's context read, its batch write
-- (a repeat that raced the original), the other commands' locked read and the result lookup
-- all report a stored command through this.
--
-- `result` is the text stored (a JSON string inside the object, so its bytes survive: a repeat
-- of a panel, a reinforcement or a bio seed gets the first answer's bytes); a create keeps its
-- `decision` and `facts` instead, from which its answer is rendered. `event_time` is when its
-- transaction ran, as its events say it.
CREATE OR REPLACE FUNCTION memory_worker.memory_stored_command(pc memory_worker.processed_commands) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'command_id', pc.command_id,
        'kind', pc.kind,
        'workspace_id', pc.workspace_id,
        'tenant', pc.tenant,
        'status', pc.status,
        'result', pc.result::text,
        'events', pc.events,
        'decision', pc.decision,
        'facts', pc.facts,
        'applied_by', pc.applied_by,
        'event_time', memory_event_time(pc.processed_at));
$$;
