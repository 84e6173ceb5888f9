"""A service for every command kind, on one repository: what the worker's composition root
builds (worker/consuming/app.py, which tests do not import), for tests that run commands
without a worker process."""

from __future__ import annotations

from typing import Any

from db.repository import MemoryRepository
from worker.domain.model import Limits
from worker.services.base import CommandService
from worker.services.create_memory import CreateMemoryService
from worker.services.manual import ManualMemoryService
from worker.services.reinforce import ReinforceService
from worker.services.seed_bio import SeedBioService
from worker.services.shadow import ShadowReportService
from worker.services.update_memory import UpdateMemoryService

BIO_MAX_CHARS = 1000  # MESSAGE_PROXY_BIO_SEED_MAX_CHARS' default


def service_table(repo: MemoryRepository, limits: Limits, *, create_batch: int = 1) -> dict[str, CommandService[Any]]:
    """Each kind's service by its kind; `create_batch`: creates in flight that share a batch."""
    return {"create": CreateMemoryService(repo, limits, max_batch=create_batch),
            "manual": ManualMemoryService(repo, limits), "reinforce": ReinforceService(repo),
            "seed_bio": SeedBioService(repo, limits, BIO_MAX_CHARS), "shadow": ShadowReportService(repo),
            "update": UpdateMemoryService(repo, limits)}
