"""A command's workspace settings and the operator's limits every save path applies."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    max_memory_length: int = 1000
    max_server_memories: int = 100
    max_personal_memories: int = 100
    # The secret guard for a workspace that made no choice of its own (SECRET_GUARD_DEFAULT).
    secret_guard_default: bool = True


@dataclass(frozen=True, slots=True)
class Workspace:
    """The command's workspace settings, wherever the bot keeps them (defaults when it wrote none yet)."""

    server_id: int | None = None
    self_teaching_enabled: bool = True  # the model may save (the create tool's gate)
    personal_memories_enabled: bool = True
    # The model's memories are checked for credentials (worker/domain/secret_guard/); None:
    # the workspace made no choice, the operator's default applies.
    secret_guard_enabled: bool | None = None
    # People who are not managers may teach through the panels. Standalone: the same setting
    # as self-teaching; TomoriBot keeps it apart (server_memteaching_enabled).
    member_teaching_enabled: bool = True
    memory_decay_enabled: bool = False
    memory_decay_days: int = 30
