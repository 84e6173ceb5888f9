"""Fixtures of the e2e suite: the bot's database pool, a MemoryClient, a reply inbox.

Every test also requests `e2e_worker` (tests/conftest.py): one real `memoryctl run` process
shared by the suite, with MAX_SERVER_MEMORIES=5, MAX_PERSONAL_MEMORIES=5, 4 partitions and
MAX_DELIVER=3. Tests keep apart by using ids from `bus.unique`.
"""

from __future__ import annotations

import asyncpg
import pytest

from tests.e2e.bus import Inbox
from worker.client.memory_client import MemoryClient


@pytest.fixture(scope="session")
async def bot_db(e2e_database_url):
    pool = await asyncpg.create_pool(e2e_database_url, min_size=1, max_size=5)
    yield pool
    await pool.close()


@pytest.fixture
async def memory(nc, e2e_worker):
    async with MemoryClient(nc, timeout=20.0) as client:
        yield client


@pytest.fixture
async def inbox(nc, e2e_worker):
    box = await Inbox(nc).start()
    yield box
    await box.stop()
