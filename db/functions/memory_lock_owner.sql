-- The per-owner lock, taken in exactly this one place: every write calls it first, in its
-- transaction (memory_create_batch for the creates, MemoryRepository.owner_transaction for the
-- other commands). Transaction-scoped: it is released by the commit or the rollback.
CREATE OR REPLACE FUNCTION memory_worker.memory_lock_owner(p_scope text, p_owner_id text) RETURNS void
LANGUAGE sql AS $$
    -- Namespaced so the key cannot collide with other advisory-lock users of the database.
    SELECT pg_advisory_xact_lock(hashtextextended('memory-owner:' || p_scope || ':' || p_owner_id, 0));
$$;
