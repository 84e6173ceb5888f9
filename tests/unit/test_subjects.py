"""contracts/subjects.py: the one parser of command subjects and the one reply rule, which the
handler, the lanes, the lookup, the dead letters and the stream administration all use."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts import subjects
from contracts.registry import COMMAND_KINDS
from contracts.subjects import StoredCommand, kind_of, may_answer, parse_result_lookup, parse_stored


@pytest.mark.parametrize("stored, expected", [
    ("cmd.3.create.ws", StoredCommand("memory.create.ws", "create", "ws", placed=True)),
    ("cmd.0.seed_bio.a%2Eb", StoredCommand("memory.seed_bio.a%2Eb", "seed_bio", "a%2Eb", placed=True)),
    # a kind this worker does not know is still read: the handler refuses it by name
    ("cmd.1.teleport.ws", StoredCommand("memory.teleport.ws", "teleport", "ws", placed=True)),
    # left as published by the partition mapping (a literal wildcard token): not placed
    ("memory.create.*", StoredCommand("memory.create.*", "create", "", placed=False)),
    ("memory.create.a.b", StoredCommand("memory.create.a.b", "create", "", placed=False)),
    ("memory", StoredCommand("memory", "?", "", placed=False)),
])
def test_parse_stored(stored, expected):
    assert parse_stored(stored) == expected


@pytest.mark.parametrize("stored, key", [
    ("cmd.3.create.ws", "ws"),
    ("cmd.3.manual.ws", "ws"),  # every kind of one workspace shares its lane
    ("memory.create.*", "*"),
    ("memory.create.a.b", "b"),
])
def test_the_lane_key_is_the_workspace_token(stored, key):
    assert parse_stored(stored).lane_key == key


@given(kind=st.sampled_from(COMMAND_KINDS), workspace=st.text(min_size=1, max_size=40),
       partition=st.integers(0, 63))
def test_a_placed_subject_gives_back_what_the_bot_published(kind, workspace, partition):
    published = subjects.command_subject(kind, workspace)
    stored = parse_stored(f"{subjects.PARTITIONED_PREFIX}.{partition}.{kind}.{subjects.encode_token(workspace)}")
    assert stored.placed and stored.original == published and stored.kind == kind == kind_of(published)
    assert subjects.decode_token(stored.workspace_token) == workspace
    assert subjects.split_workspace_token(published) == (f"memory.{kind}", stored.workspace_token)


def test_parse_result_lookup():
    assert parse_result_lookup(subjects.result_subject("w s", "c.1")) == ("w%20s", "c%2E1")
    with pytest.raises(ValueError, match="not a result lookup subject"):
        parse_result_lookup("memory.create.ws.x")
    with pytest.raises(ValueError, match="not a result lookup subject"):
        parse_result_lookup("memory.result.ws")


@pytest.mark.parametrize("reply_to, allowed", [
    ("_INBOX.abc", True),
    ("_INBOX.abc.def", True),
    ("bot.replies.1", True),  # under an operator's extra prefix
    ("memory.saved.server.1", False),  # an event subject: never
    ("_INBOX.*", False),  # a wildcard is not a subject to publish to
    ("_INBOX.a b", False),
    ("_INBOX..a", False),
    ("_INBOX." + "a" * 300, False),  # longer than a reply subject may be
])
def test_may_answer(reply_to, allowed):
    assert may_answer(reply_to, ("_INBOX.", "bot.replies.")) is allowed
