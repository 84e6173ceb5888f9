"""Dead letters never exceed the server's limit, and say when they cannot be replayed (issue 14)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts import subjects
from worker.consuming.dead_letters import (
    DeadLetter,
    by_reference,
    fits_whole,
    headers_size,
    letter_subject,
    replay_refusal,
)


def letter(subject: str, headers: dict[str, str] | None = None, reason: str = "max_deliver_exhausted") -> DeadLetter:
    return DeadLetter(seq=7, original_subject=subject, reason=reason, error="", deliveries=1,
                      first_failed_at=None, dead_lettered_at=None, headers=headers or {}, payload=b"{}")


def test_headers_size_is_what_nats_sends():
    assert headers_size({"A": "b"}) == len(b"NATS/1.0\r\nA: b\r\n\r\n")


def test_a_payload_kept_by_reference_fits_the_limit_with_its_headers():
    payload = b"x" * 1_048_000
    headers = {"Dlq-Error": "e" * 1000, "Dlq-Original-Subject": "memory.create.1"}
    assert not fits_whole(payload, headers, 1024 * 1024)
    for limit in (1024 * 1024, 8192, 2048):
        excerpt, kept = by_reference(payload, headers, 42, limit)
        assert len(excerpt) + headers_size(kept) < limit
        assert payload.startswith(excerpt) and kept["Dlq-Excerpt-Bytes"] == str(len(excerpt))
        assert kept["Dlq-Original-Size"] == str(len(payload)) and kept["Dlq-Original-Stream"] == "MEMORY_COMMANDS:42"


def test_letter_subjects_are_plain_and_short():
    assert letter_subject("memory.create.123") == "dlq.memory.create.123"
    assert letter_subject("memory.create.*") == "dlq.memory.create.%2A"
    assert letter_subject("memory.manual.>") == "dlq.memory.manual.%3E"
    assert letter_subject("memory.create.a\x7fb\x01") == "dlq.memory.create.a%7Fb%01"
    assert letter_subject("memory.create.a*b>") == "dlq.memory.create.a%2Ab%3E"
    # Made from a stored subject, or in the stream upgrade from a header: always under dlq.memory.
    assert letter_subject("$JS.API.STREAM.PURGE.MEMORY_DLQ") == "dlq.memory.unknown.MEMORY_DLQ"
    assert letter_subject("memory.create.*.x") == "dlq.memory.unknown.x"
    long = letter_subject("memory.create." + "y" * 4000)
    assert long.startswith("dlq.memory.create.sha256_") and len(long) < 100


@given(st.text(min_size=0, max_size=300).filter(lambda t: "." not in t), st.sampled_from(["memory.create", "x", ""]))
def test_every_letter_subject_is_a_dead_letter_subject(token, prefix):
    original = f"{prefix}.{token}" if prefix else token
    assert subjects.is_dead_letter_subject(letter_subject(original)), original


def test_replay_is_refused_for_excerpts_and_unplaceable_subjects():
    assert replay_refusal(letter("memory.create.123")) is None
    assert "only the first 10 of its 2000000 bytes" in replay_refusal(letter("memory.create.1", {
        "Dlq-Payload": "excerpt", "Dlq-Excerpt-Bytes": "10", "Dlq-Original-Size": "2000000"}))
    # Dlq-Original-Subject, the subject a replay publishes to, is a header: a forged or broken
    # one names no command subject, and nothing is published (issue 35).
    for subject in ("memory.create.*", "memory.seed_bio.>", "memory.forget.1", "memory.create.a.b",
                    "memory.create.a*b", "memory.create.", "$JS.API.STREAM.PURGE.MEMORY_DLQ",
                    "$JS.API.STREAM.DELETE.MEMORY_COMMANDS", "memory.saved.server.1", "dlq.memory.create.1",
                    "_INBOX.bot.kaede.x", "memory.create.a b"):
        assert "is no command subject" in replay_refusal(letter(subject), include_invalid=True), subject


@pytest.mark.parametrize("reason", ["invalid_command", "unsupported_command"])
def test_a_command_refused_as_sent_is_replayed_only_when_asked(reason):
    refused = letter("memory.create.123", reason=reason)
    assert f"it was refused as sent ({reason}" in replay_refusal(refused)
    assert replay_refusal(refused, include_invalid=True) is None
    assert replay_refusal(letter("memory.create.123", reason="permanent_error")) is None
