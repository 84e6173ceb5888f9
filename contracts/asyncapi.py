"""The AsyncAPI 3 document of the worker, built from the contracts.

The document describes the worker as the application: what it receives (commands, result
lookups) and what it sends (replies, events, dead letters). A bot is the other side of each
operation. `make schemas` rewrites contracts/asyncapi.json; tests keep it current, check
every reference, and run @asyncapi/parser over it (tests/e2e/test_e2e_interop.py).
(FastStream's own AsyncAPI generation cannot read msgspec Struct parameters, hence this.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import schema, subjects
from .envelope import REPLY_SUBJECT_RULE
from .registry import COMMAND_KINDS, COMMANDS, CommandSpec
from .result_parts import InvalidCommandResult
from .subjects import DEFAULT_REPLY_PREFIXES

PATH = Path(__file__).parent / "asyncapi.json"
VERSION = "0.2.0"
# Also in worker/consuming/administration/streams.py; a test keeps them equal.
DUPLICATE_WINDOW_S = 600

TOKEN_RULE = (
    "An id in a subject token is kept as is when it matches [A-Za-z0-9_:-]+; any other byte of its "
    "UTF-8 form is percent-encoded with upper-case hex ('.' is %2E, ' ' is %20). The worker decodes hex "
    "case-insensitively (%2e is %2E), but partitioning hashes the token as written, so a publisher must "
    "always write upper-case to keep a workspace's commands in one partition and in order.")
_WS = {"workspace_id": {"description": "Guild id, or the user's id in a DM, encoded as a subject token. " + TOKEN_RULE}}
_OWNER = {
    "scope": {"enum": ["server", "personal"], "description": "Whose memory it is."},
    "owner_id": {"description": "Discord id of the owner (the workspace for server memories, the user for "
                                "personal ones), encoded as a subject token."},
}

_MSG_ID = {"type": "string", "minLength": 1}
COMMAND_HEADERS = {
    "type": "object",
    "properties": {"Nats-Msg-Id": {**_MSG_ID, "description": (
        f"Set it to command_id: JetStream then drops a repeat within its {DUPLICATE_WINDOW_S} s duplicate "
        "window (the publish ack says duplicate: true). To re-send a command that was never processed, keep "
        "command_id and use a new Nats-Msg-Id; the worker's inbox keeps any second delivery harmless.")}},
}
EVENT_HEADERS = {
    "type": "object",
    "required": ["Nats-Msg-Id"],
    "properties": {"Nats-Msg-Id": {**_MSG_ID, "description": (
        "The event id (event_id in the payload; for metrics.memory_eviction, which has no ids, an opaque "
        "token). A consumer de-duplicates redeliveries by it.")}},
}
DLQ_HEADERS = {
    "type": "object",
    "required": ["Nats-Msg-Id", "Dlq-Reason", "Dlq-Error", "Dlq-Deliveries", "Dlq-Original-Subject",
                 "Dlq-First-Failed-At"],
    "properties": {
        "Nats-Msg-Id": {**_MSG_ID, "description": "One dead letter per command message (dlq:<stream sequence>)."},
        "Dlq-Reason": {"enum": ["invalid_command", "unsupported_command", "max_deliver_exhausted",
                                "permanent_error"]},
        "Dlq-Error": {"type": "string", "description": "What went wrong, on one line, at most 1000 characters."},
        "Dlq-Deliveries": {"type": "string", "pattern": "^[0-9]+$", "description": "Deliveries spent (decimal)."},
        "Dlq-Original-Subject": {"type": "string", "description": "The subject the bot published to."},
        "Dlq-First-Failed-At": {"type": "string", "format": "date-time"},
        # A command too large to dead-letter whole under the server's max_payload is kept by
        # reference: these headers, and as body only its first bytes.
        "Dlq-Payload": {"enum": ["excerpt"], "description": (
            "Present when the body is only the first bytes of the original (too large to dead-letter "
            "whole); such a letter cannot be replayed.")},
        "Dlq-Original-Size": {"type": "string", "pattern": "^[0-9]+$", "description": "The original's size in bytes."},
        "Dlq-Original-Sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$",
                                "description": "SHA-256 of the original payload, hex."},
        "Dlq-Original-Stream": {"type": "string", "description": "<stream>:<sequence> where the original was stored."},
        "Dlq-Excerpt-Bytes": {"type": "string", "pattern": "^[0-9]+$",
                              "description": "How many of the original's first bytes the body holds."},
    },
}



def _words(kind: str) -> list[str]:
    return kind.split("_")


def command_channel(kind: str) -> str:
    """memoryCreate, memorySeedBio: a command kind's channel id."""
    return "memory" + "".join(word.title() for word in _words(kind))


def reply_channel(kind: str) -> str:
    """createReply, seedBioReply: the channel of a command kind's result."""
    first, *rest = _words(kind)
    return first + "".join(word.title() for word in rest) + "Reply"


def receive_operation(kind: str) -> str:
    """receiveCreate, receiveSeedBio: the worker's operation receiving a command kind."""
    return "receive" + "".join(word.title() for word in _words(kind))


