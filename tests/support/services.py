"""The worker's service table (worker/consuming/app.py build_services) on one repository, for
tests that run commands without a worker process: the product's table itself, so a new kind
or a changed service reaches these tests without a copy to keep in step."""

from __future__ import annotations

import dataclasses
from typing import Any

from db.repository import MemoryRepository
from worker.consuming.app import build_services
from worker.consuming.limits import limits_from
from worker.domain.workspace import Limits
from worker.services.base import CommandService
from worker.shared.settings import Settings


def service_table(repo: MemoryRepository, limits: Limits, *, create_batch: int = 1) -> dict[str, CommandService[Any]]:
    """Each kind's service by its kind, under `limits`; `create_batch`: creates in flight that share a batch."""
    # Each limit is the setting of its name (worker/consuming/limits.py reads them back).
    settings = dataclasses.replace(Settings(), create_batch_max=create_batch, **dataclasses.asdict(limits))
    if limits_from(settings) != limits:
        raise ValueError(f"the settings do not give back {limits}: a limit without its setting")
    return build_services(repo, settings)
