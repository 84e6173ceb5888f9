"""worker.consuming.intake.lanes without a server: each workspace's commands one at a time in
delivery order, a handed-back command blocking its lane until it comes back, let_go."""

from __future__ import annotations

import asyncio
from collections.abc import Set as AbstractSet
from types import SimpleNamespace

from tests.support.waiting import wait_until
from worker.consuming.intake.lanes import Lanes


def command(workspace: str, seq: int):
    """What the lanes read of a delivery: its subject (the workspace token) and its stream sequence."""
    return SimpleNamespace(subject=f"cmd.0.create.{workspace}", data=str(seq).encode(),
                           metadata=SimpleNamespace(sequence=SimpleNamespace(stream=seq)))


class Hand:
    def __init__(self, hand_back: AbstractSet[int] = frozenset()) -> None:
        self.ran: list[tuple[str, int]] = []
        self.running: dict[str, int] = {}
        self.overlap = False
        self.hand_back = set(hand_back)
        self.forgotten: list[int] = []
        self.tenure = 1
        self.lanes = Lanes(self.handle, tenure=lambda: self.tenure, forget=self.forgotten.append, ack_wait_s=60)

    async def handle(self, msg) -> bool:
        ws = msg.subject.rpartition(".")[2]
        seq = msg.metadata.sequence.stream
        if ws in self.running:
            self.overlap = True
        self.running[ws] = seq
        await asyncio.sleep(0)  # let the other lanes run meanwhile
        del self.running[ws]
        self.ran.append((ws, seq))
        if seq in self.hand_back:
            self.hand_back.discard(seq)
            return True
        return False

    async def idle(self) -> None:
        await wait_until(lambda: not self.lanes.busy, timeout=5, what="lanes idle")


async def test_each_workspace_runs_one_at_a_time_in_delivery_order_and_workspaces_side_by_side():
    hand = Hand()
    for seq, ws in enumerate(["a", "b", "a", "c", "b", "a"], start=1):
        hand.lanes.dispatch(command(ws, seq))
    await hand.idle()
    assert not hand.overlap
    assert [s for w, s in hand.ran if w == "a"] == [1, 3, 6]
    assert [s for w, s in hand.ran if w == "b"] == [2, 5]
    assert sorted(hand.forgotten) == [1, 2, 3, 4, 5, 6]  # each left the hand once settled
    assert hand.lanes.empty  # idle lanes are dropped


async def test_a_handed_back_command_blocks_its_lane_until_it_comes_back():
    hand = Hand(hand_back={1})
    hand.lanes.dispatch(command("a", 1))
    hand.lanes.dispatch(command("a", 2))
    hand.lanes.dispatch(command("b", 3))
    await hand.idle()
    assert hand.ran == [("a", 1), ("b", 3)]  # 2 waits behind the handed-back 1
    assert [m.metadata.sequence.stream for m in hand.lanes.in_hand()] == [2]
    hand.lanes.dispatch(command("a", 1))  # the redelivery
    await hand.idle()
    assert [s for w, s in hand.ran if w == "a"] == [1, 1, 2]


async def test_a_second_delivery_of_a_command_in_hand_is_dropped():
    hand = Hand(hand_back={1})
    hand.lanes.dispatch(command("a", 1))
    await hand.idle()
    hand.lanes.dispatch(command("a", 2))
    hand.lanes.dispatch(command("a", 2))
    assert [m.metadata.sequence.stream for m in hand.lanes.in_hand()] == [2]


async def test_let_go_hands_back_what_waits_and_unblocks_the_lane():
    hand = Hand(hand_back={1})
    hand.lanes.dispatch(command("a", 1))
    await hand.idle()
    hand.lanes.dispatch(command("a", 2))
    given_back: list[int] = []
    hand.tenure = 2
    hand.lanes.let_go(lambda msg: given_back.append(msg.metadata.sequence.stream))
    assert given_back == [2]
    assert 1 in hand.forgotten  # the blocked one comes back to whoever holds the partition
    assert hand.lanes.in_hand() == [] and hand.lanes.empty


async def test_work_of_an_older_tenure_blocks_nothing():
    hand = Hand(hand_back={1})
    started = asyncio.Event()
    release = asyncio.Event()
    handle = hand.handle

    async def slow(msg):
        started.set()
        await release.wait()
        return await handle(msg)

    hand.lanes._handle = slow
    hand.lanes.dispatch(command("a", 1))
    await asyncio.wait_for(started.wait(), 5)
    hand.tenure = 2  # the partition was lost and taken again meanwhile
    release.set()
    await hand.idle()
    hand.lanes._handle = handle
    hand.lanes.dispatch(command("a", 2))
    await hand.idle()
    assert [s for _, s in hand.ran] == [1, 2]
