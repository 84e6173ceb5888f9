"""One encoder for everything the worker writes; decoders live beside their types."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from .kinds.create import CommandResult
from .kinds.shadow import ShadowResult
from .kinds.update import UpdateResult
from .op_result import OpResult
from .result_parts import InvalidCommandResult

ENCODER = msgspec.json.Encoder()
encode = ENCODER.encode
RESULT_DECODER = msgspec.json.Decoder(CommandResult)
OP_RESULT_DECODER = msgspec.json.Decoder(OpResult)
INVALID_RESULT_DECODER = msgspec.json.Decoder(InvalidCommandResult)
UPDATE_RESULT_DECODER = msgspec.json.Decoder(UpdateResult)
SHADOW_RESULT_DECODER = msgspec.json.Decoder(ShadowResult)


def decode_op_reply(raw: bytes) -> OpResult | InvalidCommandResult:
    """The reply to memory.manual, memory.reinforce or memory.seed_bio, as the contract has
    it (contracts/asyncapi.py: manualReply, reinforceReply, seedBioReply): the kind's result,
    or the InvalidCommandResult (`memory_command_invalid`) of a command the worker refused
    without applying it. OpResult's statuses leave memory_command_invalid out on purpose (a
    create's and the other commands' statuses never overlap), so that answer is read as the
    InvalidCommandResult it is. A reply that is neither raises OpResult's ValidationError."""
    return result_or_invalid(OP_RESULT_DECODER, raw)


def decode_update_reply(raw: bytes) -> UpdateResult | InvalidCommandResult:
    """The reply to memory.update (contracts/asyncapi.py: updateReply): its UpdateResult, or the
    InvalidCommandResult of a command refused unapplied, as decode_op_reply reads its kinds'."""
    return result_or_invalid(UPDATE_RESULT_DECODER, raw)


def decode_shadow_reply(raw: bytes) -> ShadowResult | InvalidCommandResult:
    """The reply to memory.shadow: its ShadowResult, or the InvalidCommandResult of a report
    refused unapplied, as decode_op_reply reads its kinds'."""
    return result_or_invalid(SHADOW_RESULT_DECODER, raw)


_R = TypeVar("_R")


def result_or_invalid(decoder: msgspec.json.Decoder[_R], raw: bytes) -> _R | InvalidCommandResult:
    """A reply as the result `decoder` reads, or else the InvalidCommandResult of a command refused unapplied."""
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as not_result:
        try:
            return INVALID_RESULT_DECODER.decode(raw)
        except msgspec.ValidationError:
            raise not_result from None
