"""worker.shared.jetstream: the hand-written JetStream API requests, read as the server reads them."""

from __future__ import annotations

import json
from types import SimpleNamespace

from worker.shared import jetstream


def test_the_api_prefix_honours_a_jetstream_domain_as_nats_py_does():
    import nats.js

    assert jetstream.api_prefix() == "$JS.API" == nats.js.api.DEFAULT_PREFIX
    assert jetstream.api_prefix("hub") == "$JS.hub.API"
    assert jetstream.next_subject(jetstream.api_prefix("hub"), "MEMORY_EVENTS", "cache-node-a") == \
        "$JS.hub.API.CONSUMER.MSG.NEXT.MEMORY_EVENTS.cache-node-a"


def test_a_pull_request_names_its_group_and_pin_only_when_given():
    assert json.loads(jetstream.pull_request(8)) == {"batch": 8}
    assert json.loads(jetstream.pull_request(8, expires_s=1.0, no_wait=True)) == \
        {"batch": 8, "expires": 1_000_000_000, "no_wait": True}
    assert json.loads(jetstream.pull_request(4, expires_s=1.0, group="partition", pin="abc")) == \
        {"batch": 4, "expires": 1_000_000_000, "group": "partition", "id": "abc"}


def test_a_priority_consumer_request_is_a_pinned_client_group():
    body = json.loads(jetstream.priority_consumer_request("S", {"durable_name": "p0"}, group="g", timeout_s=2))
    assert body == {"stream_name": "S", "config": {"durable_name": "p0", "priority_groups": ["g"],
                                                   "priority_policy": "pinned_client",
                                                   "priority_timeout": 2_000_000_000}}


def test_pull_status_tells_a_status_from_a_delivery():
    delivery = SimpleNamespace(reply="$JS.ACK.x", headers={"Nats-Msg-Id": "e1"})
    assert jetstream.pull_status(delivery) is None
    assert jetstream.pull_status(SimpleNamespace(reply="", headers={"Status": "423"})) == jetstream.PINNED_ELSEWHERE
    assert jetstream.pull_status(SimpleNamespace(reply="", headers=None)) == ""
