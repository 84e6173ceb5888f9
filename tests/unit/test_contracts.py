import re
from datetime import UTC, datetime

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts import schema, subjects
from contracts.codec import RESULT_DECODER, encode
from contracts.events import MemoryEvictionMetric
from contracts.kinds.create import CommandResult, CreateMemory, ResultData
from contracts.registry import decoder_for


def test_schema_files_match_the_structs():
    stale = [p.name for p, text in schema.expected_files().items() if not p.exists() or p.read_text() != text]
    assert stale == [], f"run `make schemas` and commit: {stale}"


@pytest.mark.parametrize(
    ("raw", "token"),
    [
        ("123456789012345678", "123456789012345678"),
        ("pk:0b1c-uuid", "pk:0b1c-uuid"),
        ("a.b", "a%2Eb"),
        ("with space", "with%20space"),
        ("50%", "50%25"),
        ("é", "%C3%A9"),
        ("*>", "%2A%3E"),
    ],
)
def test_token_encoding(raw, token):
    assert subjects.encode_token(raw) == token
    assert subjects.decode_token(token) == raw


@given(st.text(min_size=1, max_size=40))
def test_token_roundtrip_and_is_one_safe_token(value):
    token = subjects.encode_token(value)
    assert subjects.decode_token(token) == value
    assert all(c.isalnum() and c.isascii() or c in "_:-%" for c in token)


@given(st.text(min_size=1, max_size=40))
def test_lower_case_hex_decodes_to_the_same_id_and_canonicalises_to_what_publishers_write(value):
    token = subjects.encode_token(value)
    lower = re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), token)
    assert subjects.decode_token(lower) == value
    assert subjects.canonical_token(lower) == token


def test_empty_id_is_refused():
    with pytest.raises(ValueError, match="empty"):
        subjects.encode_token("")


def test_subject_builders():
    assert subjects.command_subject("create", "1.2") == "memory.create.1%2E2"
    assert subjects.saved_subject("personal", "42") == "memory.saved.personal.42"
    assert subjects.invalidate_subject("tomori_state", "9") == "cache.invalidate.tomori_state.9"
    assert subjects.parse_partitioned("cmd.3.create.ws") == ("create", "ws")
    with pytest.raises(ValueError):
        subjects.parse_partitioned("memory.create.ws")
    with pytest.raises(ValueError):
        subjects.parse_partitioned("memory.saved.server.1")


def test_filter_builders_match_what_the_stream_stores():
    assert subjects.command_filter() == "memory.*.*"
    assert subjects.command_filter("seed_bio") == "memory.seed_bio.*"
    assert subjects.command_filter(workspace_token="1%2E2") == "memory.*.1%2E2"
    # A command's original subject is the filter on exactly it, and parses back to its parts.
    assert subjects.original_subject("create", "ws") == subjects.command_subject("create", "ws") == "memory.create.ws"
    assert subjects.partition_transform(4)[0] == subjects.command_filter()
    assert subjects.partitioned_workspace_filter("ws") == "cmd.*.*.ws"
    assert subjects.dlq_subject(subjects.command_subject("manual", "7")) == "dlq.memory.manual.7"
    assert subjects.DLQ_FILTER == subjects.DLQ_PREFIX + ">"
    assert subjects.dlq_subject("memory.create.ws").removeprefix(subjects.DLQ_PREFIX) == "memory.create.ws"


def _create(**over):
    base = {
        "command_id": "c-1", "issued_at": "2026-11-29T10:00:00Z", "reply_to": "_INBOX.x.1", "workspace_id": "1",
        "tool_args": {"memory_content": "x"}, "persona": {"id": 1, "lineage_id": 2, "name": "Tomori"},
        "bot_user_id": "99", "channel": {"id": "5"}, "future_field": [1, 2],
    }
    base.update(over)
    return msgspec.json.encode(base)


def test_create_decodes_and_ignores_unknown_fields():
    cmd = decoder_for("create").decode(_create())
    assert isinstance(cmd, CreateMemory)
    assert cmd.issued_at == datetime(2026, 11, 29, 10, tzinfo=UTC)
    assert cmd.retrieval.rag_available is False


@pytest.mark.parametrize(
    ("override", "path"),
    [
        ({"command_id": ""}, "$.command_id"),
        ({"command_id": "x" * 129}, "$.command_id"),
        ({"workspace_id": 123}, "$.workspace_id"),
        ({"persona": {"id": 1, "lineage_id": "2", "name": "T"}}, "$.persona.lineage_id"),
        ({"reply_to": "foo.*"}, "$.reply_to"),
        ({"reply_to": "has space"}, "$.reply_to"),
        ({"issued_at": "yesterday"}, "$.issued_at"),
    ],
)
def test_invalid_envelope_names_the_field(override, path):
    with pytest.raises(msgspec.ValidationError, match=path.replace("$", r"\$").replace(".", r"\.")):
        decoder_for("create").decode(_create(**override))


def test_result_omits_unset_extras_but_keeps_nulls():
    result = CommandResult(command_id="c", success=True, message="m", data=ResultData(status="memory_saved_successfully"))
    body = msgspec.json.decode(encode(result))
    assert body["data"] == {"status": "memory_saved_successfully", "scope": None, "memory_id": None, "content_saved": None,
                            "content_forgotten": None, "reason": None}
    assert RESULT_DECODER.decode(encode(result)) == result


def test_eviction_metric_has_exactly_scope_and_decay_days():
    assert msgspec.json.decode(encode(MemoryEvictionMetric(scope="server", decay_days=30))) == {
        "scope": "server", "decay_days": 30}


@pytest.mark.parametrize("field", ["command_id", "workspace_id", "bot_user_id"])
def test_nul_in_an_envelope_string_is_invalid(field):
    with pytest.raises(msgspec.ValidationError, match=rf"\$\.{field}"):
        decoder_for("create").decode(_create(**{field: "a\x00b"}))
