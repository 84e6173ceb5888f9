-- Summary: the worker's functions are made from db/functions/, one file each, whenever those files change.
-- Until now each migration that changed a function re-issued its whole body, so a function had
-- as many copies as it had changes. From here on the migrations hold only what must run once
-- (tables, columns, indexes, data moves) and each function lives in one file of db/functions/;
-- db/functions/__init__.py makes them again whenever the files' fingerprint, recorded here,
-- differs from the one the database was made with.

ALTER TABLE memory_worker.database_mode ADD COLUMN functions_fingerprint text;
