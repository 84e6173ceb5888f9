"""What memoryctl shows of a server's URL: everything but a password or a NATS token."""

from __future__ import annotations

import pytest

from worker.cli.reach import masked


@pytest.mark.parametrize("url, shown", [
    ("nats://op:pw@h:4222", "nats://op:***@h:4222"),
    ("nats://a:b@h1:4222,nats://c:d@h2:4222", "nats://a:***@h1:4222,nats://c:***@h2:4222"),
    ("nats://s3cr3ttoken@h:4222", "nats://***@h:4222"),
    ("tls://op:p%40ss@h", "tls://op:***@h"),
    ("postgresql://me:pa:ss@db:5432/x", "postgresql://me:***@db:5432/x"),
    ("postgresql://me@db/x", "postgresql://me@db/x"),  # a user name alone is no secret
    ("postgresql://db/x?user=me&password=pw&sslmode=require", "postgresql://db/x?user=me&password=***&sslmode=require"),
    ("host=db user=me password=pw dbname=x", "host=db user=me password=*** dbname=x"),
    ("host=db password='p w' dbname=x", "host=db password=*** dbname=x"),
    ("nats://127.0.0.1:4222", "nats://127.0.0.1:4222"),
])
def test_a_password_or_token_is_masked_and_nothing_else(url, shown):
    assert masked(url) == shown
