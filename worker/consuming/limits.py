"""The domain's limits as the settings give them: for the worker's services and for the
CLI's commands that write memories (adopt), so both apply the same ones."""

from __future__ import annotations

from worker.domain.workspace import Limits
from worker.shared.settings import Settings


def limits_from(settings: Settings) -> Limits:
    return Limits(
        max_memory_length=settings.max_memory_length,
        max_server_memories=settings.max_server_memories,
        max_personal_memories=settings.max_personal_memories,
        secret_guard_default=settings.secret_guard_default,
    )
