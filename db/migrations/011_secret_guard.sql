-- Summary: the secret guard per workspace: servers (standalone) or memory_worker.workspace_settings (adopted) gain secret_guard_enabled.
-- Whether the model's memories are checked for credentials (worker/domain/secret_guard.py,
-- issue 39), per workspace, in the worker's own settings as decay is: the standalone
-- layout's servers, an adopted database's memory_worker.workspace_settings (TomoriBot has no
-- such setting). NULL: the workspace made no choice, the operator's SECRET_GUARD_DEFAULT
-- applies (on unless set off). Databases that releases 011 to 013 set up had the column
-- from their base layout already (the bases, db/standalone.sql and db/adopted.sql, have since
-- been frozen back to the first release's), so each step is conditional.
DO $$
BEGIN
    IF (SELECT mode FROM memory_worker.database_mode) = 'standalone' THEN
        ALTER TABLE public.servers ADD COLUMN IF NOT EXISTS secret_guard_enabled boolean;
    ELSE
        ALTER TABLE memory_worker.workspace_settings ADD COLUMN IF NOT EXISTS secret_guard_enabled boolean;
    END IF;
END;
$$;
