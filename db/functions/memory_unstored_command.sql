-- A command's inbox row as it would be stored, without storing it: a dry run's answer is
-- rendered from it exactly as a stored command's is (memory_stored_command), and no row is
-- written (contracts/commands.py, Envelope.dry_run). The defaults are the table's.
CREATE OR REPLACE FUNCTION memory_worker.memory_unstored_command(p_command_id text, p_kind text, p_workspace_id text,
                                                                 p_decision jsonb, p_facts jsonb)
RETURNS memory_worker.processed_commands
LANGUAGE sql STABLE AS $$
    SELECT jsonb_populate_record(NULL::memory_worker.processed_commands, jsonb_build_object(
        'command_id', p_command_id, 'kind', p_kind, 'workspace_id', p_workspace_id,
        'tenant', coalesce(current_setting('memory_worker.tenant', true), ''),
        'decision', p_decision, 'facts', p_facts, 'processed_at', now()));
$$;
