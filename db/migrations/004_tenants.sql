-- Summary: inbox and outbox rows say which bot (tenant) stored them.
-- Bots apart (issue 29): several workers, one per bot (its tenant, the worker's TENANT
-- setting), share one database. Each stores its commands' results in the one inbox
-- (processed_commands), so a row says whose it is: a tenant's worker sets the session setting
-- memory_worker.tenant on every connection (db/repository.py), and this trigger stores the row's
-- workspace as `<tenant>/<workspace id>`. Every read of the inbox (a repeat's context, the
-- locked save, the result lookup) already compares the stored workspace with the command's
-- (worker/services/base.py, seen_before), so another tenant's row is never taken for this one's
-- result: a reused command id is refused as a clash, a lookup answers unknown
-- (worker/domain/tenancy.py). A worker without a tenant stores workspaces as before.
CREATE FUNCTION memory_worker.memory_inbox_tenant() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_tenant text := coalesce(current_setting('memory_worker.tenant', true), '');
BEGIN
    IF v_tenant <> '' AND NEW.workspace_id IS NOT NULL THEN
        NEW.workspace_id := v_tenant || '/' || NEW.workspace_id;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER processed_commands_tenant BEFORE INSERT ON memory_worker.processed_commands
    FOR EACH ROW EXECUTE FUNCTION memory_worker.memory_inbox_tenant();

-- The outbox is shared too: each worker's sweep (worker/consuming/outbox.py) publishes only its
-- own tenant's leftovers, into its own account's stream, never another bot's events. The
-- column is added with a constant default first (no table rewrite), then given the session's
-- tenant as the default of every new row.
ALTER TABLE memory_worker.outbox ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE memory_worker.outbox ALTER COLUMN tenant SET DEFAULT coalesce(current_setting('memory_worker.tenant', true), '');
