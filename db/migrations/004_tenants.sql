-- Summary: inbox and outbox rows carry the tenant (the worker's TENANT) of the worker that wrote them.
-- Bots apart (issue 29): several workers, one per bot (its tenant, the worker's TENANT
-- setting), share one database. The inbox (processed_commands) and the outbox hold every
-- bot's rows, so each row says whose it is in a plain `tenant` column ('' for a worker
-- without a tenant); workspace_id stays the workspace the command named.
--
-- The column's default is the session setting memory_worker.tenant, which a tenant's worker
-- sets on every connection of its pool (db/repository.py, create_pool): the inserts of the
-- worker's own statements and functions (001, 002) then store it without naming it, and no
-- trigger runs per insert. Reads name it: a repeat's stored row is compared with the worker's
-- tenant (worker/services/base.py, seen_before), so another bot's row is refused as a clash,
-- never answered; the result lookup and the outbox sweep read only the worker's own tenant.
--
-- Each column is added with a constant default first (no table rewrite), then given the
-- session's tenant as the default of every new row.
ALTER TABLE memory_worker.processed_commands ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE memory_worker.processed_commands
    ALTER COLUMN tenant SET DEFAULT coalesce(current_setting('memory_worker.tenant', true), '');

ALTER TABLE memory_worker.outbox ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE memory_worker.outbox
    ALTER COLUMN tenant SET DEFAULT coalesce(current_setting('memory_worker.tenant', true), '');
