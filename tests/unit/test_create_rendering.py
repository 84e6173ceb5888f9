"""A create's answer and events, rendered from what its inbox row stores: its decision and, for
a save, what the save learned under the lock (worker/kinds/create/rendering.py, events.py).
Pure: no database here; tests/integration/test_save_outcome.py runs the same against the SQL."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts.codec import encode
from contracts.events import MemoryEvicted, MemoryEvictionMetric, MemorySaved
from contracts.kinds.create import (
    AMBIGUOUS_USER,
    DISABLED,
    INTERNAL_ERROR,
    INVALID_ARGS,
    INVALID_CONTENT,
    LIMIT_EXCEEDED,
    PRIVACY_RESTRICTED,
    USER_NOT_FOUND,
)
from tests.unit.test_create_decision import READY, command, context, decide, personal_args, planned, server_args
from worker.domain.notice import NoticeSettings
from worker.domain.workspace import Limits, Workspace
from worker.kinds.create import texts
from worker.kinds.create.arguments import parse_tool_args
from worker.kinds.create.decision import decide_create
from worker.kinds.create.events import create_events
from worker.kinds.create.outcome import SaveOutcome
from worker.kinds.create.record import CreateDecision, SavePlan, SaveSettled
from worker.kinds.create.rendering import render_create

WRITES = {SaveOutcome.SAVED, SaveOutcome.SAVED_WITH_EVICTION}
AT = "2026-12-03T05:55:47.967643+00:00"


def _plan(tool_args, *, decay: bool) -> SavePlan:
    return planned(decide(command(tool_args, retrieval=READY), context(Workspace(memory_decay_enabled=decay))))


def _stored(decision: CreateDecision, facts: SaveSettled | None) -> tuple[CreateDecision, SaveSettled | None]:
    """The decision and facts as they come back from their stored JSON."""
    return (msgspec.json.decode(encode(decision), type=CreateDecision),
            None if facts is None else msgspec.json.decode(encode(facts), type=SaveSettled))


def _facts_for(outcome: SaveOutcome) -> SaveSettled:
    if outcome == SaveOutcome.SAVED:
        return SaveSettled(outcome=outcome, memory_id=412)
    if outcome == SaveOutcome.SAVED_WITH_EVICTION:
        return SaveSettled(outcome=outcome, memory_id=413, evicted_id=9, forgotten="an old fact")
    if outcome in (SaveOutcome.AT_CAP, SaveOutcome.OVER_CAP):
        return SaveSettled(outcome=outcome, count=20)
    return SaveSettled(outcome=outcome)


@pytest.mark.parametrize("outcome", sorted(set(SaveOutcome) - WRITES))
def test_every_outcome_that_writes_nothing_renders_as_a_refusal_with_no_events(outcome):
    plan = _plan(personal_args(), decay=False)
    result = render_create("cmd-1", plan, _facts_for(outcome))
    assert result.success is False and result.data.status in (LIMIT_EXCEEDED, PRIVACY_RESTRICTED)
    assert result.invalidated == [] and result.notice is None and result.data.memory_id is None
    assert create_events("cmd-1", "ws", plan, _facts_for(outcome), AT) == []


@pytest.mark.parametrize("outcome", sorted(WRITES))
def test_an_outcome_that_writes_renders_as_the_save_with_its_id(outcome):
    plan = _plan(server_args(), decay=True)
    facts = _facts_for(outcome)
    result = render_create("cmd-1", plan, facts)
    assert result.success is True and result.data.memory_id == facts.memory_id
    assert result.data.content_forgotten == facts.forgotten
    assert result.notice is not None and result.notice["title"].startswith("Memory saved")


def test_a_save_stored_without_what_it_learned_under_the_lock_fails_loudly():
    with pytest.raises(ValueError, match="under the lock"):
        render_create("cmd-1", _plan(server_args(), decay=False), None)
    with pytest.raises(ValueError, match="memory id"):
        render_create("cmd-1", _plan(server_args(), decay=False), SaveSettled(outcome=SaveOutcome.SAVED))


@given(content=st.text(min_size=1, max_size=300).filter(lambda t: t.strip() and "\x00" not in t),
       forgotten=st.text(max_size=300), memory_id=st.integers(1, 2**62))
def test_a_stored_row_renders_the_same_bytes_and_events_every_time(content, forgotten, memory_id):
    plan = _plan(server_args(content), decay=True)
    facts = SaveSettled(outcome=SaveOutcome.SAVED_WITH_EVICTION, memory_id=memory_id, evicted_id=3, forgotten=forgotten)
    decision, stored_facts = _stored(plan, facts)
    assert encode(render_create("c", decision, stored_facts)) == encode(render_create("c", plan, facts))
    assert isinstance(decision, SavePlan) and stored_facts is not None
    again = create_events("c", "ws", decision, stored_facts, AT)
    assert [encode(e) for e in again] == [encode(e) for e in create_events("c", "ws", plan, facts, AT)]


@pytest.mark.parametrize("tool_args", [personal_args("nobody"), {"memory_scope": 3}, server_args("a" * 1001)])
def test_a_refusal_renders_the_same_from_its_stored_json(tool_args):
    cmd = command(tool_args)
    decision = decide_create(cmd, parse_tool_args(tool_args), context(), Limits(), NoticeSettings())
    assert not isinstance(decision, SavePlan)
    stored, _ = _stored(decision, None)
    assert encode(render_create("c", stored, None)) == encode(render_create("c", decision, None))


def test_a_repeat_is_worded_by_the_code_that_renders_it(monkeypatch):
    """Nothing of the words is stored: a row rendered after an upgrade says what the new code says."""
    plan = _plan(server_args(), decay=False)
    facts = SaveSettled(outcome=SaveOutcome.SAVED, memory_id=1)
    assert render_create("c", plan, facts).message == texts.SAVED_MESSAGE
    monkeypatch.setattr(texts, "SAVED_MESSAGE", "Saved, in newer words")
    assert render_create("c", *_stored(plan, facts)).message == "Saved, in newer words"


def test_a_plain_saves_events_invalidate_first_then_say_what_was_saved():
    plan = _plan(personal_args(), decay=False)
    facts = _facts_for(SaveOutcome.SAVED)
    events = create_events("cmd-1", "ws", plan, facts, AT)
    assert [e.subject.split(".")[0] for e in events] == ["cache", "memory"]
    invalidate, saved = events
    assert invalidate.subject == f"cache.invalidate.user.{plan.owner_id}"
    payload = saved.payload
    assert isinstance(payload, MemorySaved)
    assert saved.subject == f"memory.saved.personal.{plan.owner_id}"
    assert saved.headers == {"Nats-Msg-Id": "cmd-1:saved"} and payload.event_id == "cmd-1:saved"
    assert (payload.memory_id, payload.content, payload.owner_id, payload.lineage_id, payload.workspace_id) == (
        412, plan.content, plan.owner_id, plan.lineage_id, "ws")
    assert payload.evicted is None and payload.source == "model" and payload.occurred_at == AT
    assert payload.notice == render_create("cmd-1", plan, facts).notice


def test_an_evicting_saves_events_name_the_forgotten_row_and_carry_the_metric_id_chosen_before():
    plan = _plan(server_args(), decay=True)
    assert plan.metric_event_id is not None
    invalidate, saved, evicted, metric = create_events("cmd-1", "ws", plan, _facts_for(SaveOutcome.SAVED_WITH_EVICTION),
                                                       AT)
    assert invalidate.subject == "cache.invalidate.tomori_state." + plan.owner_id
    assert isinstance(saved.payload, MemorySaved) and saved.payload.evicted is not None
    assert (saved.payload.evicted.memory_id, saved.payload.evicted.content) == (9, "an old fact")
    assert isinstance(evicted.payload, MemoryEvicted)
    assert (evicted.payload.memory_id, evicted.payload.replaced_by, evicted.payload.content_forgotten,
            evicted.payload.decay_days) == (9, 413, "an old fact", plan.decay_days)
    assert isinstance(metric.payload, MemoryEvictionMetric)
    assert metric.headers == {"Nats-Msg-Id": plan.metric_event_id}
    assert msgspec.to_builtins(metric.payload) == {"scope": "server", "decay_days": plan.decay_days}


def test_an_eviction_without_its_metric_id_builds_no_events():
    plan = msgspec.structs.replace(_plan(server_args(), decay=True), metric_event_id=None)
    with pytest.raises(ValueError, match="metric id"):
        create_events("c", "ws", plan, _facts_for(SaveOutcome.SAVED_WITH_EVICTION), AT)


# Decisions as releases before issue 37 stored them (fields are only ever added): each still
# decodes and renders, in TomoriBot's words, with its status unchanged.
STORED_BEFORE_ISSUE_37 = [
    ({"decided": "invalid_args", "detail": "memory_scope is required: use 'server_wide' or 'target_user'"},
     INVALID_ARGS, "Invalid parameters: memory_scope is required: use 'server_wide' or 'target_user'"),
    ({"decided": "disabled", "tool_scope": "server_wide"}, DISABLED, "Self-teaching is disabled for this server"),
    ({"decided": "disabled", "tool_scope": "target_user", "personal": True}, DISABLED,
     "Personal memories are disabled for this server"),
    ({"decided": "reserved_lineage", "tool_scope": "target_user"}, INTERNAL_ERROR,
     "Internal configuration error: this persona has an invalid lineage ID."),
    ({"decided": "ambiguous", "query": "sam", "candidates": ["Sam (@a)", "Sam (@b)"]}, AMBIGUOUS_USER,
     'Multiple users match "sam". Please clarify which one you mean: Sam (@a), Sam (@b).'),
    ({"decided": "user_not_found", "query": "Bo"}, USER_NOT_FOUND,
     'Could not find a user matching "Bo" in this conversation or server.'),
    ({"decided": "user_not_found", "query": "mika", "label": "Mika"}, USER_NOT_FOUND,
     "I don't know Mika yet, so I cannot save a personal memory for them."),
    ({"decided": "host_protected", "label": "Nova", "why": "host_blacklisted"}, PRIVACY_RESTRICTED,
     "Cannot save personal memory: Nova has privacy restrictions."),
    ({"decided": "invalid_content", "tool_scope": "server_wide", "length": 1001, "limit": 1000},
     INVALID_CONTENT, "Memory content is too long. Maximum length is 1000 characters."),
    ({"decided": "privacy_restricted", "label": "Mika", "level": 1}, PRIVACY_RESTRICTED,
     "Cannot save personal memory: Mika has privacy restrictions."),
]


@pytest.mark.parametrize(("stored", "status", "error"), STORED_BEFORE_ISSUE_37)
def test_a_refusal_stored_before_issue_37_renders_in_the_new_words(stored, status, error):
    decision = msgspec.json.decode(msgspec.json.encode(stored), type=CreateDecision)
    result = render_create("c", decision, None)
    assert (result.data.status, result.error) == (status, error)


def test_a_save_stored_before_issue_37_renders_its_notice_with_the_default_footer():
    plan = _plan(personal_args(), decay=False)
    stored = msgspec.to_builtins(plan)
    for added in ("personalization_enabled", "target_blacklisted"):
        stored.pop(added)
    old = msgspec.json.decode(msgspec.json.encode(stored), type=CreateDecision)
    notice = render_create("c", old, SaveSettled(outcome=SaveOutcome.SAVED, memory_id=5)).notice
    assert notice is not None and notice["embed"]["footer_key"] == "genai.self_teach.personal_memory_footer_manage"
