-- The memory worker's least-privilege role, `memory_worker` (deploy/README.md, "PostgreSQL").
--
-- The worker reads and writes rows; it never changes the schema. The schema belongs to a
-- separate owner role, which alone runs the migrations (`DATABASE_URL=<owner's URL> memoryctl
-- migrate`) and this file, in the worker's database, after the migrations:
--
--   psql "$OWNER_DATABASE_URL" -v ON_ERROR_STOP=1 -f deploy/postgres/worker_role.sql
--
-- The password is kept out of this file: set it once with `\password memory_worker` in psql,
-- or let CloudNativePG manage the role and its password from a Secret (deploy/k8s/postgres.yaml);
-- the role is created here only when it does not exist yet, which needs CREATEROLE.
--
-- Idempotent: run it again whenever you like. Tables, sequences and functions that later
-- migrations create (as the owner) are granted automatically by the default privileges below.

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'memory_worker') THEN
        CREATE ROLE memory_worker LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
    END IF;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO memory_worker', current_database());
END
$$;

-- Nobody but the owner creates objects in the schema (PostgreSQL 15+ default; explicit for
-- older servers and for databases upgraded from them).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO memory_worker;

-- Rows in `public`: the memory tables, metric samples, and the directory tables (read;
-- `servers` gets a row for a workspace the worker has never seen, bio seeds and proxy
-- identities get users rows).
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO memory_worker;
-- Memory ids come from sequences used inside the locked transaction.
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO memory_worker;
-- The server-side functions (memory_create_save, memory_lock_owner, memory_prune ...). They
-- run with the caller's rights (SECURITY INVOKER), so the grants above are what they can touch.
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO memory_worker;

-- The worker's own schema (db/connection.py): inbox, outbox, bio seeds, worker-only settings
-- and the functions, the same grants; its ledger and mode row are read, never written.
GRANT USAGE ON SCHEMA memory_worker TO memory_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA memory_worker TO memory_worker;
REVOKE INSERT, UPDATE, DELETE ON TABLE memory_worker.schema_migrations, memory_worker.database_mode
    FROM memory_worker;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA memory_worker TO memory_worker;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA memory_worker TO memory_worker;

-- Objects the owner creates from now on (new migrations) get the same grants.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO memory_worker;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO memory_worker;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT EXECUTE ON FUNCTIONS TO memory_worker;
ALTER DEFAULT PRIVILEGES IN SCHEMA memory_worker GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO memory_worker;
ALTER DEFAULT PRIVILEGES IN SCHEMA memory_worker GRANT USAGE, SELECT ON SEQUENCES TO memory_worker;
ALTER DEFAULT PRIVILEGES IN SCHEMA memory_worker GRANT EXECUTE ON FUNCTIONS TO memory_worker;

-- Not granted, on purpose: TRUNCATE, REFERENCES, TRIGGER, CREATE on the schema or the
-- database, ownership of anything. (Temporary tables follow the database's TEMPORARY privilege,
-- which PostgreSQL grants to PUBLIC by default; the worker uses none, so an operator may
-- `REVOKE TEMPORARY ON DATABASE <db> FROM PUBLIC` if no other role needs them.)
