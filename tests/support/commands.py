"""The one builder of a memory.create for every harness (unit, integration, e2e, chaos, faults,
bench): a new contract field is added here once. Each harness overrides what its workload
needs through the keyword arguments; the rest is a plausible TomoriBot command. Written from
the wire contract by hand, importing nothing of the worker or of contracts/, so a bug shared
with the worker's own encoders cannot hide itself."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

BOT_ID = "990000000000000001"
# Who triggers every command built here. The worker refuses a create whose triggerer has no
# users row (TomoriBot's critical state), so each harness's database registers this person
# once (tests/support/directory.py add_triggerer).
TRIGGERER_ID = "110000000000000001"
LINEAGE = 7
NO_RETRIEVAL = {"rag_available": False, "embedding_model": None, "embedding_credentials": False}


def create_fields(workspace_id: str, content: Any = "likes tea", *, scope: Any = "server_wide",
                  target: str | None = None, lineage_id: int = LINEAGE, persona_id: int = 1,
                  member_matches: list[dict] | None = None, participants: list[dict] | None = None,
                  retrieval: dict | None = None, tool_args: Any = None, is_dm: bool = False,
                  **extra: Any) -> dict[str, Any]:
    """The fields of a memory.create, for MemoryClient.create / new_create or as JSON; `extra`
    replaces or adds any top-level field (bot_user_id, channel, persona, triggerer ...)."""
    if tool_args is None:
        tool_args = {"memory_content": content, "memory_scope": scope}
        if target is not None:
            tool_args["target_user"] = target
    fields = {
        "workspace_id": workspace_id,
        "tool_args": tool_args,
        "persona": {"id": persona_id, "lineage_id": lineage_id, "name": "Tomori"},
        "bot_user_id": BOT_ID,
        "triggerer": {"id": TRIGGERER_ID, "name": "someone"},
        "channel": {"id": "120000000000000001", "is_dm": is_dm, "is_private": False,
                    "everyone_can_view": True, "url": None},
        "participants": participants or [],
        "member_matches": member_matches or [],
        "retrieval": retrieval or NO_RETRIEVAL,
    }
    fields.update(extra)
    return fields


def command_payload(fields: dict[str, Any], *, command_id: str, reply_to: str | None,
                    issued_at: str | None = None) -> dict[str, Any]:
    """A full command as a JSON-ready dict: the envelope around `fields`."""
    return {"command_id": command_id, "issued_at": issued_at or datetime.now(UTC).isoformat(), "reply_to": reply_to,
            **fields}


def create_bytes(fields: dict[str, Any], *, command_id: str, reply_to: str | None, issued_at: str | None = None) -> bytes:
    """The command as a bot publishes it."""
    payload = command_payload(fields, command_id=command_id, reply_to=reply_to, issued_at=issued_at)
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
