-- Summary: results stored as sent (json, not jsonb) and a create's event facts in the inbox row.
-- processed_commands.result becomes json: a result is stored as the worker encoded it and read
-- back byte for byte (a repeat's answer is the first answer's bytes); rows stored before keep
-- their text. event_facts (later `facts`) holds what a create's save alone knew.
--
-- The ALTER of `result` rewrites processed_commands once (at INBOX_RETENTION_DAYS of history:
-- about 16 s a million rows, deploy/README.md, "Upgrading"). Stop the workers of the older
-- version first.

ALTER TABLE memory_worker.processed_commands ALTER COLUMN result TYPE json USING result::json;
ALTER TABLE memory_worker.processed_commands ADD COLUMN event_facts jsonb;
