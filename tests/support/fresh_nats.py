"""A nats-server of its own for each test, and a client of it: for tests of the command
stream's own settings and consumers, which are durable and shared by name.
A test module takes them with `server, nc = fresh_nats.server, fresh_nats.nc`."""

from __future__ import annotations

import nats
import pytest

from tests.conftest import unique
from worker.local.embedded import NatsServer


@pytest.fixture
async def server(tmp_root):
    server = NatsServer(tmp_root / f"nats-{unique()}").start()
    yield server
    server.stop()


@pytest.fixture
async def nc(server):
    client = await nats.connect(server.url)
    yield client
    await client.close()
