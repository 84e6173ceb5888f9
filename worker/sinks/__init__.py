"""The metrics sinks process (`memoryctl sinks`): durable consumers of `metrics.>` writing to a
JSON-lines file and to PostgreSQL."""
