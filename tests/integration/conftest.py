"""Fixtures shared by integration tests."""

from __future__ import annotations

import pytest

from tests.conftest import unique
from worker.embedded import NatsServer


@pytest.fixture(scope="module")
def own_nats(tmp_root):
    """A nats-server for one test module, for tests that need streams nobody else consumes."""
    server = NatsServer(tmp_root / f"nats-{unique()}").start()
    yield server
    server.stop()
