"""Shadow mode's comparison (worker/domain/shadow.py): what agrees, what differs, and what is
put down to a concurrent write rather than to a rule."""

from __future__ import annotations

from contracts.results import ShadowDifference
from worker.domain.shadow import compare, flatten

SAVED = {"command_id": "c1", "success": True, "message": "Saved.", "error": None,
         "data": {"status": "memory_saved_successfully", "scope": "server_wide", "memory_id": 41},
         "invalidated": [{"cache": "tomori_state", "key": "1"}], "notice": {"title": "Memory saved"}}


def test_the_same_result_agrees_whatever_the_command_id_and_invalidated_say():
    bot = {**SAVED, "command_id": "other", "invalidated": []}
    assert compare(SAVED, timed_out=False, bot_result=bot, bot_error=None) == ("agreed", [])


def test_a_field_the_bot_leaves_out_is_not_compared():
    bot = {"success": True, "data": {"status": "memory_saved_successfully"}}
    assert compare(SAVED, timed_out=False, bot_result=bot, bot_error=None) == ("agreed", [])


def test_a_different_text_differs_with_both_values():
    bot = {**SAVED, "message": "Saved!"}
    assert compare(SAVED, timed_out=False, bot_result=bot, bot_error=None) == (
        "differed", [ShadowDifference(field="message", worker="Saved.", bot="Saved!")])


def test_a_field_only_the_bot_has_differs_against_null():
    bot = {**SAVED, "data": {**SAVED["data"], "extra": 1}}
    assert compare(SAVED, timed_out=False, bot_result=bot, bot_error=None) == (
        "differed", [ShadowDifference(field="data.extra", worker=None, bot=1)])


def test_another_new_id_is_a_concurrent_write_not_a_disagreement():
    bot = {**SAVED, "data": {**SAVED["data"], "memory_id": 42}}
    outcome, found = compare(SAVED, timed_out=False, bot_result=bot, bot_error=None)
    assert outcome == "concurrent" and [d.field for d in found] == ["data.memory_id"]


def test_a_different_id_of_an_existing_memory_is_a_disagreement():
    edited = {"success": True, "data": {"status": "memory_updated_successfully", "memory_id": 7}}
    bot = {"success": True, "data": {"status": "memory_updated_successfully", "memory_id": 8}}
    assert compare(edited, timed_out=False, bot_result=bot, bot_error=None)[0] == "differed"


def test_a_save_against_a_refusal_is_a_disagreement_whatever_the_ids():
    at_cap = {"success": False, "data": {"status": "memory_save_failed_limit_exceeded"}}
    bot = {"success": True, "data": {"status": "memory_saved_successfully", "memory_id": 43}}
    assert compare(at_cap, timed_out=False, bot_result=bot, bot_error=None)[0] == "differed"
    assert compare(bot, timed_out=False, bot_result=at_cap, bot_error=None)[0] == "differed"


def test_both_saving_under_other_ids_with_other_texts_is_put_down_to_the_concurrent_insert():
    bot = {**SAVED, "message": "Saved, replacing another.", "data": {**SAVED["data"], "memory_id": 45}}
    assert compare(SAVED, timed_out=False, bot_result=bot, bot_error=None)[0] == "concurrent"


def test_timed_out_unpaired_and_a_write_that_threw():
    assert compare(SAVED, timed_out=True, bot_result=SAVED, bot_error=None) == ("timed_out", [])
    assert compare(None, timed_out=False, bot_result=SAVED, bot_error=None) == ("unpaired", [])
    assert compare(SAVED, timed_out=False, bot_result=None, bot_error="db down") == (
        "differed", [ShadowDifference(field="error", worker=None, bot="db down")])


def test_lists_are_compared_whole_and_paths_are_dotted():
    assert flatten({"a": {"b": [1, 2], "c": {"d": None}}}) == {"a.b": [1, 2], "a.c.d": None}


def test_an_object_only_one_side_has_is_one_difference():
    refused = {"success": False, "notice": None, "data": {"status": "memory_save_failed_limit_exceeded"}}
    assert compare(refused, timed_out=False, bot_result={**refused, "notice": {"title": "Memory saved"}},
                   bot_error=None)[1] == [ShadowDifference(field="notice", worker=None, bot={"title": "Memory saved"})]


def test_another_scope_or_count_or_an_earlier_id_is_a_disagreement_not_a_concurrent_write():
    personal = {**SAVED, "data": {**SAVED["data"], "scope": "target_user", "memory_id": 90}}
    assert compare(SAVED, timed_out=False, bot_result=personal, bot_error=None)[0] == "differed"
    earlier = {**SAVED, "data": {**SAVED["data"], "memory_id": 40}}
    assert compare(SAVED, timed_out=False, bot_result=earlier, bot_error=None)[0] == "differed"
    added = {"success": True, "data": {"status": "added", "memory_id": 5, "memory_ids": [5, 6]}}
    more = {"success": True, "data": {"status": "added", "memory_id": 7, "memory_ids": [7, 8, 9]}}
    assert compare(added, timed_out=False, bot_result=more, bot_error=None)[0] == "differed"
    later = {"success": True, "data": {"status": "added", "memory_id": 7, "memory_ids": [7, 8]}}
    assert compare(added, timed_out=False, bot_result=later, bot_error=None)[0] == "concurrent"
