"""The helpers in tests/support/ that several harnesses share: the JSON-log reader, the
create builder and the JSON edits of the fuzz runs."""

from __future__ import annotations

import json

from contracts.kinds.create import CreateMemory
from tests.support.commands import command_payload, create_bytes, create_fields
from tests.support.fuzz import delete_at, inner_paths, paths, replace_at
from tests.support.logs import log_events
from worker.client.memory_client import new_create

LOG = "\n".join([
    '{"event": "worker_ready", "partitions": 4}',
    "2026-01-01 console line",
    '{"event": "command", "command_id": "a", "status": "memory_saved"}',
    '{"event": "command", "command_id": "b", "status": "memory_saved"}',
    '{"event": "command", "command_id": "c", "sta',  # still being written
    "[1, 2]",
])


def test_log_events_reads_every_json_entry_and_filters_by_event_and_fields():
    assert [e["event"] for e in log_events(LOG)] == ["worker_ready", "command", "command"]
    assert [e["command_id"] for e in log_events(LOG, "command")] == ["a", "b"]
    assert log_events(LOG, "command", command_id="b") == [
        {"event": "command", "command_id": "b", "status": "memory_saved"}]
    assert log_events(LOG, "nothing") == []


def test_the_create_builder_makes_a_command_the_contract_decodes():
    fields = create_fields("ws", "likes green tea", scope="target_user", target="Alice",
                           member_matches=[{"id": "100000000000000001", "display_name": "Alice"}])
    cmd = new_create(**fields)
    assert isinstance(cmd, CreateMemory) and cmd.tool_args["memory_content"] == "likes green tea"
    raw = create_bytes(fields, command_id="c-1", reply_to="_INBOX.x")
    assert json.loads(raw) == command_payload(fields, command_id="c-1", reply_to="_INBOX.x",
                                              issued_at=json.loads(raw)["issued_at"])
    assert create_fields("ws", bot_user_id="1")["bot_user_id"] == "1"  # any field overridden


def test_json_edits_by_path():
    value = {"a": [1, {"b": 2}], "c": 3}
    assert paths(value) == [(), ("a",), ("a", 0), ("a", 1), ("a", 1, "b"), ("c",)]
    assert inner_paths(value) == paths(value)[1:]
    assert replace_at(value, ("a", 1, "b"), 9) == {"a": [1, {"b": 9}], "c": 3}
    assert delete_at(value, ("a", 0)) == {"a": [{"b": 2}], "c": 3}
    assert delete_at(value, ()) == value
    assert value == {"a": [1, {"b": 2}], "c": 3}  # the original untouched
