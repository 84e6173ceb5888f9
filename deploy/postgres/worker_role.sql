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

-- `public`. The worker's own database (standalone): the memory tables, metric samples and the
-- directory tables (read; `servers` gets a row for a workspace the worker has never seen, bio
-- seeds and proxy identities get users rows), and whatever later migrations add there. An
-- adopted bot database (`memoryctl adopt`): only the bot's tables the worker reads or writes,
-- nothing else of the bot's (its keys, its future tables), and the bot's schema settings stay
-- as the bot has them.
DO $$
DECLARE
    adopted boolean := to_regclass('memory_worker.database_mode') IS NOT NULL
                       AND (SELECT mode FROM memory_worker.database_mode) = 'adopted';
    t text;
    seq text;
BEGIN
    GRANT USAGE ON SCHEMA public TO memory_worker;
    IF NOT adopted THEN
        -- Nobody but the owner creates objects in the schema (PostgreSQL 15+ default; explicit
        -- for older servers and for databases upgraded from them).
        REVOKE CREATE ON SCHEMA public FROM PUBLIC;
        GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO memory_worker;
        -- Memory ids come from sequences used inside the locked transaction.
        GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO memory_worker;
        GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO memory_worker;
        ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO memory_worker;
        ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO memory_worker;
        ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT EXECUTE ON FUNCTIONS TO memory_worker;
        RETURN;
    END IF;
    -- The memory tables are the worker's (docs/design.md, section 7.1), with their id sequences.
    FOREACH t IN ARRAY ARRAY['server_memories', 'personal_memories'] LOOP
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON public.%I TO memory_worker', t);
    END LOOP;
    -- Unknown workspaces and proxy identities get rows.
    FOREACH t IN ARRAY ARRAY['servers', 'users'] LOOP
        EXECUTE format('GRANT SELECT, INSERT ON public.%I TO memory_worker', t);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['server_memories', 'personal_memories', 'servers', 'users'] LOOP
        FOR seq IN SELECT pg_get_serial_sequence(format('public.%I', t), a.attname)
                   FROM pg_attribute a WHERE a.attrelid = format('public.%I', t)::regclass AND a.attnum > 0
                     AND pg_get_serial_sequence(format('public.%I', t), a.attname) IS NOT NULL LOOP
            EXECUTE format('GRANT USAGE, SELECT ON SEQUENCE %s TO memory_worker', seq);
        END LOOP;
    END LOOP;
    -- Read where the bot keeps each fact (db/directory_functions.py), where the table exists.
    FOREACH t IN ARRAY ARRAY['personalization_blacklist', 'server_member_permissions_configs',
                             'server_notice_embeds_configs', 'server_channel_scope_configs',
                             'user_personalization_configs', 'user_persona_naming_preferences',
                             'external_identities', 'message_proxy_identities',
                             'message_proxy_namespace_accounts'] LOOP
        IF to_regclass(format('public.%I', t)) IS NOT NULL THEN
            EXECUTE format('GRANT SELECT ON public.%I TO memory_worker', t);
        END IF;
    END LOOP;
    -- The blacklist is kept by `memoryctl blacklist` too; metric samples by the sink.
    IF to_regclass('public.personalization_blacklist') IS NOT NULL THEN
        GRANT INSERT, DELETE ON public.personalization_blacklist TO memory_worker;
    END IF;
    IF to_regclass('public.metric_samples') IS NOT NULL THEN
        GRANT SELECT, INSERT, DELETE ON public.metric_samples TO memory_worker;
    END IF;
END
$$;

-- The worker's own schema (db/connection.py): inbox, bio seeds, worker-only settings
-- and the functions, the same grants; its ledger and mode row are read, never written.
GRANT USAGE ON SCHEMA memory_worker TO memory_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA memory_worker TO memory_worker;
REVOKE INSERT, UPDATE, DELETE ON TABLE memory_worker.schema_migrations, memory_worker.database_mode
    FROM memory_worker;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA memory_worker TO memory_worker;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA memory_worker TO memory_worker;

-- Objects the owner creates in the worker's schema from now on (new migrations) get the same grants.
ALTER DEFAULT PRIVILEGES IN SCHEMA memory_worker GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO memory_worker;
ALTER DEFAULT PRIVILEGES IN SCHEMA memory_worker GRANT USAGE, SELECT ON SEQUENCES TO memory_worker;
ALTER DEFAULT PRIVILEGES IN SCHEMA memory_worker GRANT EXECUTE ON FUNCTIONS TO memory_worker;

-- Not granted, on purpose: TRUNCATE, REFERENCES, TRIGGER, CREATE on the schema or the
-- database, ownership of anything. (Temporary tables follow the database's TEMPORARY privilege,
-- which PostgreSQL grants to PUBLIC by default; the worker uses none, so an operator may
-- `REVOKE TEMPORARY ON DATABASE <db> FROM PUBLIC` if no other role needs them.)
