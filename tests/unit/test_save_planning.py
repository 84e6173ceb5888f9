"""What a create stores when its save writes, and what it words when the save writes nothing
(worker/domain/save.py, worker/domain/outcome.py, db/requests.py), and the events it builds
from what was stored (worker/domain/events.py, create_events). Pure: no database here;
tests/integration/test_save_outcome.py runs the same against the SQL."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts import results as codes
from contracts.codec import RESULT_DECODER, encode
from contracts.events import MemoryEvicted, MemoryEvictionMetric, MemorySaved
from db import requests
from db.requests import CreateSaveRequest, evicted_pieces, saved_pieces
from tests.unit.test_create_decision import READY, command, context, decide, personal_args, planned, server_args
from worker.domain.events import SavedFacts, create_events
from worker.domain.model import SaveOutcome, Workspace
from worker.domain.notice import NoticeSettings
from worker.domain.outcome import WRITES, refused_under_lock
from worker.domain.save import save_request


def _save(tool_args, *, decay: bool):
    cmd = command(tool_args, retrieval=READY)
    return cmd, save_request(cmd, planned(decide(cmd, context(Workspace(memory_decay_enabled=decay)))),
                             NoticeSettings())


@pytest.mark.parametrize("decay", [False, True])
@pytest.mark.parametrize("tool_args", [server_args(), personal_args()])
def test_a_save_carries_an_eviction_exactly_when_its_plan_may_evict(tool_args, decay):
    _, save = _save(tool_args, decay=decay)
    assert save.plan.may_evict is decay
    assert (save.eviction is not None) is decay
    if save.eviction is not None:
        assert save.eviction.result.data.status == codes.SAVED_WITH_EVICTION
        assert save.eviction.facts.decay_days == save.plan.decay_days
        assert save.eviction.facts.metric_event_id.startswith("metric:")
    assert save.result.data.status == codes.SAVED
    # The owner only where the result and command do not name it: a person's memory.
    assert save.facts == SavedFacts(owner_id=save.plan.owner_id if save.plan.scope == "personal" else None)


def test_the_eviction_metric_id_is_chosen_once_per_save_and_leads_back_to_nothing():
    cmd, first = _save(server_args(), decay=True)
    _, second = _save(server_args(), decay=True)
    assert first.eviction is not None and second.eviction is not None
    assert first.eviction.facts.metric_event_id != second.eviction.facts.metric_event_id
    assert cmd.command_id not in first.eviction.facts.metric_event_id


@pytest.mark.parametrize("outcome", sorted(set(SaveOutcome) - WRITES))
def test_every_outcome_that_writes_nothing_is_worded_as_a_refusal(outcome):
    cmd, save = _save(personal_args(), decay=False)
    result = refused_under_lock(cmd, save.plan, outcome, 20)
    assert result.success is False and result.command_id == cmd.command_id
    assert result.error and result.data.reason == result.error
    assert result.invalidated == [] and result.notice is None
    expected = codes.LIMIT_EXCEEDED if outcome in (SaveOutcome.AT_CAP, SaveOutcome.OVER_CAP) else codes.PRIVACY_RESTRICTED
    assert result.data.status == expected


def test_a_refusal_at_the_cap_reports_the_count_read_under_the_lock():
    cmd, save = _save(server_args(), decay=False)
    at_cap = refused_under_lock(cmd, save.plan, SaveOutcome.AT_CAP, 50)
    over = refused_under_lock(cmd, save.plan, SaveOutcome.OVER_CAP, 57)
    assert (at_cap.data.current_count, at_cap.data.max_allowed) == (50, save.plan.cap)
    assert over.data.current_count == 57 and over.error != at_cap.error


@pytest.mark.parametrize("outcome", [SaveOutcome.AT_CAP, SaveOutcome.OVER_CAP])
def test_a_cap_refusal_reported_without_its_count_fails_instead_of_saying_zero(outcome):
    cmd, save = _save(server_args(), decay=False)
    with pytest.raises(ValueError, match="without the count"):
        refused_under_lock(cmd, save.plan, outcome, None)


def test_privacy_read_under_the_lock_is_worded_by_the_level_it_found():
    cmd, save = _save(personal_args(), decay=False)
    partial = refused_under_lock(cmd, save.plan, SaveOutcome.PRIVACY_PARTIAL, None)
    full = refused_under_lock(cmd, save.plan, SaveOutcome.PRIVACY_FULL, None)
    assert "partial" in (partial.error or "") and "full" in (full.error or "")
    assert partial.data.target_user == save.plan.target_label


@pytest.mark.parametrize("outcome", sorted(WRITES))
def test_an_outcome_that_writes_has_no_refusal(outcome):
    cmd, save = _save(server_args(), decay=True)
    with pytest.raises(ValueError, match="writes"):
        refused_under_lock(cmd, save.plan, outcome, 50)


# Strings that look like the id's place (JSON of a memory id, digits, quotes, escapes) or like
# the marks the cut draws (db/requests.py).
_TRICKY = st.sampled_from(['"memory_id":0', '"memory_id":1,', "0", "1", '\\"', "{user} 0", "\u2028", "\x01",
                           "7331913557194620181", "\u2063fact\u2063", '{"\u2063notice\u2063":0}'])


@given(content=st.lists(st.one_of(_TRICKY, st.text(max_size=8)), max_size=6).map("".join),
       command_id=st.lists(st.one_of(_TRICKY, st.text(min_size=1, max_size=8)), min_size=1, max_size=4).map("".join),
       memory_id=st.integers(min_value=1, max_value=2**63 - 1))
def test_a_result_cut_at_its_memory_id_is_the_result_with_any_id_in_its_place(content, command_id, memory_id):
    result = codes.CommandResult(command_id=command_id, success=True, message="Memory saved successfully",
                                 data=codes.ResultData(status=codes.SAVED, scope="server_wide", memory_id=0,
                                                       content_saved=content, reason=content))
    before, after = saved_pieces(result)
    result.data.memory_id = memory_id
    assert (before + str(memory_id) + after).encode() == encode(result)


@given(content=st.lists(st.one_of(_TRICKY, st.text(max_size=8)), max_size=6).map("".join),
       forgotten=st.lists(st.one_of(_TRICKY, st.text(max_size=8)), max_size=6).map("".join),
       notice=st.dictionaries(st.text(max_size=5), st.one_of(st.text(max_size=8), st.none(), st.integers()),
                              max_size=4),
       memory_id=st.integers(min_value=1, max_value=2**63 - 1))
def test_an_eviction_result_cut_where_the_database_fills_it_in_is_that_result(content, forgotten, notice, memory_id):
    """The database joins the pieces with the new id, the forgotten content escaped as its
    to_json() escapes a string (quotes dropped), and the notice as JSON."""
    result = codes.CommandResult(command_id=content or "c", success=True, message="Memory saved successfully",
                                 data=codes.ResultData(status=codes.SAVED_WITH_EVICTION, scope="server_wide",
                                                       memory_id=0, content_saved=content, content_forgotten=""),
                                 notice={"title": content})
    first, second, third, fourth = evicted_pieces(result)
    escaped = json.dumps(forgotten, ensure_ascii=False)[1:-1]
    joined = first + str(memory_id) + second + escaped + third + json.dumps(notice) + fourth
    expected = msgspec.structs.replace(result, notice=notice, data=msgspec.structs.replace(
        result.data, memory_id=memory_id, content_forgotten=forgotten))
    assert msgspec.json.decode(joined) == msgspec.json.decode(encode(expected))


@pytest.mark.parametrize("quoted", ["7331913557194620181", "\u2063fact\u2063", '{"\u2063notice\u2063":0}'])
def test_a_result_quoting_a_mark_drawn_for_it_is_cut_at_fresh_marks_the_same_way(quoted, monkeypatch):
    """The first marks drawn are the ones the result quotes (as a chance clash would make
    them): the cut draws again and cuts at the new ones."""
    clashing = requests._Marks(7331913557194620181, "\u2063fact\u2063", {"\u2063notice\u2063": 0})
    draws = iter([clashing, clashing])
    fresh = requests._fresh_marks
    monkeypatch.setattr(requests, "_fresh_marks", lambda: next(draws, None) or fresh())
    result = codes.CommandResult(command_id="c-1", success=True, message="Memory saved successfully",
                                 data=codes.ResultData(status=codes.SAVED_WITH_EVICTION, scope="server_wide",
                                                       memory_id=0, content_saved=quoted, content_forgotten=""),
                                 notice={"title": quoted})
    first, second, third, fourth = evicted_pieces(result)
    joined = first + "12" + second + "old" + third + '{"t":1}' + fourth
    assert msgspec.json.decode(joined) == msgspec.json.decode(encode(msgspec.structs.replace(
        result, notice={"t": 1}, data=msgspec.structs.replace(result.data, memory_id=12, content_forgotten="old"))))
    before, after = saved_pieces(result)
    assert before.endswith('"memory_id":') and after.startswith(',"content_saved"')


def test_a_result_with_no_single_place_for_a_fact_fails_loudly_instead_of_drawing_forever(monkeypatch):
    clashing = requests._Marks(7331913557194620181, "\u2063fact\u2063", {"\u2063notice\u2063": 0})
    monkeypatch.setattr(requests, "_fresh_marks", lambda: clashing)
    result = codes.CommandResult(command_id="c-1", success=True, data=codes.ResultData(
        status=codes.SAVED, memory_id=0, content_saved="7331913557194620181"))
    with pytest.raises(ValueError, match="no single place"):
        saved_pieces(result)


def test_the_request_carries_the_plain_result_cut_and_nothing_for_outcomes_that_write_nothing():
    cmd, save = _save(personal_args(), decay=True)
    request = msgspec.json.decode(encode(CreateSaveRequest.of(cmd, save, 42)))
    assert request["type"] == "save" and request["applied_by"] == 42
    assert RESULT_DECODER.decode(request["result"][0] + "7" + request["result"][1]).data.memory_id == 7
    assert request["status"] == codes.SAVED
    assert request["eviction"]["status"] == codes.SAVED_WITH_EVICTION and len(request["eviction"]["result"]) == 4
    assert request["facts"] == {"owner_id": save.plan.owner_id}
    assert "results" not in request and "events" not in request


def _stored(result, memory_id: int, forgotten: str | None = None):
    """A result as the database stores it after a save: the new id (and after an eviction the
    forgotten content) in place."""
    result = msgspec.structs.replace(result, data=msgspec.structs.replace(
        result.data, memory_id=memory_id, **({} if forgotten is None else {"content_forgotten": forgotten})))
    return RESULT_DECODER.decode(encode(result))


def test_a_plain_saves_events_come_from_its_stored_result_invalidations_first():
    cmd, save = _save(personal_args(), decay=False)
    result = _stored(save.result, 412)
    events = create_events(cmd, result, save.facts, "2026-12-03T05:55:47.967643+00:00")
    assert [e.subject.split(".")[0] for e in events] == ["cache", "memory"]
    invalidate, saved = events
    assert invalidate.subject == f"cache.invalidate.user.{save.plan.owner_id}"
    payload = saved.payload
    assert isinstance(payload, MemorySaved)
    assert saved.subject == f"memory.saved.personal.{save.plan.owner_id}"
    assert saved.headers == {"Nats-Msg-Id": f"{cmd.command_id}:saved"} and payload.event_id == f"{cmd.command_id}:saved"
    assert (payload.memory_id, payload.content, payload.owner_id, payload.lineage_id) == (
        412, save.plan.content, save.plan.owner_id, cmd.persona.lineage_id)
    assert payload.evicted is None and payload.notice == result.notice and payload.source == "model"
    assert payload.occurred_at == "2026-12-03T05:55:47.967643+00:00"


def test_an_evicting_saves_events_name_the_forgotten_row_and_carry_the_metric_id_chosen_before():
    cmd, save = _save(server_args(), decay=True)
    assert save.eviction is not None
    result = _stored(save.eviction.result, 413, forgotten="an old fact")
    facts = msgspec.structs.replace(save.facts, evicted_id=9, decay_days=save.eviction.facts.decay_days,
                                    metric_event_id=save.eviction.facts.metric_event_id)
    invalidate, saved, evicted, metric = create_events(cmd, result, facts, "2026-12-03T05:55:47.967643+00:00")
    assert isinstance(saved.payload, MemorySaved) and saved.payload.evicted is not None
    assert (saved.payload.evicted.memory_id, saved.payload.evicted.content) == (9, "an old fact")
    assert isinstance(evicted.payload, MemoryEvicted)
    assert (evicted.payload.memory_id, evicted.payload.replaced_by, evicted.payload.content_forgotten,
            evicted.payload.decay_days) == (9, 413, "an old fact", save.plan.decay_days)
    assert isinstance(metric.payload, MemoryEvictionMetric)
    assert metric.headers == {"Nats-Msg-Id": save.eviction.facts.metric_event_id}


def test_a_server_saves_events_need_no_facts_the_result_and_command_name_its_owner():
    cmd, save = _save(server_args(), decay=False)
    assert encode(save.facts) == b"{}"
    invalidate, saved = create_events(cmd, _stored(save.result, 8), None, "t")
    assert saved.subject == f"memory.saved.server.{cmd.workspace_id}"
    assert isinstance(saved.payload, MemorySaved) and saved.payload.owner_id == cmd.workspace_id


def test_a_persons_memory_stored_without_its_owner_builds_no_events():
    cmd, save = _save(personal_args(), decay=False)
    with pytest.raises(ValueError, match="without its owner"):
        create_events(cmd, _stored(save.result, 8), None, "t")


def test_the_same_stored_row_builds_the_same_events():
    cmd, save = _save(server_args(), decay=False)
    result = _stored(save.result, 5)
    first = create_events(cmd, result, save.facts, "t")
    again = create_events(cmd, _stored(save.result, 5), save.facts, "t")
    assert [encode(e) for e in first] == [encode(e) for e in again]


def test_an_eviction_publishes_the_metric_id_its_request_carried_every_time_it_is_built():
    """The metric id is drawn once, before the save; the request stores it with the row (the
    database merges the eviction's facts into the save's, as below), and every build of the
    events from that row, the first publish and each republish, carries that id."""
    cmd, save = _save(server_args(), decay=True)
    assert save.eviction is not None
    request = msgspec.json.decode(encode(CreateSaveRequest.of(cmd, save, 7)))
    stored_facts = SavedFacts(**{**request["facts"], **request["eviction"]["facts"], "evicted_id": 3})
    result = _stored(save.eviction.result, 11, forgotten="old")
    first = create_events(cmd, result, stored_facts, "t")
    again = create_events(cmd, _stored(save.eviction.result, 11, forgotten="old"), stored_facts, "t")
    assert [encode(e) for e in first] == [encode(e) for e in again]
    assert first[-1].headers == {"Nats-Msg-Id": save.eviction.facts.metric_event_id}


def test_a_refusal_has_no_events_to_build():
    cmd, save = _save(personal_args(), decay=False)
    refusal = refused_under_lock(cmd, save.plan, SaveOutcome.PRIVACY_FULL, None)
    with pytest.raises(ValueError, match="not a save"):
        create_events(cmd, refusal, save.facts, "t")



def test_facts_asked_for_out_of_the_order_the_database_fills_them_fail_loudly():
    """The database fills the cuts in order (id, forgotten content, notice): a contract whose
    fields came in another order must fail here, not store a fact in another's place."""
    text = encode(codes.CommandResult(command_id="c-1", success=True, data=codes.ResultData(
        status=codes.SAVED_WITH_EVICTION, memory_id=0, content_forgotten=""))).decode()
    notice, memory_id = text.index('"notice"'), text.index('"memory_id"')
    with pytest.raises(ValueError, match="order"):
        requests._cut(text, [(notice, notice + 1), (memory_id, memory_id + 1)])
