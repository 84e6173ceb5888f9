"""worker/services/stored.py's republishes(): which delivery of a command seen before publishes
the events stored with it again. The same stream message that applied the command does (it was
never acknowledged, so its events may never have been stored); any other message with the same
command id does not (its events were stored when the first was acknowledged, perhaps longer ago
than the stream's duplicate window). tests/integration/test_events_with_inbox.py holds the
same rule against real servers."""

from __future__ import annotations

import msgspec

from contracts.kinds.create import CreateMemory
from db.inbox import EventRow, StoredInboxRow
from tests.support.commands import create_bytes, create_fields
from worker.services.stored import republishes, seen_before

EVENT = EventRow("cache.invalidate.tomori_state.42", {"Nats-Msg-Id": "c-1:invalidate"}, msgspec.Raw(b"{}"))


CMD = msgspec.json.decode(create_bytes(create_fields("42"), command_id="c-1", reply_to=None), type=CreateMemory)


def stored(applied_by: int | None) -> StoredInboxRow:
    return StoredInboxRow(command_id="c-1", kind="manual", workspace_id="42", tenant="", event_time="t",
                         status="added", result='{"stored": true}', events=[EVENT], applied_by=applied_by)


def test_the_message_that_applied_the_command_republishes_its_events():
    assert republishes(stored(17), 17)
    assert seen_before(CMD, stored(17), "", 17).events == [EVENT]


def test_another_message_with_the_same_command_id_does_not():
    assert not republishes(stored(17), 18)
    answer = seen_before(CMD, stored(17), "", 18)
    assert answer.events == [] and answer.answer.result == b'{"stored": true}' and answer.duplicate


def test_a_row_without_its_delivery_or_a_caller_without_one_never_republishes():
    # A row stored without the delivery that applied it (a caller without one).
    assert not republishes(stored(None), 17)
    assert not republishes(stored(17), None)
    assert not republishes(stored(None), None)
