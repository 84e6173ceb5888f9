"""The worker process's NATS side (`memoryctl run`). `app` is the composition root; `intake`
the per-command path (partitions, lanes, handler, delivery decisions); `events` publishing the
events after the commit; `lookup` the result lookup; `administration` the streams and
consumers, their retention and upgrade, and the inbox's pruning; beside them the pieces these share (dead letters,
the probe of a broken command, metrics, the connection). Below it: `worker.services` (one
transaction per command) and `worker.domain` (the pure rules)."""