def _reply_messages(spec: CommandSpec[Any, Any, Any]) -> dict[str, str | None]:
    refusal = {} if spec.refusal_in_result else {InvalidCommandResult.__name__: "result.invalid"}
    return {spec.result.__name__: spec.result_schema, **refusal}


# channel id: (address (None: given at run time), parameters, {message: schema file or None}, description)
# Each command kind's channel and its reply's (contracts/registry.py), then the rest.
_CHANNELS: dict[str, tuple[str | None, dict, dict[str, str | None], str]] = {
    **{command_channel(kind): (subjects.command_filter(kind, "{workspace_id}"), _WS,
                               {spec.command.__name__: spec.command_schema},
                               f"{spec.summary} Stream {subjects.COMMANDS_STREAM}.")
       for kind, spec in COMMANDS.items()},
    **{reply_channel(kind): (None, {}, _reply_messages(spec),
                             f"The result of memory.{kind}, published (core NATS) to the command's reply_to. "
                             + REPLY_SUBJECT_RULE)
       for kind, spec in COMMANDS.items()},
    "resultLookup": ("memory.result.{workspace_id}.{command_id}",
                     {**_WS, "command_id": {"description": "The command id, encoded as a subject token."}},
                     {"ResultRequest": None, "OutcomeRequest": "lookup.request"},
                     "Core NATS request/reply, no stream: what became of a command of this workspace (never "
                     "another workspace's). Use it when a reply was lost, or when a re-send's publish ack says "
                     "duplicate: true (JetStream dropped it, so no second reply comes)."),
    "resultLookupReply": (None, {}, {"StoredResult": schema.STORED_RESULT, "CommandOutcome": "lookup.outcome"},
                          "The answer to a lookup, on the request's NATS reply subject: StoredResult for an "
                          "empty request, CommandOutcome for {\"answer\": \"outcome\"}. Only a reply subject "
                          "under REPLY_SUBJECT_PREFIXES is answered (the rule of reply_to): a request with any "
                          "other is dropped unanswered."),
    "memorySaved": ("memory.saved.{scope}.{owner_id}", _OWNER, {"MemorySaved": "memory.saved"},
                    f"A memory was written. Stream {subjects.EVENTS_STREAM}."),
    "memoryEvicted": ("memory.evicted.{scope}.{owner_id}", _OWNER, {"MemoryEvicted": "memory.evicted"},
                      f"A dormant memory was forgotten to make room. Stream {subjects.EVENTS_STREAM}."),
    "memoryRemoved": ("memory.removed.{scope}.{owner_id}", _OWNER, {"MemoryRemoved": "memory.removed"},
                      f"A memory was removed, from a panel or by the model. Stream {subjects.EVENTS_STREAM}."),
    "memoryUpdated": ("memory.updated.{scope}.{owner_id}", _OWNER, {"MemoryUpdated": "memory.updated"},
                      f"The model replaced a memory's text. Stream {subjects.EVENTS_STREAM}."),
    "cacheInvalidate": ("cache.invalidate.{cache}.{key}",
                        {"cache": {"enum": ["tomori_state", "user"], "description": "Which cache."},
                         "key": {"description": "Workspace id (tomori_state) or user id (user), encoded as a "
                                                "subject token."}},
                        {"CacheInvalidate": "cache.invalidate"},
                        "Drop this cache entry; published before the same command's memory.saved, "
                        "memory.updated or memory.removed. "
                        f"Stream {subjects.EVENTS_STREAM}."),
    "memoryEvictionMetric": (subjects.METRIC_EVICTION_SUBJECT, {}, {"MemoryEvictionMetric": "metrics.memory_eviction"},
                             f"One per eviction, exactly {{scope, decay_days}}. Stream {subjects.EVENTS_STREAM}."),
    "deadLetters": ("dlq.{original_subject}",
                    {"original_subject": {"description": "The command's subject as the bot published it "
                                                         "(several tokens: memory.<kind>.<workspace token>)."}},
                    {"DeadLetter": None},
                    f"Commands the worker could not process, with why in the Dlq-* headers. Stream "
                    f"{subjects.DLQ_STREAM} (limits, 30 days); operators list, replay and drop them."),
}

# message name: (headers, description of a message without a schema file)
_MESSAGE_EXTRAS: dict[str, tuple[dict | None, str | None]] = {
    **{spec.command.__name__: (COMMAND_HEADERS, None) for spec in COMMANDS.values()},
    "MemorySaved": (EVENT_HEADERS, None),
    "MemoryEvicted": (EVENT_HEADERS, None),
    "MemoryRemoved": (EVENT_HEADERS, None),
    "MemoryUpdated": (EVENT_HEADERS, None),
    "CacheInvalidate": (EVENT_HEADERS, None),
    "MemoryEvictionMetric": (EVENT_HEADERS, None),
    "ResultRequest": (None, "An empty body: answered with StoredResult (the stored result, or null)."),
    "DeadLetter": (DLQ_HEADERS, "The original command payload, byte for byte (it may not be JSON at all)."),
}

