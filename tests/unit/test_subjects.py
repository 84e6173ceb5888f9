"""contracts/subjects.py: the one parser of command subjects and the one reply rule, which the
handler, the lanes, the lookup, the dead letters and the stream administration all use."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts import subjects
from contracts.registry import COMMAND_KINDS
from contracts.subjects import CommandSubject, kind_of, may_answer, parse_result_lookup, parse_stored


@pytest.mark.parametrize("stored, expected", [
    ("cmd.3.create.ws", CommandSubject("memory.create.ws", "create", "ws", placed=True)),
    ("cmd.0.seed_bio.a%2Eb", CommandSubject("memory.seed_bio.a%2Eb", "seed_bio", "a%2Eb", placed=True)),
    # a kind this worker does not know is still read: the handler refuses it by name
    ("cmd.1.teleport.ws", CommandSubject("memory.teleport.ws", "teleport", "ws", placed=True)),
    # left as published by the partition mapping (a literal wildcard token): not placed
    ("memory.create.*", CommandSubject("memory.create.*", "create", "", placed=False)),
    ("memory.create.a.b", CommandSubject("memory.create.a.b", "create", "", placed=False)),
    ("memory", CommandSubject("memory", "?", "", placed=False)),
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


# Issue 35: every subject a process of the project takes from a message is held to one of these.
# The tricks a hostile bot tried (as a lookup's reply subject, or a command's reply_to).
HOSTILE_REPLIES = ["$JS.API.STREAM.PURGE.MEMORY_DLQ", "$JS.API.STREAM.DELETE.MEMORY_COMMANDS",
                   "$JS.API.CONSUMER.DELETE.MEMORY_EVENTS.bot-tomori-saved", "$JS.ACK.MEMORY_COMMANDS.p.1.1.1.1.0",
                   "$SYS.REQ.SERVER.PING", "memory.saved.server.1", "memory.create.1", "memory.result.1.c",
                   "cache.invalidate.tomori_state.1", "metrics.memory_eviction", "dlq.memory.create.1",
                   "cmd.0.create.1", "_memory_upgrade.memory.create.1", "_INBOX.bot.kaede.x", "_INBOX.cache.a.x"]


@pytest.mark.parametrize("reply", HOSTILE_REPLIES)
def test_no_answer_reaches_a_subject_outside_the_bots_inbox(reply):
    assert not may_answer(reply, ("_INBOX.bot.tomori.",))
    assert may_answer("_INBOX.bot.tomori.r1", ("_INBOX.bot.tomori.",))


@pytest.mark.parametrize("reply", [r for r in HOSTILE_REPLIES if not r.startswith("_INBOX.")])
def test_the_reserved_subjects_are_never_answered_whatever_the_prefixes(reply):
    # An operator's prefix list that would cover them (a mistake) still answers none of them.
    assert not may_answer(reply, ("$", "memory.", "cache.", "metrics.", "dlq.", "cmd.", "_memory_upgrade.", "_INBOX."))


@pytest.mark.parametrize("prefix, root", [("memory.", "memory."), ("m", "memory."), ("$JS.API.", "$"),
                                          ("dlq.memory.", "dlq."), ("_memory_upgrade.", "_memory_upgrade."),
                                          ("_INBOX.", None), ("_INBOX.bot.tomori.", None), ("bot.replies.", None)])
def test_reserved_root_of_a_prefix(prefix, root):
    assert subjects.reserved_root(prefix) == root


@pytest.mark.parametrize("subject, ok", [
    ("memory.create.123", True), ("memory.seed_bio.a%2Eb", True),
    ("memory.create.*", False), ("memory.create.a*b", False), ("memory.create.a.b", False), ("memory.forget.1", False),
    ("memory.create.", False), ("memory.create.a b", False), ("$JS.API.STREAM.PURGE.MEMORY_DLQ", False),
    ("memory.saved.server.1", False), ("dlq.memory.create.1", False),
])
def test_is_command_subject(subject, ok):
    assert subjects.is_command_subject(subject, COMMAND_KINDS) is ok


@pytest.mark.parametrize("subject, ok", [
    (subjects.saved_subject("server", "1"), True), (subjects.evicted_subject("personal", "a b"), True),
    (subjects.removed_subject("server", "1"), True), (subjects.invalidate_subject("user", "x.y"), True),
    (subjects.METRIC_EVICTION_SUBJECT, True),
    ("memory.saved", False), ("memory.create.1", False), ("$JS.API.STREAM.PURGE.MEMORY_EVENTS", False),
    ("dlq.memory.create.1", False), ("cache.invalidate.*", False), ("metrics.>", False), ("_INBOX.x", False),
])
def test_is_event_subject(subject, ok):
    assert subjects.is_event_subject(subject) is ok


@pytest.mark.parametrize("reply, ok", [
    ("$JS.ACK.MEMORY_EVENTS.cache-node-a.1.5.5.1700000000000000000.0", True),
    ("$JS.ACK.hub.ABCHASH.MEMORY_EVENTS.cache-node-a.1.5.5.1700000000000000000.0.r4nd", True),  # domain, account
    ("$JS.ACK.MEMORY_EVENTS.cache-node-b.1.5.5.1700000000000000000.0", False),  # another consumer's
    ("$JS.ACK.MEMORY_COMMANDS.cache-node-a.1.5.5.1700000000000000000.0", False),  # another stream's
    ("$JS.ACK.MEMORY_EVENTS.cache-node-a.1.x.5.1700000000000000000.0", False),
    ("$JS.ACK.MEMORY_EVENTS.cache-node-a.1.5.5", False),
    ("$JS.ACK.MEMORY_EVENTS.cache-node-a.>", False),
    ("$JS.API.STREAM.PURGE.MEMORY_EVENTS", False), ("trap.x", False), ("", False),
])
def test_is_ack_subject(reply, ok):
    assert subjects.is_ack_subject(reply, "MEMORY_EVENTS", "cache-node-a") is ok
