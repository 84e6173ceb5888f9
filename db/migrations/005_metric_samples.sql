-- Metric samples keep the metric's event id (its Nats-Msg-Id), so a metric redelivered after
-- its acknowledgement was lost is stored once (worker/sinks.py inserts ON CONFLICT DO NOTHING).
-- Nullable: a writer that knows no event id (or predates this column) still works.
ALTER TABLE metric_samples ADD COLUMN event_id text;
CREATE UNIQUE INDEX metric_samples_event ON metric_samples (event_id) WHERE event_id IS NOT NULL;
