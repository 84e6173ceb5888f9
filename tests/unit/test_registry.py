"""The command registry (contracts/registry.py) is the one list of command kinds: what is derived
from it covers every kind, and what cannot be derived (the NATS permission files, both clients,
the design's subject table) is held to it here. A new kind that misses one fails here, naming it.
The worker's service table (worker/consuming/app.py) is held to it by mypy: its `match` over
CommandKind ends in assert_never, and each service is paired with its kind's entry by type."""

from __future__ import annotations

import re
import typing
from typing import get_args

import pytest

from contracts import registry
from contracts.registry import COMMAND_KINDS, COMMANDS, CommandKind
from tests.conftest import ROOT
from worker.client.memory_client import MemoryClient
from worker.consuming.administration import streams

# A command subject a permission file grants: "memory.<kind>.*" (not memory.result.*.*).
PERMITTED_KIND = re.compile(r"memory\.([a-z_]+)\.\*(?![.\w*>])")
# The files that must grant every kind: the bots' publish lists and the operator's (replays).
PERMISSION_FILES = {"deploy/nats/accounts.conf", "deploy/nats/tenant-kaede.conf", "deploy/nats/permissions-operator.conf"}


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


def _permitted_kinds() -> dict[str, set[str]]:
    """Every file under deploy/ that names a command subject, with the kinds it names."""
    found = {}
    for path in sorted((ROOT / "deploy").rglob("*")):
        if path.is_file() and path.suffix in {".conf", ".md", ".yaml", ".yml", ".json", ".env", ""}:
            kinds = set(PERMITTED_KIND.findall(path.read_text(errors="replace")))
            if kinds:
                found[str(path.relative_to(ROOT))] = kinds
    return found


def test_the_nats_permission_files_grant_every_kind_and_no_other():
    permitted = _permitted_kinds()
    assert PERMISSION_FILES <= set(permitted), "a permission file no longer names the command subjects"
    wrong = {path: sorted(kinds ^ set(COMMAND_KINDS)) for path, kinds in permitted.items() if kinds != set(COMMAND_KINDS)}
    assert wrong == {}, ("these files must list memory.<kind>.* for exactly the kinds of contracts/registry.py "
                         f"(each kind shown is missing or unknown): {wrong}")


def test_the_design_lists_every_command_subject():
    design = (ROOT / "docs" / "design.md").read_text()
    listed = set(re.findall(r"^\| `memory\.([a-z_]+)\.<workspace>` \| bot → worker", design, re.M))
    assert listed == set(COMMAND_KINDS), "docs/design.md, section 3.1: one row per command kind"


def test_the_python_client_sends_every_kind_with_its_command_type():
    for kind, spec in COMMANDS.items():
        method = getattr(MemoryClient, kind, None)
        assert callable(method), f"MemoryClient has no method {kind}()"
        accepted = get_args(typing.get_type_hints(method)["command"])
        assert spec.command in accepted, (kind, accepted)


def _camel(kind: str) -> str:
    first, *rest = kind.split("_")
    return first + "".join(word.title() for word in rest)


def test_the_typescript_client_takes_its_kinds_from_the_contract_and_sends_each():
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
    # Its methods: memory_client.ts also fails to compile without one (EveryKindHasItsMethod).
    methods = set(re.findall(r"^  (\w+)\(command: ", (client / "memory_client.ts").read_text(), re.M))
    assert {_camel(kind) for kind in COMMAND_KINDS} <= methods

