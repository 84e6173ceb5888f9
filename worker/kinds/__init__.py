"""The worker process's command kinds, one package each: the kind's decision, texts and result
rendering (pure: an import-linter contract keeps db, asyncpg and NATS out of them) and its
service (`service.py`, the one module of a kind that touches the database). What the kinds
share stays in worker.domain (rules) and worker.services (the transaction and the stored answer)."""
