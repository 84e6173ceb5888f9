"""The worker process's NATS side (`memoryctl run`): streams, the partitioned pulls and their
per-workspace lanes, the command handler and how a delivery is settled, dead letters, the
outbox publisher, result lookups and the worker's metrics. Below it: `worker.services` (one
transaction per command) and `worker.domain` (the pure rules)."""
