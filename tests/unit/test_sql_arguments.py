"""Every key the live SQL functions read from their JSON arguments exists in the type that
feeds it (db/requests.py and the types nested in it): a key renamed on either side fails
here, instead of reading NULL in a create.

The live functions are the files of db/functions/, one function each."""

from __future__ import annotations

import dataclasses
import re
import typing

import msgspec

from contracts.notice import NoticePlan
from db import functions
from db.repository import HostRow
from db.requests import (
    CreateBatchRequest,
    CreateContextRequest,
    CreateSaveRequest,
    ManualContextRequest,
    RecordOp,
)
from worker.domain.eviction_notice import EvictionNoticeTemplate

_CREATE = re.compile(r"CREATE(?: OR REPLACE)? FUNCTION memory_worker\.(\w+)\(.*?\$\$(.*?)\$\$", re.S)
_READ = re.compile(r"\b(\w+)\s*->>?\s*'(\w+)'")
_PATH = re.compile(r"\b(\w+)\s*#>>?\s*'\{([\w,]+)\}'")

# function -> the JSON value each of its variables holds, by the type that makes it.
FEEDS: dict[str, dict[str, tuple[type, ...]]] = {
    "memory_create_batch": {"p": (CreateBatchRequest,), "op": (RecordOp, CreateSaveRequest),
                            "e": (RecordOp, CreateSaveRequest), "h": (HostRow,)},
    "memory_create_contexts": {"e": (CreateContextRequest,)},
    "memory_manual_context": {"p": (ManualContextRequest,)},
    "memory_eviction_notice": {"p_template": (EvictionNoticeTemplate,), "v_notice": (NoticePlan,)},
}


def live_functions() -> dict[str, str]:
    """The body of each live function, by name."""
    live: dict[str, str] = {}
    for source in functions.files().values():
        for m in _CREATE.finditer(source):
            live[m.group(1)] = m.group(2)
    return live


def keys_of(kind: type) -> set[str]:
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        tag = kind.__struct_config__.tag_field  # a tagged union's member says which it is
        return {field.encode_name for field in msgspec.structs.fields(kind)} | ({tag} if tag else set())
    if dataclasses.is_dataclass(kind):
        return {field.name for field in dataclasses.fields(kind)}
    return set(typing.get_type_hints(kind))  # a TypedDict


def reads(body: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for variable, key in _READ.findall(body):
        found.setdefault(variable, set()).add(key)
    for variable, path in _PATH.findall(body):
        found.setdefault(variable, set()).add(path.split(",")[0])
    return found


def _field_types(kind: type) -> dict[str, object]:
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        hints = typing.get_type_hints(kind)
        return {field.encode_name: hints[field.name] for field in msgspec.structs.fields(kind)}
    return dict(typing.get_type_hints(kind))


def _classes(hint: object) -> list[type]:
    """The Structs, dataclasses and TypedDicts a field's type names (through Optional and unions)."""
    args = typing.get_args(hint)
    if args:
        return [kind for arg in args for kind in _classes(arg)]
    return [hint] if isinstance(hint, type) and (issubclass(hint, msgspec.Struct) or dataclasses.is_dataclass(hint)
                                                 or typing.is_typeddict(hint)) else []


def path_misses(kinds: tuple[type, ...], path: list[str]) -> bool:
    """A `#>` path none of `kinds` has, key by key, where each step's type is known."""
    for key in path:
        fields = {}
        for kind in kinds:
            fields.update(_field_types(kind))
        if key not in fields:
            return True
        kinds = tuple(_classes(fields[key]))
        if not kinds:  # a plain value or JSON the types do not describe: nothing more to check
            return False
    return False


def test_every_key_the_live_sql_reads_is_a_field_of_the_type_that_feeds_it() -> None:
    live = live_functions()
    missing = []
    for function, feeds in FEEDS.items():
        assert function in live, f"{function} is not defined in db/functions/"
        read = reads(live[function])
        assert read.keys() <= feeds.keys(), f"{function} reads {sorted(read.keys() - feeds.keys())}: name their types"
        for variable, kinds in feeds.items():
            assert variable in read, f"{function} no longer reads {variable}: drop it from FEEDS"
            fields = set().union(*(keys_of(kind) for kind in kinds))
            missing += [f"{function}: {variable} ->> '{key}'" for key in sorted(read[variable] - fields)]
        for variable, path in _PATH.findall(live[function]):
            if path_misses(feeds[variable], path.split(",")):
                missing.append(f"{function}: {variable} #> '{{{path}}}'")
    assert not missing, missing


def test_every_live_function_reading_json_keys_is_checked() -> None:
    unchecked = {name for name, body in live_functions().items() if reads(body)} - FEEDS.keys()
    assert not unchecked, f"add the types these functions read to FEEDS: {sorted(unchecked)}"


def test_a_renamed_key_is_caught() -> None:
    body = "v_scope text := p ->> 'scope'; v_cap integer := (p ->> 'capacity')::integer;"
    assert reads(body)["p"] - keys_of(CreateSaveRequest) == {"capacity"}


def test_a_renamed_key_in_a_path_is_caught() -> None:
    assert not path_misses((CreateSaveRequest,), ["eviction", "facts", "decay_days"])
    assert path_misses((CreateSaveRequest,), ["eviction", "facts", "decay"])
    assert path_misses((CreateSaveRequest,), ["evict", "notice"])
