"""Shadow mode's comparison (worker/kinds/shadow/comparison.py): what agrees, what differs, what compared
nothing, and what is put down to a concurrent write rather than to a rule; and what a pair
keeps: a credential as its kind alone, values and differences bounded."""

from __future__ import annotations

import msgspec

from contracts.codec import encode
from contracts.kinds.shadow import ShadowDifference
from tests.support.secret_corpus import CREDENTIALS
from worker.kinds.shadow.comparison import (
    KEPT_DIFFERENCES_BYTES,
    KEPT_RESULT_BYTES,
    MORE_FIELD,
    compare,
    flatten,
    insert_window,
    kept_differences,
    kept_result,
    withheld,
)

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


def test_another_new_id_is_a_concurrent_write_only_when_an_insert_of_the_owner_came_between():
    bot = {**SAVED, "data": {**SAVED["data"], "memory_id": 42}}
    outcome, found = compare(SAVED, timed_out=False, bot_result=bot, bot_error=None, inserted_between=True)
    assert outcome == "concurrent" and [d.field for d in found] == ["data.memory_id"]
    # A later id alone: the sequence is every guild's, so that tells of nothing of this owner.
    assert compare(SAVED, timed_out=False, bot_result=bot, bot_error=None)[0] == "differed"


def test_the_window_an_insert_must_lie_in_runs_from_the_foreseen_id_to_the_bots_last():
    bot = {**SAVED, "data": {**SAVED["data"], "memory_id": 45}}
    assert insert_window(SAVED, bot) == (41, 45, [45])
    assert insert_window(SAVED, SAVED) is None
    added = {"success": True, "data": {"status": "added", "memory_ids": [5, 6]}}
    assert insert_window(added, {"data": {"status": "added", "memory_ids": [7, 9]}}) == (5, 9, [7, 9])


def test_a_different_id_of_an_existing_memory_is_a_disagreement():
    edited = {"success": True, "data": {"status": "memory_updated_successfully", "memory_id": 7}}
    bot = {"success": True, "data": {"status": "memory_updated_successfully", "memory_id": 8}}
    assert compare(edited, timed_out=False, bot_result=bot, bot_error=None)[0] == "differed"


def test_a_save_against_a_refusal_is_a_disagreement_whatever_the_ids():
    at_cap = {"success": False, "data": {"status": "memory_save_failed_limit_exceeded"}}
    bot = {"success": True, "data": {"status": "memory_saved_successfully", "memory_id": 43}}
    assert compare(at_cap, timed_out=False, bot_result=bot, bot_error=None, inserted_between=True)[0] == "differed"
    assert compare(bot, timed_out=False, bot_result=at_cap, bot_error=None, inserted_between=True)[0] == "differed"


def test_both_saving_under_other_ids_with_other_texts_is_put_down_to_the_concurrent_insert():
    bot = {**SAVED, "message": "Saved, replacing another.", "data": {**SAVED["data"], "memory_id": 45}}
    assert compare(SAVED, timed_out=False, bot_result=bot, bot_error=None, inserted_between=True)[0] == "concurrent"


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
    between = {"timed_out": False, "bot_error": None, "inserted_between": True}
    personal = {**SAVED, "data": {**SAVED["data"], "scope": "target_user", "memory_id": 90}}
    assert compare(SAVED, bot_result=personal, **between)[0] == "differed"
    earlier = {**SAVED, "data": {**SAVED["data"], "memory_id": 40}}
    assert compare(SAVED, bot_result=earlier, **between)[0] == "differed"
    added = {"success": True, "data": {"status": "added", "memory_id": 5, "memory_ids": [5, 6]}}
    more = {"success": True, "data": {"status": "added", "memory_id": 7, "memory_ids": [7, 8, 9]}}
    assert compare(added, bot_result=more, **between)[0] == "differed"
    later = {"success": True, "data": {"status": "added", "memory_id": 7, "memory_ids": [7, 8]}}
    assert compare(added, bot_result=later, **between)[0] == "concurrent"


def test_a_report_that_compares_no_field_is_nothing_compared_never_agreed():
    for empty in ({}, {"data": {}}, {"command_id": "c1", "invalidated": []}, {"notice": {}}):
        assert compare(SAVED, timed_out=False, bot_result=empty, bot_error=None) == ("nothing_compared", []), empty
    # One field compared is a comparison: an empty object against none is a difference.
    assert compare({"data": None}, timed_out=False, bot_result={"data": {}}, bot_error=None)[0] == "differed"


def test_a_credential_is_kept_as_its_kind_alone_key_or_value_at_any_depth():
    credential = CREDENTIALS[0]
    bot = {"success": True, "data": {"status": "memory_saved_successfully", "content_saved": credential.content,
                                     "tags": ["fine", credential.content], credential.secret: 1}}
    kept = encode(withheld(bot)).decode()
    assert credential.secret not in kept and credential.kind in kept
    assert withheld(bot)["data"]["status"] == "memory_saved_successfully"
    assert withheld(f"the bot's database said: {credential.content}") == f"<credential withheld: {credential.kind}>"
    assert withheld({"n": 3, "ok": None, "text": "likes tea"}) == {"n": 3, "ok": None, "text": "likes tea"}


def test_what_a_pair_keeps_is_bounded_with_a_mark():
    big = {"data": {"status": "memory_saved_successfully", "content_saved": "x" * 60_000}}
    assert kept_result(big) == f"<not kept: {len(encode(big))} bytes, more than {KEPT_RESULT_BYTES}>"
    assert kept_result(SAVED) == SAVED
    many = [ShadowDifference(field=f"data.f{i}", worker=None, bot="y" * 3000) for i in range(40)]
    kept = kept_differences(many)
    assert len(encode(kept)) <= KEPT_DIFFERENCES_BYTES + 200
    assert kept[-1].field == MORE_FIELD and kept[-1].bot == f"<not kept: {40 - len(kept) + 1} more differences>"
    (one,) = kept_differences([ShadowDifference(field="data.content_saved", worker="a", bot="z" * 60_000)])
    assert one.worker == "a" and isinstance(one.bot, str) and one.bot.startswith("<not kept: 60002 bytes")
    assert msgspec.json.decode(encode(kept_differences(many[:2]))) == msgspec.json.decode(encode(many[:2]))
