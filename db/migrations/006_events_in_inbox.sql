-- Summary: a command's events are kept in its inbox row and published from there; the outbox table is only drained.
-- Events without an outbox: processed_commands.events holds a command's events, in publish
-- order ([{subject, headers, payload}], NULL when it has none), written by the INSERT that
-- stores its result; applied_by holds the MEMORY_COMMANDS stream sequence of the delivery that
-- applied it (NULL for rows stored before, or by a caller without a delivery): only a
-- redelivery of that message publishes the events again (worker/services/stored.py,
-- republishes()). Both columns are added without a default: no row is rewritten. From here on
-- nothing writes the outbox table.
--
-- Stop the workers of the older version before this migration runs (deploy/README.md,
-- "Upgrading"): they write events to the outbox.

ALTER TABLE memory_worker.processed_commands ADD COLUMN events jsonb, ADD COLUMN applied_by bigint;
