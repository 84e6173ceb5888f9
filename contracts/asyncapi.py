"""The AsyncAPI 3 document of every subject the worker speaks, built from the contracts.

`python -m contracts.asyncapi` rewrites contracts/asyncapi.json; a test keeps it current and
checks that every payload reference resolves to a generated JSON Schema file. (FastStream's
own AsyncAPI generation cannot read msgspec Struct parameters, hence this document.)
"""

from __future__ import annotations

import json
from pathlib import Path

from . import schema

PATH = Path(__file__).parent / "asyncapi.json"
VERSION = "0.1.0"

_WS = {"workspace_id": {"description": "Guild id, or the user's id in a DM; percent-encoded when not [A-Za-z0-9_:-]."}}
_OWNER = {
    "scope": {"enum": ["server", "personal"], "description": "Whose memory it is."},
    "owner_id": {"description": "Discord id of the owner: the workspace (server) or the user (personal)."},
}

# channel id: (address, parameters, message name, schema file key, description)
_CHANNELS: dict[str, tuple[str, dict, str, str, str]] = {
    "memoryCreate": ("memory.create.{workspace_id}", _WS, "CreateMemory", "memory.create",
                     "The model's create_long_term_memory tool call (stream MEMORY_COMMANDS)."),
    "memoryManual": ("memory.manual.{workspace_id}", _WS, "ManualMemory", "memory.manual",
                     "The /memories and /personal memories panels (stream MEMORY_COMMANDS)."),
    "memoryReinforce": ("memory.reinforce.{workspace_id}", _WS, "ReinforceMemories", "memory.reinforce",
                        "Memories a reply used (stream MEMORY_COMMANDS)."),
    "memorySeedBio": ("memory.seed_bio.{workspace_id}", _WS, "SeedBio", "memory.seed_bio",
                      "A new proxy identity's bio (stream MEMORY_COMMANDS)."),
    "createResult": ("{reply_to}", {"reply_to": {"description": "The command's reply_to (an _INBOX subject)."}},
                     "CommandResult", "result", "Result of memory.create, published to the command's reply_to."),
    "opResult": ("{reply_to}", {"reply_to": {"description": "The command's reply_to (an _INBOX subject)."}},
                 "OpResult", "result.op", "Result of memory.manual, memory.reinforce and memory.seed_bio."),
    "resultLookup": ("memory.result.{workspace_id}.{command_id}",
                     {**_WS, "command_id": {"description": "The command id, percent-encoded like a workspace id."}},
                     "StoredResult", "result|result.op",
                     "Core request/reply: the stored result of a command of this workspace, or null."),
    "memorySaved": ("memory.saved.{scope}.{owner_id}", _OWNER, "MemorySaved", "memory.saved",
                    "A memory was written (stream MEMORY_EVENTS)."),
    "memoryEvicted": ("memory.evicted.{scope}.{owner_id}", _OWNER, "MemoryEvicted", "memory.evicted",
                      "A dormant memory was forgotten to make room (stream MEMORY_EVENTS)."),
    "memoryRemoved": ("memory.removed.{scope}.{owner_id}", _OWNER, "MemoryRemoved", "memory.removed",
                      "A memory was removed from a panel (stream MEMORY_EVENTS)."),
    "cacheInvalidate": ("cache.invalidate.{cache}.{key}",
                        {"cache": {"enum": ["tomori_state", "user"]},
                         "key": {"description": "Workspace id (tomori_state) or user id (user)."}},
                        "CacheInvalidate", "cache.invalidate",
                        "Drop this cache entry; published before the matching memory.saved (stream MEMORY_EVENTS)."),
    "memoryEvictionMetric": ("metrics.memory_eviction", {}, "MemoryEvictionMetric", "metrics.memory_eviction",
                             "One per eviction, exactly {scope, decay_days} (stream MEMORY_EVENTS)."),
    "deadLetters": ("dlq.{original_subject}",
                    {"original_subject": {"description": "The command's subject as the bot published it."}},
                    "DeadLetter", "",
                    "Commands that could not be processed: the original payload, with headers Dlq-Reason, "
                    "Dlq-Error, Dlq-Deliveries, Dlq-Original-Subject, Dlq-First-Failed-At (stream MEMORY_DLQ)."),
}

# operation id: (action from the application's point of view (a bot or consumer), channel id)
_OPERATIONS = {
    "sendCreate": ("send", "memoryCreate"),
    "sendManual": ("send", "memoryManual"),
    "sendReinforce": ("send", "memoryReinforce"),
    "sendSeedBio": ("send", "memorySeedBio"),
    "receiveCreateResult": ("receive", "createResult"),
    "receiveOpResult": ("receive", "opResult"),
    "requestResult": ("send", "resultLookup"),
    "receiveMemorySaved": ("receive", "memorySaved"),
    "receiveMemoryEvicted": ("receive", "memoryEvicted"),
    "receiveMemoryRemoved": ("receive", "memoryRemoved"),
    "receiveCacheInvalidate": ("receive", "cacheInvalidate"),
    "receiveEvictionMetric": ("receive", "memoryEvictionMetric"),
    "receiveDeadLetters": ("receive", "deadLetters"),
}


def _payload(schema_key: str) -> dict:
    """A reference to the generated schema; alternatives joined by |; empty for opaque bytes."""
    if not schema_key:
        return {"description": "The original command payload, byte for byte (it may not be JSON at all)."}
    refs = [{"$ref": f"schema/{key}.schema.json"} for key in schema_key.split("|")]
    return refs[0] if len(refs) == 1 else {"oneOf": refs}


def document() -> dict:
    channels, messages = {}, {}
    for channel_id, (address, params, message, schema_key, description) in _CHANNELS.items():
        channels[channel_id] = {
            "address": address,
            "description": description,
            "messages": {message: {"$ref": f"#/components/messages/{message}"}},
            **({"parameters": params} if params else {}),
        }
        messages[message] = {
            "name": message,
            "contentType": "application/json",
            "payload": {"schemaFormat": "application/schema+json;version=draft-07", "schema": _payload(schema_key)},
        }
    operations = {
        op_id: {"action": action, "channel": {"$ref": f"#/channels/{channel_id}"}}
        for op_id, (action, channel_id) in _OPERATIONS.items()
    }
    for op_id, reply in (("sendCreate", "createResult"), ("sendManual", "opResult"),
                         ("sendReinforce", "opResult"), ("sendSeedBio", "opResult")):
        operations[op_id]["reply"] = {
            "address": {"location": "$message.payload#/reply_to"},
            "channel": {"$ref": f"#/channels/{reply}"},
        }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Memory worker",
            "version": VERSION,
            "description": "Long-term memory commands, results and events of the memory worker "
                           "(see DESIGN.md sections 3 and 8). Publishers set Nats-Msg-Id to the "
                           "command id or event id.",
        },
        "defaultContentType": "application/json",
        "servers": {"local": {"host": "127.0.0.1:4222", "protocol": "nats",
                              "description": "The embedded server of `make run`."}},
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages},
    }


def render() -> str:
    return json.dumps(document(), indent=2) + "\n"


def referenced_schema_files() -> set[str]:
    found = set()
    for message in document()["components"]["messages"].values():
        schema = message["payload"]["schema"]
        for ref in schema.get("oneOf", [schema]):
            if "$ref" in ref:
                found.add(ref["$ref"])
    return found


if __name__ == "__main__":
    changed = schema.write()
    if not PATH.exists() or PATH.read_text() != render():
        PATH.write_text(render())
        changed.append(PATH)
    print("\n".join(str(p) for p in changed) or "contracts up to date")
