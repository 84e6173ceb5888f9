-- The eviction choice (memory_create_save) as an index walk: an owner's evictable rows in
-- eviction order (never reinforced first, then least recently reinforced; ties by age, then
-- id), so the victim is the first entry past the dormancy cutoff. Without it every save at
-- the cap reads and sorts all of the owner's rows, which are scattered over the table: the
-- cost then grows with the table (measured: 102 buffers and 0.14 ms per choice at 1.2M rows,
-- 4 buffers and 0.02 ms with the index).
CREATE INDEX server_memories_eviction ON server_memories
    (server_id, persona_lineage_id, (last_reinforced_at IS NOT NULL), last_reinforced_at, created_at,
     server_memory_id)
    WHERE NOT manually_written;
CREATE INDEX personal_memories_eviction ON personal_memories
    (user_id, persona_lineage_id, (last_reinforced_at IS NOT NULL), last_reinforced_at, created_at,
     personal_memory_id)
    WHERE NOT manually_written;
