"""The reply to memory.manual, .reinforce and .seed_bio as the client reads it: the kind's
result, or the InvalidCommandResult of a command refused unapplied (contracts/codec.py)."""

from __future__ import annotations

import msgspec
import pytest

from contracts.codec import OP_RESULT_DECODER, decode_op_reply, encode
from contracts.kinds.reinforce import REINFORCED
from contracts.op_result import OpResult
from contracts.result_parts import COMMAND_INVALID, InvalidCommandResult
from worker.kinds.create import texts
from worker.kinds.reinforce.rendering import reinforced


def test_an_op_result_is_read_as_one():
    reply = decode_op_reply(encode(reinforced("c-1", 2)))
    assert isinstance(reply, OpResult) and (reply.data.status, reply.data.count) == (REINFORCED, 2)


def test_the_workers_invalid_command_answer_is_an_invalid_command_result():
    """The answer the worker publishes for a refused command of any kind (handlers.py)."""
    reply = decode_op_reply(encode(texts.invalid_command("c-2", "the command is 70000 bytes, over the limit")))
    assert isinstance(reply, InvalidCommandResult)
    assert (reply.command_id, reply.success, reply.data.status) == ("c-2", False, COMMAND_INVALID)
    assert "over the limit" in reply.data.reason and "over the limit" in reply.error


@pytest.mark.parametrize("raw", [b'{"command_id": "c", "success": true, "data": {"status": "nonsense"}}',
                                 b'{"command_id": "c"}', b"null"])
def test_anything_else_is_refused_with_the_op_results_error(raw):
    with pytest.raises(msgspec.ValidationError) as as_op:
        OP_RESULT_DECODER.decode(raw)
    with pytest.raises(msgspec.ValidationError) as refused:
        decode_op_reply(raw)
    assert str(refused.value) == str(as_op.value)
