"""One encoder for everything the worker writes; decoders live beside their types."""

from __future__ import annotations

import msgspec

from .results import CommandResult, InvalidCommandResult, OpResult

ENCODER = msgspec.json.Encoder()
encode = ENCODER.encode
RESULT_DECODER = msgspec.json.Decoder(CommandResult)
OP_RESULT_DECODER = msgspec.json.Decoder(OpResult)
INVALID_RESULT_DECODER = msgspec.json.Decoder(InvalidCommandResult)


def decode_op_reply(raw: bytes) -> OpResult | InvalidCommandResult:
    """The reply to memory.manual, memory.reinforce or memory.seed_bio, as the contract has
    it (contracts/asyncapi.py: manualReply, reinforceReply, seedBioReply): the kind's result,
    or the InvalidCommandResult (`memory_command_invalid`) of a command the worker refused
    without applying it. OpResult's statuses leave memory_command_invalid out on purpose (a
    create's and the other commands' statuses never overlap), so that answer is read as the
    InvalidCommandResult it is. A reply that is neither raises OpResult's ValidationError."""
    try:
        return OP_RESULT_DECODER.decode(raw)
    except msgspec.ValidationError as not_op:
        try:
            return INVALID_RESULT_DECODER.decode(raw)
        except msgspec.ValidationError:
            raise not_op from None
