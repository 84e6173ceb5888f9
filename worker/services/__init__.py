"""The worker process's services: one command, one transaction (read the context, decide
with worker.domain, persist through db.repository)."""
