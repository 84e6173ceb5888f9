"""JSON Schema files (draft 2020-12) generated from the Structs: `make schemas` rewrites them,
and a unit test fails when they drift from the code.

Each file is self-contained (its own `$defs`) and names itself with `$schema` and `$id`, so
a validator such as Ajv's `Ajv2020` class compiles any one of them alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import is_typeddict

import msgspec

from . import envelope, events, field_docs, fields, lookup, notice, op_result, result_parts, tool_call
from .envelope import Envelope
from .events import CacheInvalidate, MemoryEvicted, MemoryEvictionMetric, MemoryRemoved, MemorySaved, MemoryUpdated
from .kinds import create, manual, reinforce, seed_bio, shadow, update
from .kinds.create import CommandResult
from .kinds.update import UpdateResult
from .lookup import OUTCOME_RULES, CommandOutcome, OutcomeRequest
from .notice import NoticePlan
from .op_result import OpResult
from .registry import COMMANDS
from .result_parts import InvalidCommandResult

SCHEMA_DIR = Path(__file__).parent / "schema"
DIALECT = "https://json-schema.org/draft/2020-12/schema"
ID_PREFIX = "urn:memory-worker:schema:"

# A result whose $defs it refers to by hand (its NoticeField names the NoticePlan).
_REFERRED: dict[type, tuple[type, ...]] = {CommandResult: (NoticePlan,), UpdateResult: (NoticePlan,)}

# file name (without .schema.json): (root type, types whose $defs the root refers to by hand);
# each command kind's command and result (contracts/registry.py), then the rest.
TYPES: dict[str, tuple[type, tuple[type, ...]]] = {
    "envelope": (Envelope, ()),
    **{spec.command_schema: (spec.command, ()) for spec in COMMANDS.values()},
    **{spec.result_schema: (spec.result, _REFERRED.get(spec.result, ())) for spec in COMMANDS.values()},
    "result.op": (OpResult, ()),
    "result.invalid": (InvalidCommandResult, ()),
    "lookup.request": (OutcomeRequest, ()),
    "lookup.outcome": (CommandOutcome, (CommandResult, OpResult, UpdateResult, NoticePlan)),
    "memory.removed": (MemoryRemoved, ()),
    "memory.updated": (MemoryUpdated, (NoticePlan,)),
    "memory.saved": (MemorySaved, (NoticePlan,)),
    "memory.evicted": (MemoryEvicted, ()),
    "cache.invalidate": (CacheInvalidate, ()),
    "metrics.memory_eviction": (MemoryEvictionMetric, ()),
    "notice": (NoticePlan, ()),
}

# The lookup's original answer (an empty request): the stored result of either kind, or null.
STORED_RESULT = "lookup.result"
STORED_RESULT_DESCRIPTION = (
    "The result lookup's answer to an empty request: the stored result of a processed command "
    "(a create's result, an update's, or another command's result; their status enums keep them "
    "apart), or null when it has not been processed. Ask with {\"answer\": \"outcome\"} to learn more.")


def _payload_types(*modules: ModuleType) -> dict[str, type]:
    """Every Struct and TypedDict the contract modules define, by the name msgspec gives its $defs entry."""
    found: dict[str, type] = {}
    for module in modules:
        for obj in vars(module).values():
            if not isinstance(obj, type) or obj.__module__ != module.__name__:
                continue
            if issubclass(obj, msgspec.Struct) or is_typeddict(obj):
                if obj.__name__ in found:
                    raise ValueError(f"two payload types are named {obj.__name__}")
                found[obj.__name__] = obj
    return found


PAYLOAD_TYPES = _payload_types(envelope, fields, tool_call, result_parts, op_result, create, manual, reinforce, seed_bio,
                               shadow, update, events, lookup, notice)


def _describe(defs: dict[str, dict]) -> None:
    """Each type's summary and each property's entry of its docstring (contracts/field_docs.py)."""
    for name, body in defs.items():
        cls = PAYLOAD_TYPES.get(name)
        if cls is None:
            continue
        summary = field_docs.summary(cls)
        if summary:
            body["description"] = summary
        properties = body.get("properties", {})
        docs = field_docs.field_docs(cls)
        unknown = sorted(set(docs) - set(properties))
        if unknown:
            raise ValueError(f"{name}'s docstring describes fields it does not have: {', '.join(unknown)}")
        for field, text in docs.items():
            properties[field]["description"] = text


def _bundle(name: str, types: list[type], root: dict | None = None) -> dict:
    schemas, defs = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    _describe(defs)
    return {"$schema": DIALECT, "$id": f"{ID_PREFIX}{name}", **(root or schemas[0]), "$defs": defs}


def schemas() -> dict[str, dict]:
    out = {name: _bundle(name, [root, *extra]) for name, (root, extra) in TYPES.items()}
    out["lookup.outcome"]["$defs"]["CommandOutcome"]["allOf"] = OUTCOME_RULES
    out[STORED_RESULT] = _bundle(STORED_RESULT, [CommandResult, OpResult, UpdateResult, NoticePlan], {
        "description": STORED_RESULT_DESCRIPTION,
        "oneOf": [{"$ref": "#/$defs/CommandResult"}, {"$ref": "#/$defs/OpResult"}, {"$ref": "#/$defs/UpdateResult"},
                  {"type": "null"}],
    })
    return out


def file_name(name: str) -> str:
    return f"{name}.schema.json"


def render(schema: dict) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def expected_files() -> dict[Path, str]:
    return {SCHEMA_DIR / file_name(name): render(schema) for name, schema in schemas().items()}


def write() -> list[Path]:
    SCHEMA_DIR.mkdir(exist_ok=True)
    written = []
    for path, text in expected_files().items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


if __name__ == "__main__":
    changed = write()
    print("\n".join(str(p) for p in changed) or "schemas up to date")
