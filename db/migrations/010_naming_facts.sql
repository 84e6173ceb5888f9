-- Summary: naming facts for target resolution: the standalone layout's users gain affix overrides and an addressing style, persona_nicknames per-lineage affixes.
-- TomoriBot's resolver composes names from naming layers (issue 37): a person's own prefix and
-- suffix overrides and addressing style (user_personalization_configs), and per persona
-- lineage a nickname and affix overrides (user_persona_naming_preferences). An adopted database
-- has those tables (db/facts.py reads them); the standalone layout gets the same facts on its
-- own tables. Databases that releases 010 to 013 created had them from their standalone
-- layout already (the base, db/standalone.sql, has since been frozen back to the first
-- release's), so every step is conditional.
DO $$
BEGIN
    IF (SELECT mode FROM memory_worker.database_mode) = 'standalone' THEN
        ALTER TABLE public.users
            ADD COLUMN IF NOT EXISTS prefix_override text,
            ADD COLUMN IF NOT EXISTS suffix_override text,
            ADD COLUMN IF NOT EXISTS addressing_style text;
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint
                       WHERE conname = 'users_addressing_style_check'
                         AND conrelid = 'public.users'::regclass) THEN
            ALTER TABLE public.users ADD CONSTRAINT users_addressing_style_check
                CHECK (addressing_style IN ('masculine', 'feminine', 'neutral'));
        END IF;
        -- A row may now hold affixes without a nickname.
        ALTER TABLE public.persona_nicknames
            ALTER COLUMN nickname DROP NOT NULL,
            ADD COLUMN IF NOT EXISTS prefix_override text,
            ADD COLUMN IF NOT EXISTS suffix_override text;
    END IF;
END;
$$;
