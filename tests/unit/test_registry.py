"""The command registry (contracts/registry.py) is the one list of command kinds: what is derived
from it covers every kind (the NATS permission files grant every kind by subject shape), and what
cannot be derived (the design's subject table, the clients' typing of send) is held to it here. A new kind that
misses one fails here, naming it.
The worker's service table (worker/consuming/app.py) is held to it by mypy: its `match` over
CommandKind ends in assert_never, and each service is paired with its kind's entry by type."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import get_args

import msgspec
import pytest

from contracts import registry, subjects
from contracts.registry import COMMAND_KINDS, COMMANDS, CommandKind
from contracts.result_parts import InvalidCommandResult
from tests.conftest import ROOT
from worker.client.memory_client import MemoryClient
from worker.consuming.administration import streams

# A command subject of one kind: "memory.<kind>.*" (not memory.result.*.*, nor the shape memory.*.*).
KIND_SUBJECT = re.compile(r"memory\.([a-z_]+)\.\*(?![.\w*>])")
# The users that publish commands, each granted every kind by shape: the bots and the operator (replays).
PERMISSION_FILES = ("deploy/nats/accounts.conf", "deploy/nats/tenant-kaede.conf", "deploy/nats/permissions-operator.conf")
BY_SHAPE = '"memory.*.*"'
NOT_EVENTS = "deploy/nats/permissions-commands-not-events.conf"


def test_every_kind_has_one_entry_and_the_derived_lists_follow_it():
    assert set(COMMAND_KINDS) == set(get_args(CommandKind)) == set(COMMANDS)
    assert [spec.kind for spec in COMMANDS.values()] == list(COMMAND_KINDS)
    assert {kind: spec.command for kind, spec in COMMANDS.items()} == dict(registry.COMMAND_TYPES)
    assert streams.COMMAND_SUBJECTS == [f"memory.{kind}.*" for kind in COMMAND_KINDS]
    for kind, spec in COMMANDS.items():
        assert registry.decoder_for(kind).type is spec.command


def test_a_registry_without_an_entry_for_a_kind_or_with_a_type_twice_does_not_load():
    *others, last = COMMANDS.values()
    with pytest.raises(ValueError, match=f"one entry per CommandKind .*'{last.kind}'"):
        registry._registry(*others)
    with pytest.raises(ValueError, match="one entry per CommandKind"):
        registry._registry(*others, last, others[0])
    twin = registry.CommandSpec(kind=last.kind, command=others[0].command, result=last.result,
                                lineage=registry.GLOBAL_ONLY, summary="twin")
    with pytest.raises(ValueError, match="share a command type"):
        registry._registry(*others, twin)


def _files_naming_a_kind() -> dict[str, set[str]]:
    """Every file under deploy/ that names the subject of one command kind, with the kinds it names."""
    found = {}
    for path in sorted((ROOT / "deploy").rglob("*")):
        if path.is_file() and path.suffix in {".conf", ".md", ".yaml", ".yml", ".json", ".env", ""}:
            kinds = set(KIND_SUBJECT.findall(path.read_text(errors="replace")))
            if kinds:
                found[str(path.relative_to(ROOT))] = kinds
    return found


def test_the_nats_permission_files_grant_commands_by_shape_and_list_no_kind():
    """A new kind needs no edit under deploy/: its subject is memory.<kind>.<workspace>, which
    "memory.*.*" grants (the real server's answer: tests/integration/test_nats_permissions.py)."""
    assert _files_naming_a_kind() == {}, "grant memory.*.* (by shape), never one kind's subject"
    for path in PERMISSION_FILES:
        rules = re.sub(r"#.*", "", (ROOT / path).read_text())
        publish = rules.split(BY_SHAPE, 1)
        assert len(publish) == 2, f"{path} no longer grants the command subjects {BY_SHAPE}"
        # The deny sits in the same publish block as the grant: before the block's closing brace.
        assert f'include "{Path(NOT_EVENTS).name}"' in publish[1].split("}", 1)[0], path


def test_what_the_command_shape_grants_is_never_an_event():
    denied = re.findall(r'"([^"]+)"', re.sub(r"#.*", "", (ROOT / NOT_EVENTS).read_text()))
    events = {f for f in subjects.EVENT_SUBJECTS if f.startswith(subjects.COMMAND_PREFIX)}
    assert events and set(denied) == events, f"{NOT_EVENTS} must deny exactly {sorted(events)}"


def test_a_reply_of_any_kind_decodes_as_its_entry_says():
    """MemoryClient.send takes any entry and reads its reply through it: a refusal is the
    contract's InvalidCommandResult, or (the create) the kind's own result with that status."""
    refused = msgspec.json.encode({"command_id": "c1", "success": False, "error": "bad",
                                   "data": {"status": "memory_command_invalid", "reason": "workspace_id: required"}})
    for kind, spec in COMMANDS.items():
        reply = spec.decode_reply(refused)
        wanted = spec.result if spec.refusal_in_result else InvalidCommandResult
        assert type(reply) is wanted and reply.data.status == "memory_command_invalid", kind
        with pytest.raises(msgspec.ValidationError):
            spec.decode_reply(b'{"command_id": "c1"}')


def test_the_python_client_sends_any_kind_typed_by_its_entry():
    hints = typing.get_type_hints(MemoryClient.send)
    assert typing.get_origin(hints["kind"]) is registry.CommandSpec
    assert {arg.__name__ for arg in get_args(hints["return"])} == {"_KindResult", "InvalidCommandResult"}


def test_the_typescript_client_takes_its_kinds_from_the_contract_and_sends_any():
    client = ROOT / "clients" / "typescript" / "src"
    declarations = (ROOT / "contracts" / "types" / "index.d.ts").read_text()
    # The client's CommandKind is the contract's (subjects.ts), never a list of its own.
    assert re.search(r'^export type CommandKind = NonNullable<CommandOutcome\["kind"\]>;$',
                     (client / "subjects.ts").read_text(), re.M)
    outcome = re.search(r"^export interface CommandOutcome1 \{\n(.*?)^\}", declarations, re.M | re.S)
    assert outcome is not None, "run `make schemas`"
    kind = re.search(r"^  kind\?: (.*);$", outcome[1], re.M)
    assert kind is not None, "run `make schemas`"
    union = kind[1]
    assert set(re.findall(r'"(\w+)"', union)) == set(COMMAND_KINDS), "run `make schemas`"
    # send() is typed by the contract's CommandKinds, one entry per kind (contracts/asyncapi.json).
    kinds = re.search(r"^export interface CommandKinds \{\n(.*?)^\}", declarations, re.M | re.S)
    assert kinds and re.findall(r"^  (\w+): \{ command: ", kinds[1], re.M) == list(COMMAND_KINDS), "run `make schemas`"
    assert re.search(r"^  send<K extends keyof CommandKinds>\(kind: K, command: CommandInputOf<K>",
                     (client / "memory_client.ts").read_text(), re.M)
