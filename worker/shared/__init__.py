"""Pieces more than one process uses: settings and NATS credentials (worker, sinks, CLI), the
structlog setup, and the batching helpers (`Coalescer`, `publish_atomic`) the bot library and
the worker's event publisher both publish with. Imports nothing of the database or the services."""
