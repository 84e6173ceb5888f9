"""How result lookups share the worker (worker/consuming/lookup/scheduling.py): scans held on
a gate the test opens, so every assertion is about order, never time."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.waiting import wait_until
from worker.consuming import metrics
from worker.consuming.lookup.scheduling import LookupLimits, LookupScheduler


class Answers:
    """Plain answers at once; each outcome scan waits for its workspace's gate."""

    def __init__(self) -> None:
        self.scans: list[tuple[str, list[str]]] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.fail: set[str] = set()

    def gate(self, workspace: str) -> asyncio.Event:
        return self.gates.setdefault(workspace, asyncio.Event())

    async def plain(self, workspace: str, command: str) -> bytes:
        return f"plain {workspace} {command}".encode()

    async def outcomes(self, workspace: str, commands: list[str]) -> dict[str, bytes]:
        self.scans.append((workspace, commands))
        await self.gate(workspace).wait()
        self.gate(workspace).clear()
        if workspace in self.fail:
            raise RuntimeError("the stream went away")
        return {command: f"outcome {workspace} {command} scan {len(self.scans)}".encode() for command in commands}


class Heard:
    def __init__(self) -> None:
        self.replies: list[tuple[str, bytes]] = []

    def to(self, asker: str):
        async def respond(reply: bytes) -> None:
            self.replies.append((asker, reply))
        return respond

    def of(self, asker: str) -> list[bytes]:
        return [reply for who, reply in self.replies if who == asker]


async def scans(answers: Answers, count: int) -> None:
    await wait_until(lambda: len(answers.scans) == count, what=f"{count} scans started")


async def replies(heard: Heard, count: int) -> None:
    await wait_until(lambda: len(heard.replies) == count, what=f"{count} replies")


@pytest.fixture
async def scheduling():
    answers, heard = Answers(), Heard()
    scheduler = LookupScheduler(answers.plain, answers.outcomes,
                                LookupLimits(plain_runners=1, plain_waiting=2, scan_runners=1,
                                             workspaces_waiting=3, per_workspace_waiting=3))
    scheduler.start()
    yield scheduler, answers, heard
    await scheduler.aclose()


async def test_a_plain_lookup_is_answered_while_outcome_scans_are_in_flight(scheduling):
    scheduler, answers, heard = scheduling
    scheduler.outcome("s", "A", "a1", heard.to("A"))
    await scans(answers, 1)
    scheduler.plain("s", "B", "b1", heard.to("B"))
    await replies(heard, 1)
    assert heard.replies == [("B", b"plain B b1")]  # A's scan is still held
    answers.gate("A").set()
    await replies(heard, 2)
    assert heard.of("A") == [b"outcome A a1 scan 1"]


async def test_a_workspace_asked_during_its_scan_gets_one_more_scan_for_all_it_asked(scheduling):
    scheduler, answers, heard = scheduling
    scheduler.outcome("s", "A", "a1", heard.to("first"))
    await scans(answers, 1)
    for asker in ("second", "third"):  # identical: they share the next scan's answer
        scheduler.outcome("s", "A", "a1", heard.to(asker))
    scheduler.outcome("s", "A", "a2", heard.to("fourth"))
    answers.gate("A").set()
    await scans(answers, 2)
    answers.gate("A").set()
    await replies(heard, 4)
    assert answers.scans == [("A", ["a1"]), ("A", ["a1", "a2"])]
    assert heard.of("first") == [b"outcome A a1 scan 1"]
    assert heard.of("second") == heard.of("third") == [b"outcome A a1 scan 2"]
    assert heard.of("fourth") == [b"outcome A a2 scan 2"]


async def test_workspaces_take_the_scan_runners_in_turn(scheduling):
    scheduler, answers, heard = scheduling
    scheduler.outcome("s", "A", "a1", heard.to("A"))
    await scans(answers, 1)
    scheduler.outcome("s", "A", "a2", heard.to("A"))  # waits for A's scan to end, then goes to the back
    scheduler.outcome("s", "B", "b1", heard.to("B"))
    scheduler.outcome("s", "C", "c1", heard.to("C"))
    for started, workspace in enumerate(("A", "B", "C"), start=2):
        answers.gate(workspace).set()
        await scans(answers, started)
    assert [workspace for workspace, _ in answers.scans] == ["A", "B", "C", "A"]


async def test_lookups_past_a_limit_are_dropped_and_counted(scheduling):
    scheduler, answers, heard = scheduling
    before = metrics.LOOKUPS_DROPPED._value.get()
    scheduler.outcome("s", "A", "a0", heard.to("A"))  # in its scan, no longer waiting
    await scans(answers, 1)
    for command in ("a1", "a2", "a3", "a4"):  # three may wait for A's next scan
        scheduler.outcome("s", "A", command, heard.to("A"))
    for workspace in ("B", "C", "D"):  # A, B and C may wait; D may not
        scheduler.outcome("s", workspace, "x", heard.to(workspace))
    assert metrics.LOOKUPS_DROPPED._value.get() - before == 2
    for started, workspace in enumerate(("A", "B", "C"), start=2):
        answers.gate(workspace).set()
        await scans(answers, started)
    assert [workspace for workspace, _ in answers.scans] == ["A", "B", "C", "A"]
    assert answers.scans[-1] == ("A", ["a1", "a2", "a3"])
    assert heard.of("D") == []


async def test_plain_lookups_past_the_queue_are_dropped(scheduling):
    scheduler, _, heard = scheduling
    before = metrics.LOOKUPS_DROPPED._value.get()
    for command in ("1", "2", "3"):  # the runner has not taken any yet: two fit
        scheduler.plain("s", "B", command, heard.to("B"))
    assert metrics.LOOKUPS_DROPPED._value.get() - before == 1
    await replies(heard, 2)
    assert heard.of("B") == [b"plain B 1", b"plain B 2"]


async def test_a_failed_scan_leaves_its_askers_unanswered_and_the_runner_running(scheduling):
    scheduler, answers, heard = scheduling
    answers.fail.add("A")
    scheduler.outcome("s", "A", "a1", heard.to("A"))
    await scans(answers, 1)
    answers.gate("A").set()
    scheduler.outcome("s", "B", "b1", heard.to("B"))
    await scans(answers, 2)  # the one runner took B after A failed
    answers.gate("B").set()
    await replies(heard, 1)
    assert heard.replies == [("B", b"outcome B b1 scan 2")]
