"""One encoder for everything the worker writes; decoders live beside their types."""

from __future__ import annotations

import msgspec

from .results import CommandResult, OpResult

ENCODER = msgspec.json.Encoder()
encode = ENCODER.encode
RESULT_DECODER = msgspec.json.Decoder(CommandResult)
OP_RESULT_DECODER = msgspec.json.Decoder(OpResult)
