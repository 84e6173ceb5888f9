"""The live SQL functions and the types that feed their JSON arguments (db/requests.py and the
types nested in it) agree both ways: every key the SQL reads is a field of its type, so a key
renamed on either side fails here instead of reading NULL in a create; and every field Python
sends is read by the SQL, so nothing travels that nobody reads (a value the SQL stores whole,
a create's SavePlan, is read by Python when it renders the answer).

The live functions are the files of db/functions/, one function each."""

from __future__ import annotations

import dataclasses
import re
import typing

import msgspec

from db import functions
from db.directory_rows import HostRow
from db.requests import CreateBatchRequest, CreateContextRequest, CreateOp, ManualContextRequest, UpdateTargetRequest
from worker.kinds.create.record import SavePlan

_CREATE = re.compile(r"CREATE(?: OR REPLACE)? FUNCTION memory_worker\.(\w+)\(.*?\$\$(.*?)\$\$", re.S)
_READ = re.compile(r"\b(\w+)\s*->>?\s*'(\w+)'")
_PATH = re.compile(r"\b(\w+)\s*#>>?\s*'\{([\w,]+)\}'")

# function -> the JSON value each of its variables holds, by the type that makes it.
FEEDS: dict[str, dict[str, tuple[type, ...]]] = {
    "memory_create_batch": {"p": (CreateBatchRequest,), "op": (CreateOp,), "e": (CreateOp,), "v_plan": (SavePlan,)},
    "memory_create_dry_batch": {"p": (CreateBatchRequest,), "op": (CreateOp,), "v_plan": (SavePlan,)},
    "memory_save_decide": {"p_plan": (SavePlan,), "h": (HostRow,)},
    "memory_create_contexts": {"e": (CreateContextRequest,)},
    "memory_manual_context": {"p": (ManualContextRequest,)},
    "memory_update_target": {"p": (UpdateTargetRequest,)},
}
# What Python sends, each field of which some function must read; and what the SQL stores whole,
# whose fields it need not all read (memory_proxy_hosts() makes HostRow: Python does not send it).
SENT = (CreateBatchRequest, CreateOp, CreateContextRequest, ManualContextRequest, UpdateTargetRequest)
STORED_WHOLE = (SavePlan,)


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


def unread_fields(live: dict[str, str], feeds: dict[str, dict[str, tuple[type, ...]]]) -> dict[str, set[str]]:
    """The fields of each sent type that no function reads from any variable it feeds."""
    read_of: dict[type, set[str]] = {}
    for function, variables in feeds.items():
        found = reads(live[function])
        for variable, kinds in variables.items():
            for kind in kinds:
                read_of.setdefault(kind, set()).update(found.get(variable, set()))
    return {kind.__name__: keys_of(kind) - read_of.get(kind, set()) for kind in SENT
            if keys_of(kind) - read_of.get(kind, set())}


def test_every_field_python_sends_is_read_by_the_sql() -> None:
    assert unread_fields(live_functions(), FEEDS) == {}


def test_a_field_the_sql_never_reads_is_caught() -> None:
    body = "SELECT p ->> 'scope', p ->> 'workspace_id', p ->> 'owner_id', p ->> 'actor_id', p ->> 'identity_id'"
    assert unread_fields({"f": body}, {"f": {"p": (ManualContextRequest,)}})["ManualContextRequest"] == {
        "lineage_id", "memory_id", "want_existing", "want_lineage_rows"}


def test_the_stored_whole_types_are_stored_as_they_are_sent() -> None:
    batch = live_functions()["memory_create_batch"]
    assert "v_plan := op -> 'decision'" in batch and batch.count("decision") >= 3
    assert all(kind not in SENT for kind in STORED_WHOLE)


def test_a_renamed_key_is_caught() -> None:
    body = "v_scope text := v_plan ->> 'scope'; v_cap integer := (v_plan ->> 'capacity')::integer;"
    assert reads(body)["v_plan"] - keys_of(SavePlan) == {"capacity"}


def test_a_renamed_key_in_a_path_is_caught() -> None:
    assert not path_misses((SavePlan,), ["notice", "verbosity"])
    assert path_misses((SavePlan,), ["notice", "verbose"])
    assert path_misses((SavePlan,), ["route", "verbosity"])