# operation id: (action of the worker, channel id, reply channel id or None)
_OPERATIONS: dict[str, tuple[str, str, str | None]] = {
    **{receive_operation(kind): ("receive", command_channel(kind), reply_channel(kind)) for kind in COMMAND_KINDS},
    "answerResultLookup": ("receive", "resultLookup", "resultLookupReply"),
    "sendMemorySaved": ("send", "memorySaved", None),
    "sendMemoryEvicted": ("send", "memoryEvicted", None),
    "sendMemoryRemoved": ("send", "memoryRemoved", None),
    "sendMemoryUpdated": ("send", "memoryUpdated", None),
    "sendCacheInvalidate": ("send", "cacheInvalidate", None),
    "sendEvictionMetric": ("send", "memoryEvictionMetric", None),
    "sendDeadLetter": ("send", "deadLetters", None),
}

NATS_FACTS = {
    "streams": {
        subjects.COMMANDS_STREAM: {"subjects": [subjects.command_filter(kind) for kind in COMMAND_KINDS],
                                   "retention": "limits", "max_age_days": 7, "discard": "new",
                                   "note": "Publish commands here with a JetStream publish (wait for the ack). "
                                           "The worker owns its consumers; a bot creates none. Consumed "
                                           "commands are purged by the worker within seconds; while no worker "
                                           "consumes, the stream keeps them up to its age and size limits "
                                           "(COMMAND_MAX_AGE_HOURS, COMMAND_MAX_MIB), and when full refuses the "
                                           "publish (maximum bytes exceeded) rather than drop a stored command."},
        subjects.EVENTS_STREAM: {"subjects": ["memory.saved.>", "memory.evicted.>", "memory.removed.>",
                                              "cache.invalidate.>", "metrics.>", "memory.updated.>"],
                                 "retention": "limits", "max_age_days": 7,
                                 "note": "Every reader makes its own consumer (durable or ordered)."},
        subjects.DLQ_STREAM: {"subjects": ["dlq.>"], "retention": "limits", "max_age_days": 30},
    },
    "duplicateWindowSeconds": DUPLICATE_WINDOW_S,
    "tokenEncoding": TOKEN_RULE,
    "replySubjectPrefixes": {"default": list(DEFAULT_REPLY_PREFIXES), "setting": "REPLY_SUBJECT_PREFIXES",
                             "rule": REPLY_SUBJECT_RULE},
    "order": "Commands of one workspace are processed in publish order (one partition per workspace token).",
}


def _message(name: str, schema_key: str | None) -> dict:
    headers, description = _MESSAGE_EXTRAS.get(name, (None, None))
    message: dict = {"name": name, "contentType": "application/json"}
    if schema_key is not None:
        message["payload"] = {"$ref": f"schema/{schema.file_name(schema_key)}"}
    if description:
        message["description"] = description
    if headers:
        message["headers"] = headers
    return message


def document() -> dict:
    channels, messages = {}, {}
    for channel_id, (address, params, channel_messages, description) in _CHANNELS.items():
        channels[channel_id] = {
            "address": address,
            "description": description,
            "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in channel_messages},
            **({"parameters": params} if params else {}),
        }
        for name, schema_key in channel_messages.items():
            messages[name] = _message(name, schema_key)
    operations = {}
    for op_id, (action, channel_id, reply) in _OPERATIONS.items():
        op: dict[str, Any] = {"action": action, "channel": {"$ref": f"#/channels/{channel_id}"}}
        if reply is not None:
            op["reply"] = {"channel": {"$ref": f"#/channels/{reply}"}}
            if channel_id != "resultLookup":  # the lookup answers on the request's own reply subject
                op["reply"]["address"] = {"description": "The command's reply_to.",
                                          "location": "$message.payload#/reply_to"}
        operations[op_id] = op
    return {
        "asyncapi": "3.1.0",
        "info": {
            "title": "Memory worker",
            "version": VERSION,
            "description": (
                "Long-term memory commands, results and events of the memory worker, described from the "
                "worker's side: it receives commands and result lookups, and sends replies, events and dead "
                "letters. Payload schemas are JSON Schema 2020-12 files under schema/ (each with $schema and "
                "$id); they use only keywords that mean the same in the AsyncAPI Schema (draft-07), so either "
                "reading validates alike. Unknown input fields are ignored; output fields and statuses are "
                "only ever added. x-nats states the streams, token encoding and reply rules."),
        },
        "defaultContentType": "application/json",
        "servers": {"local": {"host": "127.0.0.1:4222", "protocol": "nats",
                              "description": "The embedded server of `make run`."}},
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages},
        "x-nats": NATS_FACTS,
    }


def render() -> str:
    return json.dumps(document(), indent=2) + "\n"


def referenced_schema_files() -> set[str]:
    return {m["payload"]["$ref"] for m in document()["components"]["messages"].values() if "payload" in m}


if __name__ == "__main__":
    changed = schema.write()
    if not PATH.exists() or PATH.read_text() != render():
        PATH.write_text(render())
        changed.append(PATH)
    print("\n".join(str(p) for p in changed) or "contracts up to date")
