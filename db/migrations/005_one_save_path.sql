-- Summary: (now nothing: the create's one save path for both scopes lives in db/functions/memory_create_batch.sql).
-- This migration replaced the create's save function; the worker's functions have since moved
-- out of the migrations (db/functions/), so it has nothing left to run once. It stays so that
-- the ledger's numbers keep their meaning.
SELECT 1;
