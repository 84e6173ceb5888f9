"""The command registry: one entry per command kind, the one place a kind is declared.

An entry says what the wire says about a kind: its subject token (`memory.<kind>.<workspace>`),
its command type, its result type and which of its fields names the lineage it reads or
writes. Everything else that differs by kind is derived from the registry:

- the command subjects and the stream's filter (worker/consuming/administration/streams.py),
  the kinds a dead letter may be replayed to and the lookup reports (contracts/lookup.py);
- the decoders the worker admits (worker/consuming/intake/handlers.py);
- the JSON Schemas, the AsyncAPI document and so the TypeScript declarations
  (contracts/schema.py, contracts/asyncapi.py, `make schemas`), from which the TypeScript
  client takes its `CommandKind`;
- the tenancy check (worker/domain/tenancy.py), which refuses a command of any type not here;
- the worker's service table (worker/consuming/app.py: a `match` over `CommandKind` that mypy
  holds exhaustive, each service held to its entry's command type).

What cannot be derived is held to the registry by tests (tests/unit/test_registry.py): the
NATS permission files, both clients' methods. A new kind: docs/design.md, section 3.1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, get_args

import msgspec

from .codec import result_or_invalid
from .decoding import CommandDecoder
from .envelope import Envelope
from .kinds.create import CommandResult, CreateMemory
from .kinds.manual import ManualMemory, ManualResult
from .kinds.reinforce import ReinforceMemories, ReinforceResult
from .kinds.seed_bio import SeedBio, SeedBioResult
from .kinds.shadow import ShadowedKind, ShadowReport, ShadowResult
from .kinds.update import UpdateMemory, UpdateResult
from .result_parts import InvalidCommandResult

# Every kind, as the subject token: the type the service table's `match` is exhaustive over.
CommandKind = Literal[ShadowedKind, "shadow"]

K = TypeVar("K", bound=CommandKind)
C = TypeVar("C", bound=Envelope)
R = TypeVar("R", bound=msgspec.Struct)


@dataclass(frozen=True, slots=True)
class GlobalOnly:
    """A kind that names no lineage: it writes lineage 0 only (a user's global memories, which
    belong to the user, not to a bot) or no memory at all (a shadow report): any bot may send it."""


GLOBAL_ONLY = GlobalOnly()


@dataclass(frozen=True, slots=True)
class CommandSpec(Generic[K, C, R]):
    """One command kind.

    Attributes:
        kind: The subject token: commands of this kind are published to memory.<kind>.<workspace>.
        command: The command's Struct (its schema is contracts/schema/memory.<kind>.schema.json).
        result: The result's Struct, what the reply carries.
        lineage: The lineage the command reads or writes, read off a command (the tenancy check
            holds it to the bot's own lineages), or GLOBAL_ONLY.
        summary: What the kind is for, one sentence (the contract's description of its channel).
        refusal_in_result: True when a refused command's reply is the kind's own result (the
            create's CommandResult has the status memory_command_invalid); otherwise the reply
            is the result or an InvalidCommandResult.
        result_schema: The result's schema file name: result.<kind>, unless given (the create's
            is plain `result`, the name bots already load).
    """

    kind: K
    command: type[C]
    result: type[R]
    lineage: Callable[[C], int] | GlobalOnly
    summary: str
    refusal_in_result: bool = False
    result_schema: str = ""
    decoder: CommandDecoder[C] = field(init=False, repr=False, compare=False)
    _result_decoder: msgspec.json.Decoder[R] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "decoder", CommandDecoder(self.command))
        object.__setattr__(self, "_result_decoder", msgspec.json.Decoder(self.result))
        if not self.result_schema:
            object.__setattr__(self, "result_schema", f"result.{self.kind}")

    @property
    def command_schema(self) -> str:
        return f"memory.{self.kind}"

    def decode_reply(self, raw: bytes) -> R | InvalidCommandResult:
        """A reply to a command of this kind, as its reply channel has it (contracts/asyncapi.py):
        its result, or the InvalidCommandResult of a command refused unapplied, unless the kind's
        refusal is its own result."""
        if self.refusal_in_result:
            return self._result_decoder.decode(raw)
        return result_or_invalid(self._result_decoder, raw)


CREATE = CommandSpec(
    kind="create", command=CreateMemory, result=CommandResult, lineage=lambda cmd: cmd.persona.lineage_id,
    summary="The model's create_long_term_memory tool call.", refusal_in_result=True, result_schema="result")
MANUAL = CommandSpec(
    kind="manual", command=ManualMemory, result=ManualResult, lineage=lambda cmd: cmd.lineage_id,
    summary="The /memories and /personal memories panels.")
REINFORCE = CommandSpec(
    kind="reinforce", command=ReinforceMemories, result=ReinforceResult, lineage=lambda cmd: cmd.lineage_id,
    summary="Memories a reply used.")
SEED_BIO = CommandSpec(
    kind="seed_bio", command=SeedBio, result=SeedBioResult, lineage=GLOBAL_ONLY,
    summary="A new proxy identity's bio.")
UPDATE = CommandSpec(
    kind="update", command=UpdateMemory, result=UpdateResult, lineage=lambda cmd: cmd.persona.lineage_id,
    summary="The model's update_long_term_memory tool call: edit a memory by its id, or delete it.")
SHADOW = CommandSpec(
    kind="shadow", command=ShadowReport, result=ShadowResult, lineage=GLOBAL_ONLY,
    summary="What a bot in shadow mode did itself, paired with the worker's dry run of the same command.")


def _registry(*specs: CommandSpec[Any, Any, Any]) -> dict[str, CommandSpec[Any, Any, Any]]:
    """The entries by kind, refusing (at import, so nothing starts) a registry that does not
    have exactly one entry for each kind of CommandKind, or a command type used twice."""
    by_kind: dict[str, CommandSpec[Any, Any, Any]] = {spec.kind: spec for spec in specs}
    declared = set(get_args(CommandKind))
    if len(by_kind) != len(specs) or set(by_kind) != declared:
        raise ValueError(f"the registry must have one entry per CommandKind {sorted(declared)}, "
                         f"has {[spec.kind for spec in specs]}")
    if len({spec.command for spec in specs}) != len(specs):
        raise ValueError("two command kinds share a command type: the tenancy check could not tell them apart")
    return by_kind


COMMANDS: Mapping[str, CommandSpec[Any, Any, Any]] = _registry(CREATE, MANUAL, REINFORCE, SEED_BIO, SHADOW, UPDATE)
COMMAND_KINDS: tuple[CommandKind, ...] = tuple(spec.kind for spec in COMMANDS.values())
COMMAND_TYPES: Mapping[str, type[Envelope]] = {kind: spec.command for kind, spec in COMMANDS.items()}
_BY_TYPE: Mapping[type, CommandSpec[Any, Any, Any]] = {spec.command: spec for spec in COMMANDS.values()}


def spec_of(cmd: Envelope) -> CommandSpec[Any, Any, Any] | None:
    """The entry of a command's exact type; None for any other type (a subclass included)."""
    return _BY_TYPE.get(type(cmd))


def decoder_for(kind: str) -> CommandDecoder[Any]:
    return COMMANDS[kind].decoder
