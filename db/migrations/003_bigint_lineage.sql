-- Summary: 64-bit persona lineages: the standalone layout's lineage columns become bigint.
-- 64-bit persona lineages end to end. TomoriBot's lineage columns are bigint and its lineage
-- ids come from a sequence; the contract carried an int32 lineage, so a larger one could not
-- be sent at all. The contract now takes up to 2^63 - 1, and so does every statement:
-- the standalone layout's lineage columns become bigint (the worker's own tables; an adopted
-- bot's are left exactly as they are: TomoriBot's are bigint already).

DO $$
BEGIN
    IF (SELECT mode FROM memory_worker.database_mode) = 'standalone' THEN
        ALTER TABLE public.server_memories ALTER COLUMN persona_lineage_id TYPE bigint;
        ALTER TABLE public.personal_memories ALTER COLUMN persona_lineage_id TYPE bigint;
        ALTER TABLE public.persona_nicknames ALTER COLUMN lineage_id TYPE bigint;
    END IF;
END;
$$;
