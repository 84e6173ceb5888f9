"""The tests' command builders (tests/support/commands.py) cover the command registry: a new
kind without a builder fails here, and every builder's command is one the worker admits."""

from __future__ import annotations

import msgspec

from contracts.registry import COMMAND_KINDS, COMMANDS, decoder_for
from tests.support.commands import FIELDS, command, envelope

WORKSPACE = "500000000000000001"


def test_every_kind_of_the_registry_has_a_builder_and_no_other():
    assert sorted(FIELDS) == sorted(COMMAND_KINDS)


def test_each_builders_command_decodes_as_its_kind_on_the_wire():
    for kind in COMMAND_KINDS:
        wire = msgspec.json.encode({**envelope(WORKSPACE), **FIELDS[kind](WORKSPACE, "1")})
        assert type(decoder_for(kind).decode(wire)) is COMMANDS[kind].command, kind
        assert type(command(kind, WORKSPACE)) is COMMANDS[kind].command, kind
