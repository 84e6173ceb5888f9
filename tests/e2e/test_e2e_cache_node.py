"""A cache node in front of the bot's database, with the real worker saving memories
(docs/design.md, sections 3.1, 3.5; issue 5): it never serves a memory list that a committed save made stale,
including when it was offline during the save.

The worker stores `cache.invalidate` in MEMORY_EVENTS before it replies, so once the result is
in, the invalidation is on its way to the node; the test polls the node briefly for it.
"""

from __future__ import annotations

import pytest

from contracts.kinds.create import SAVED
from tests.e2e.bus import create_fields, unique
from tests.e2e.directory import personal_memories, server_memories
from tests.support.directory import add_server, add_user
from tests.support.waiting import wait_until
from worker.client.cache_node import CacheNode

LINEAGE = 21


class CountingLoader:
    """The bot's memory-list read: counts how often it actually went to the database."""

    def __init__(self, read) -> None:
        self.read = read
        self.calls = 0

    async def __call__(self) -> list[str]:
        self.calls += 1
        return [row["content"] for row in await self.read()]


@pytest.fixture
async def node(nc, e2e_worker):
    node = CacheNode(nc, name=unique("e2e-"), poll_seconds=0.5)
    await node.start()
    yield node
    await node.stop(delete_consumer=True)


async def test_a_save_makes_the_node_reload_the_workspace_memory_list(node, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws)
    load = CountingLoader(lambda: server_memories(bot_db, ws))

    assert await node.get_or_load("tomori_state", ws, load) == []
    assert await node.get_or_load("tomori_state", ws, load) == []
    assert load.calls == 1  # served from the cache

    result = await memory.create(create_fields(ws, "the server's motto is 'tea first'", lineage_id=LINEAGE))
    assert result.data.status == SAVED, result
    await wait_until(lambda: not node.contains("tomori_state", ws), timeout=5)

    assert await node.get_or_load("tomori_state", ws, load) == ["the server's motto is 'tea first'"]
    assert load.calls == 2
    assert node.stats.flushes == 0


async def test_a_personal_save_invalidates_only_that_users_entry(node, memory, bot_db):
    ws, dana, other = unique(), unique(), unique()
    await add_server(bot_db, ws)
    await add_user(bot_db, dana)
    dana_load = CountingLoader(lambda: personal_memories(bot_db, dana))
    await node.get_or_load("user", dana, dana_load)
    await node.get_or_load("user", other, CountingLoader(lambda: personal_memories(bot_db, other)))
    await node.get_or_load("tomori_state", ws, CountingLoader(lambda: server_memories(bot_db, ws)))

    result = await memory.create(create_fields(
        ws, "{user} is learning Japanese", scope="target_user", target="Dana", lineage_id=LINEAGE,
        member_matches=[{"id": dana, "display_name": "Dana", "username": "dana"}]))
    assert result.data.status == SAVED, result
    await wait_until(lambda: not node.contains("user", dana), timeout=5)

    assert node.contains("user", other) and node.contains("tomori_state", ws)
    assert await node.get_or_load("user", dana, dana_load) == ["{user} is learning Japanese"]


async def test_a_node_that_was_offline_during_a_save_serves_fresh_data_afterwards(node, memory, bot_db):
    ws, quiet_ws = unique(), unique()
    await add_server(bot_db, ws)
    await add_server(bot_db, quiet_ws)
    load = CountingLoader(lambda: server_memories(bot_db, ws))
    quiet = CountingLoader(lambda: server_memories(bot_db, quiet_ws))
    assert await node.get_or_load("tomori_state", ws, load) == []
    await node.get_or_load("tomori_state", quiet_ws, quiet)
    invalidations, flushes = node.stats.invalidations, node.stats.flushes

    await node.stop()  # offline: the save's invalidation waits in its durable consumer
    result = await memory.create(create_fields(ws, "{user} prefers green tea", lineage_id=LINEAGE))
    assert result.data.status == SAVED, result
    assert node.contains("tomori_state", ws)  # the stale list is still held, but not served:
    assert await node.get_or_load("tomori_state", ws, load) == ["{user} prefers green tea"]

    await node.start()  # applies what it missed before serving from the cache again

    assert await node.get_or_load("tomori_state", ws, load) == ["{user} prefers green tea"]
    # Delivered the missed invalidation (or, when it cannot be sure, flushed everything).
    assert node.stats.invalidations > invalidations or node.stats.flushes > flushes
    if node.stats.flushes == flushes:
        # Nothing was flushed: the untouched workspace is still warm.
        await node.get_or_load("tomori_state", quiet_ws, quiet)
        assert quiet.calls == 1
