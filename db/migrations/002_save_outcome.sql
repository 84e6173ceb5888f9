-- Summary: the save_outcome enum: how a create's save can end under the owner lock.
-- memory_worker.save_outcome: how a create's save can end under the owner lock, the labels of
-- worker/domain/model.py's SaveOutcome (tests/integration/test_save_outcome.py compares the
-- two). memory_create_batch (db/functions/) names one for each save.

CREATE TYPE memory_worker.save_outcome AS ENUM (
    'saved', 'saved_with_eviction', 'at_cap', 'over_cap', 'privacy_partial', 'privacy_full', 'host_protected');
