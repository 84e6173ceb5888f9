"""The one builder of each command kind for every harness (unit, integration, e2e, chaos, faults,
bench): a new contract field is added here once. Each harness overrides what its workload
needs through the keyword arguments; the rest is a plausible TomoriBot command.

The `*_fields` builders write the wire by hand (JSON-ready dicts, what a bot publishes), so a
bug in the worker's own encoders cannot hide itself; the `*_command` builders hand those
fields to the kind's Struct of contracts/ (msgspec.convert, the contract's own validation), so
a field the contract requires and a builder lacks fails here, naming the field."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from contracts.envelope import Envelope
from contracts.kinds.create import CreateMemory
from contracts.kinds.manual import ManualMemory
from contracts.kinds.reinforce import ReinforceMemories
from contracts.kinds.seed_bio import SeedBio
from contracts.kinds.shadow import ShadowReport
from contracts.kinds.update import UpdateMemory
from contracts.registry import COMMANDS, CommandKind

BOT_ID = "990000000000000001"
# Who triggers every command built here. The worker refuses a create whose triggerer has no
# users row (TomoriBot's critical state), so each harness's database registers this person
# once (tests/support/directory.py add_triggerer).
TRIGGERER_ID = "110000000000000001"
LINEAGE = 7
# The panels' default actor: a manager of the workspace.
MANAGER = "130000000000000001"
# An argument left out: the builder writes a plausible value (None is a value of its own: a tool
# call without arguments, a shadowed call without an answer).
LEFT_OUT: Any = object()
NO_RETRIEVAL = {"rag_available": False, "embedding_model": None, "embedding_credentials": False}


def create_fields(workspace_id: str, content: Any = "likes tea", *, scope: Any = "server_wide",
                  target: str | None = None, lineage_id: Any = LINEAGE, persona_id: Any = 1,
                  member_matches: list[Any] | None = None, participants: list[Any] | None = None,
                  retrieval: dict | None = None, tool_args: Any = LEFT_OUT, is_dm: bool = False,
                  **extra: Any) -> dict[str, Any]:
    """The fields of a memory.create, for MemoryClient.create / new_create or as JSON; `extra`
    replaces or adds any top-level field (bot_user_id, channel, persona, triggerer ...). Any value
    is taken, so tests can send what the contract refuses."""
    if tool_args is LEFT_OUT:
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


def update_fields(workspace_id: str, memory_id: Any = 1, content: Any = "likes green tea", *, target: Any = None,
                  tool_args: Any = LEFT_OUT, **extra: Any) -> dict[str, Any]:
    """The fields of a memory.update (the create's, less `retrieval`), for MemoryClient.update or as
    JSON; `target` None leaves target_user out (a server memory)."""
    if tool_args is LEFT_OUT:
        tool_args = {"memory_id": memory_id, "memory_content": content}
        if target is not None:
            tool_args["target_user"] = target
    fields = create_fields(workspace_id, tool_args=tool_args, **extra)
    del fields["retrieval"]
    return fields


def manual_fields(*, action: str = "add", scope: str = "server", actor: str = MANAGER, is_manager: bool = True,
                  lineage_id: int = LINEAGE, persona_id: int | None = 1, **extra: Any) -> dict[str, Any]:
    """The fields of a memory.manual (a panel's action); `extra` adds content, memory_id ..."""
    return {"actor": {"id": actor, "is_manager": is_manager}, "scope": scope, "action": action,
            "lineage_id": lineage_id, "persona_id": persona_id, **extra}


def reinforce_fields(refs: Iterable[tuple[str, Any]] = (), *, lineage_id: int = LINEAGE,
                     **extra: Any) -> dict[str, Any]:
    """The fields of a memory.reinforce: `refs` as (scope, memory_id)."""
    return {"lineage_id": lineage_id, "memories": [{"scope": scope, "memory_id": memory_id} for scope, memory_id in refs],
            **extra}


def seed_bio_fields(identity: str | None = None, bio: str | None = "likes tea", *, new: bool = True,
                    **extra: Any) -> dict[str, Any]:
    """The fields of a memory.seed_bio; `identity` None: a new proxy identity of its own."""
    return {"identity_user_id": identity or f"pk:{uuid.uuid4()}", "is_new_identity": new, "bio": bio, **extra}


def shadow_fields(shadowed_id: str = "cmd-0", kind: str = "create", result: Any = LEFT_OUT,
                  **extra: Any) -> dict[str, Any]:
    """The fields of a memory.shadow: what the bot itself answered to command `shadowed_id`
    (a plain success unless given; None: the bot had no answer)."""
    return {"shadowed_id": shadowed_id, "kind": kind,
            "result": {"success": True} if result is LEFT_OUT else result, **extra}


# A valid command of each kind of contracts/registry.py, by its fields for a workspace and a tag
# that keeps its content (or the command it reports on) apart from another's: for the tests
# that go over every kind (tests/unit/test_command_builders.py holds it to the registry).
FIELDS: Mapping[str, Callable[[str, str], dict[str, Any]]] = {
    "create": lambda ws, tag: create_fields(ws, f"fact {tag}"),
    "manual": lambda ws, tag: manual_fields(content=f"panel fact {tag}"),
    "reinforce": lambda ws, tag: reinforce_fields(),
    "seed_bio": lambda ws, tag: seed_bio_fields(),
    "shadow": lambda ws, tag: shadow_fields(f"dry-{tag}"),
    "update": lambda ws, tag: update_fields(ws, 1, f"fact {tag}"),
}


def envelope(workspace_id: str, *, command_id: str | None = None, reply_to: str | None = None,
             issued_at: str | None = None, **extra: Any) -> dict[str, Any]:
    """The fields every command carries; a fresh command id unless given."""
    return {"command_id": command_id or uuid.uuid4().hex, "issued_at": issued_at or datetime.now(UTC).isoformat(),
            "reply_to": reply_to, "workspace_id": workspace_id, **extra}


def fixed_envelope(command_id: str) -> dict[str, Any]:
    """A command id and a fixed issue time, for unit tests whose answers must not vary by day."""
    return {"command_id": command_id, "issued_at": "2025-01-01T00:00:00+00:00"}


def command_payload(fields: dict[str, Any], *, command_id: str, reply_to: str | None,
                    issued_at: str | None = None) -> dict[str, Any]:
    """A full command as a JSON-ready dict: the envelope around `fields`."""
    return {"command_id": command_id, "issued_at": issued_at or datetime.now(UTC).isoformat(), "reply_to": reply_to,
            **fields}


def create_bytes(fields: dict[str, Any], *, command_id: str, reply_to: str | None, issued_at: str | None = None) -> bytes:
    """The command as a bot publishes it."""
    payload = command_payload(fields, command_id=command_id, reply_to=reply_to, issued_at=issued_at)
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


E = TypeVar("E", bound=Envelope)


def as_command(kind_type: type[E], workspace_id: str, fields: Mapping[str, Any], **envelope_fields: Any) -> E:
    """`fields` in their envelope, as the contract's Struct `kind_type` validates them."""
    return msgspec.convert({**envelope(workspace_id, **envelope_fields), **fields}, kind_type)


def command(kind: CommandKind, workspace_id: str, tag: str = "1", **fields: Any) -> Envelope:
    """A valid command of `kind` (FIELDS' sample, `fields` replacing any of it), as its registry Struct."""
    return as_command(COMMANDS[kind].command, workspace_id, {**FIELDS[kind](workspace_id, tag), **fields})


def create_command(workspace_id: str, content: Any = "likes tea", *, envelope_fields: Mapping[str, Any] | None = None,
                   **kw: Any) -> CreateMemory:
    return as_command(CreateMemory, workspace_id, create_fields(workspace_id, content, **kw), **(envelope_fields or {}))


def update_command(workspace_id: str, memory_id: Any = 1, content: Any = "likes green tea", *,
                   envelope_fields: Mapping[str, Any] | None = None, **kw: Any) -> UpdateMemory:
    return as_command(UpdateMemory, workspace_id, update_fields(workspace_id, memory_id, content, **kw),
                      **(envelope_fields or {}))


def manual_command(workspace_id: str, *, envelope_fields: Mapping[str, Any] | None = None, **kw: Any) -> ManualMemory:
    return as_command(ManualMemory, workspace_id, manual_fields(**kw), **(envelope_fields or {}))


def reinforce_command(workspace_id: str, refs: Iterable[tuple[str, Any]] = (), *, lineage_id: int = LINEAGE,
                      envelope_fields: Mapping[str, Any] | None = None, **kw: Any) -> ReinforceMemories:
    return as_command(ReinforceMemories, workspace_id, reinforce_fields(refs, lineage_id=lineage_id, **kw),
                      **(envelope_fields or {}))


def seed_bio_command(workspace_id: str, identity: str | None = None, bio: str | None = "likes tea", *, new: bool = True,
                     envelope_fields: Mapping[str, Any] | None = None, **kw: Any) -> SeedBio:
    return as_command(SeedBio, workspace_id, seed_bio_fields(identity, bio, new=new, **kw), **(envelope_fields or {}))


def shadow_command(workspace_id: str, shadowed_id: str = "cmd-0", kind: str = "create",
                   result: Any = LEFT_OUT, *, envelope_fields: Mapping[str, Any] | None = None,
                   **kw: Any) -> ShadowReport:
    return as_command(ShadowReport, workspace_id, shadow_fields(shadowed_id, kind, result, **kw),
                      **(envelope_fields or {}))
