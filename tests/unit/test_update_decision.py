"""An update's inbox row, held to what it renders (worker/kinds/update/record.py): a stored example of
each decision, as the JSON the row keeps, with the status and events it answers with. The JSON is the
stored format: a change that stops reading one of these fails here, not on a repeat in production.
And the row's kind decides whose union its decision is (db/inbox.py, decode_inbox_row)."""

from __future__ import annotations

import json

import msgspec
import pytest

from contracts.kinds.create import AMBIGUOUS_USER
from contracts.kinds.update import (
    MEMORY_DELETED,
    MEMORY_UPDATED,
    UPDATE_AMBIGUOUS_USER,
    UPDATE_DISABLED,
    UPDATE_INTERNAL_ERROR,
    UPDATE_INVALID_ARGS,
    UPDATE_INVALID_CONTENT,
    UPDATE_INVALID_SCOPE,
    UPDATE_INVALID_TARGET,
    UPDATE_NOT_FOUND,
    UPDATE_PRIVACY_RESTRICTED,
    UPDATE_USER_NOT_FOUND,
)
from db.inbox import decode_inbox_row
from worker.kinds.create import record as record_create_decision
from worker.kinds.update.record import UpdateRecord, UpdateTargetAmbiguous
from worker.services.stored import answer, published_events

ROUTE = {"verbosity": "minimal", "hidden": False, "conversation_channel_id": "120000000000000001",
         "thought_log_channel_id": None, "source_url": None, "thought_log_skipped": "not_configured"}
PLAN = {"decided": "plan", "scope": "personal", "owner_id": "100000000000000001", "user_id": 11, "memory_id": 24,
        "content": "{user} climbs", "lineage_id": 7, "persona_name": "Tomori", "target_label": "Mika",
        "in_guild": True, "personal_memories_enabled": True, "proxy": False, "notice": ROUTE}
DONE = {"outcome": "updated", "content_before": "{user} hikes", "lineage_id": 0, "source": "legacy",
        "manually_written": True}

INVALID_TYPE = {"decided": "invalid_parameters",
                "check": {"problems": [{"parameter": "memory_id", "expected": "number", "actual": "string"}]}}
MISSING = {"decided": "invalid_parameters", "check": {"missing": ["memory_id", "memory_content"]}}
LEGACY_TARGET = {"decided": "invalid_parameters",
                 "check": {"problems": [{"parameter": "target_user_nickname", "expected": "string", "actual": "array"}]}}

STORED: list[tuple[dict, dict | None, str]] = [
    # The parameter check's facts, as the create stores them (worker/domain/tool_arguments.py, ParameterCheck).
    (INVALID_TYPE, None, UPDATE_INVALID_ARGS),
    (MISSING, None, UPDATE_INVALID_ARGS),
    (LEGACY_TARGET, None, UPDATE_INVALID_ARGS),
    ({"decided": "invalid_argument", "problem": "memory_id"}, None, UPDATE_INVALID_ARGS),
    ({"decided": "invalid_argument", "problem": "nul", "parameter": "memory_content"}, None, UPDATE_INVALID_ARGS),
    ({"decided": "disabled"}, None, UPDATE_DISABLED),
    ({"decided": "invalid_content", "length": 1200, "limit": 1000}, None, UPDATE_INVALID_CONTENT),
    ({"decided": "ambiguous", "query": "Sam", "candidates": ["Sam (@a)", "Sam (@b)"]}, None,
     UPDATE_AMBIGUOUS_USER),
    ({"decided": "user_not_found", "query": "Bo"}, None, UPDATE_USER_NOT_FOUND),
    ({"decided": "user_not_found", "query": "Bo", "label": "Bo"}, None, UPDATE_USER_NOT_FOUND),
    ({"decided": "bridge_target"}, None, UPDATE_INVALID_SCOPE),
    ({"decided": "missing_server_context"}, None, UPDATE_INTERNAL_ERROR),
    ({"decided": "bot_target"}, None, UPDATE_INVALID_TARGET),
    ({"decided": "not_member", "dm": True}, None, UPDATE_INVALID_SCOPE),
    (PLAN, DONE, MEMORY_UPDATED),
    ({**PLAN, "content": None}, {**DONE, "outcome": "deleted", "blacklisted": True}, MEMORY_DELETED),
    (PLAN, {"outcome": "not_found"}, UPDATE_NOT_FOUND),
    (PLAN, {"outcome": "privacy_partial"}, UPDATE_PRIVACY_RESTRICTED),
    (PLAN, {"outcome": "privacy_full"}, UPDATE_PRIVACY_RESTRICTED),
    ({**PLAN, "proxy": True}, {"outcome": "host_protected", "host": "host_blacklisted"},
     UPDATE_PRIVACY_RESTRICTED),
]


def row(decision: dict | None, facts: dict | None, kind: str = "update") -> bytes:
    return json.dumps({"command_id": "c-1", "kind": kind, "workspace_id": "500000000000000001", "tenant": "",
                       "event_time": "2026-01-01T00:00:00+00:00", "status": None, "result": None, "events": None,
                       "decision": decision, "facts": facts, "applied_by": 3}).encode()


@pytest.mark.parametrize(("decision", "facts", "status"), STORED)
def test_each_stored_decision_renders_its_status_and_its_events(decision, facts, status):
    stored = decode_inbox_row(row(decision, facts))
    assert stored.decision is None and isinstance(stored.update, UpdateRecord)
    rendered = answer(stored)
    assert rendered.status == status
    assert msgspec.json.decode(rendered.result)["data"]["status"] == status
    subjects = [e.subject for e in published_events(stored)]
    if status == MEMORY_UPDATED:
        assert subjects == ["cache.invalidate.user.100000000000000001", "memory.updated.personal.100000000000000001"]
    elif status == MEMORY_DELETED:
        assert subjects == ["cache.invalidate.user.100000000000000001", "memory.removed.personal.100000000000000001"]
    else:
        assert subjects == []


@pytest.mark.parametrize(("decision", "text"), [
    (INVALID_TYPE, "Invalid parameters: Parameter 'memory_id' expected type 'number' but got 'string'"),
    (MISSING, "Invalid parameters: Missing required parameters: memory_id, memory_content"),
    (LEGACY_TARGET, "Invalid parameters: Parameter 'target_user_nickname' expected type 'string' but got 'array'"),
])
def test_a_stored_parameter_check_renders_tomoribots_text_in_error_and_reason(decision, text):
    result = msgspec.json.decode(answer(decode_inbox_row(row(decision, None))).result)
    assert (result["error"], result["data"]["reason"]) == (text, text)


def test_the_rows_kind_says_whose_union_its_decision_is():
    same = {"decided": "ambiguous", "query": "Sam", "candidates": ["a", "b"]}  # a tag both unions have
    update = decode_inbox_row(row(same, None))
    create = decode_inbox_row(row(same, None, kind="create"))
    assert update.update is not None
    assert isinstance(update.update.decision, UpdateTargetAmbiguous) and update.decision is None
    assert isinstance(create.decision, record_create_decision.CreateTargetAmbiguous) and create.update is None
    assert json.loads(answer(update).result)["data"]["status"] == UPDATE_AMBIGUOUS_USER
    assert json.loads(answer(create).result)["data"]["status"] == AMBIGUOUS_USER


def test_an_update_row_without_its_decision_is_a_storage_fault():
    with pytest.raises(ValueError, match="without its decision"):
        answer(decode_inbox_row(row(None, None)))
