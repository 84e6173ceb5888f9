"""The metrics sinks' FastStream handlers on FastStream's in-memory broker (TestNatsBroker), and
the sinks' own AsyncAPI document against the contract's `metrics.memory_eviction` channel.

The in-memory broker's messages settle nowhere, so what a handler does with each one (ack, nak
with a delay, term) is recorded on them here; tests/integration/test_sinks.py runs the same
application on real NATS, where those settlements decide redeliveries.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import msgspec
import pytest
from faststream.middlewares import AckPolicy
from faststream.nats import TestNatsBroker
from faststream.nats.testing import PatchedMessage
from structlog.testing import capture_logs

from contracts import subjects
from worker.sinks.app import SinksConfig, build
from worker.sinks.metrics import InvalidMetric, parse_metric

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = json.loads((ROOT / "contracts" / "asyncapi.json").read_text())
EVICTION = subjects.METRIC_EVICTION_SUBJECT


@pytest.fixture
def settled(monkeypatch) -> list[tuple[str, str, float | None]]:
    """(event id, how, delay) of every settlement a handler makes, in order."""
    done: list[tuple[str, str, float | None]] = []

    def recorder(how: str):
        async def settle(self, delay: float | None = None) -> None:
            done.append(((self.headers or {}).get("Nats-Msg-Id"), how, delay))
        return settle

    for how in ("ack", "nak", "term"):
        monkeypatch.setattr(PatchedMessage, how, recorder(how))
    return done


_SEQ = iter(range(1, 1_000_000))


def delivered_by(sink) -> str:
    """The reply subject JetStream gives a delivery of the sink's consumer: the sinks settle
    only those (contracts/subjects.py, is_ack_subject)."""
    seq = next(_SEQ)
    return f"$JS.ACK.{subjects.EVENTS_STREAM}.{sink.durable}.1.{seq}.{seq}.1700000000000000000.0"


async def publish(broker, payload: dict | bytes, event_id: str, *, reply_to: str, subject: str = EVICTION) -> None:
    data = payload if isinstance(payload, bytes) else msgspec.json.encode(payload)
    await broker.publish(data, subject, headers={"Nats-Msg-Id": event_id}, stream=subjects.EVENTS_STREAM,
                         reply_to=reply_to)


async def test_jsonl_handler_writes_valid_metrics_once_and_sets_the_poison_aside(tmp_path, settled):
    path = tmp_path / "metrics.jsonl"
    sinks = build(SinksConfig(nats_url="nats://unused:4222", jsonl_path=path))
    [sink] = sinks.sinks
    await sink.open()  # the lifespan's part, which the in-memory broker does not run
    try:
        with capture_logs() as logs:
            async with TestNatsBroker(sinks.broker) as broker:
                mine = delivered_by(sink)
                await publish(broker, {"scope": "server", "decay_days": 30}, "e1", reply_to=mine)
                await publish(broker, {"scope": "server", "decay_days": 30, "content": "likes tea"}, "poison",
                              reply_to=delivered_by(sink))
                await publish(broker, b"not json", "junk", reply_to=delivered_by(sink))
                await publish(broker, {"scope": "server", "decay_days": 30}, "e1", reply_to=mine)  # a redelivery
                await publish(broker, {"scope": "personal", "decay_days": 7}, "e2", reply_to=delivered_by(sink))
                # Not delivered by its consumer (issue 35): neither written nor settled, whatever it asks.
                for reply in (f"$JS.API.STREAM.PURGE.{subjects.EVENTS_STREAM}", "trap.x", ""):
                    await publish(broker, {"scope": "server", "decay_days": 1}, "forged", reply_to=reply)
    finally:
        await sink.close()

    lines = [msgspec.json.decode(raw) for raw in path.read_bytes().splitlines()]
    assert [(line["event_id"], line["fields"]) for line in lines] == [
        ("e1", {"scope": "server", "decay_days": 30}), ("e2", {"scope": "personal", "decay_days": 7})]
    # Every message acknowledged exactly once, the poison too: it is logged, not retried, not written.
    assert sorted(settled) == sorted([("e1", "ack", None), ("poison", "ack", None), ("junk", "ack", None),
                                      ("e1", "ack", None), ("e2", "ack", None)])
    assert len([e for e in logs if e["event"] == "metric_sink_foreign_message"]) == 3
    rejected = {e["event_id"]: e["reason"] for e in logs if e["event"] == "metric_rejected"}
    assert set(rejected) == {"poison", "junk"}
    assert "content" in rejected["poison"] and "likes tea" not in repr(logs)


async def test_postgres_handler_naks_with_a_delay_until_its_pool_is_connected(settled):
    sinks = build(SinksConfig(nats_url="nats://unused:4222", database_url="postgresql://unused/db"))
    [sink] = sinks.sinks
    assert sink.pool is None  # the lifespan connects it in the background
    async with TestNatsBroker(sinks.broker) as broker:
        await publish(broker, {"scope": "server", "decay_days": 30}, "e1", reply_to=delivered_by(sink))
    [(event_id, how, delay)] = settled
    assert (event_id, how) == ("e1", "nak") and delay is not None and delay > 0  # back later, not in a loop


def test_each_sink_has_one_batch_subscriber_on_its_durable_settled_by_the_handler():
    sinks = build(SinksConfig(nats_url="nats://unused:4222", database_url="postgresql://unused/db",
                              jsonl_path=Path("unused.jsonl"), consumer_prefix="p"))
    subscribers = sinks.broker.subscribers
    assert len(subscribers) == 2
    durables = set()
    for subscriber in subscribers:
        assert subscriber.subject.broker_address == subjects.METRICS_FILTER
        assert subscriber.pull_sub.batch is True
        assert subscriber.ack_policy is AckPolicy.MANUAL
        assert subscriber.config.filter_subject == subjects.METRICS_FILTER
        durables.add(subscriber.config.durable_name)
    assert durables == {"p-jsonl", "p-postgres"}


def test_no_sink_configured_is_a_clear_error():
    with pytest.raises(ValueError, match="no metrics sink configured"):
        build(SinksConfig(nats_url="nats://unused:4222"))


# --------------------------------------------------------------------------------------------
# The sinks' AsyncAPI document against the contract


def _nats_matches(pattern: str, subject: str) -> bool:
    """NATS subject matching: `*` one token, `>` the rest (one or more tokens)."""
    p, s = pattern.split("."), subject.split(".")
    for i, token in enumerate(p):
        if token == ">":
            return len(s) > i
        if i >= len(s) or (token != "*" and token != s[i]):
            return False
    return len(p) == len(s)


def _ref(doc: dict, ref: str) -> dict:
    node = doc
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _contract_payload() -> tuple[str, dict]:
    [channel] = [c for c in CONTRACT["channels"].values() if c["address"] == EVICTION]
    [message] = channel["messages"].values()
    message = _ref(CONTRACT, message["$ref"])
    ref = message["payload"]["$ref"]
    schema = json.loads((ROOT / "contracts" / ref).read_text())
    return channel["address"], schema


def _sinks_channels() -> list[tuple[str, dict]]:
    sinks = build(SinksConfig(nats_url="nats://unused:4222", database_url="postgresql://unused/db",
                              jsonl_path=Path("unused.jsonl")))
    doc = sinks.app.schema.to_specification().to_jsonable()
    found = []
    for channel in doc["channels"].values():
        for message in channel["messages"].values():
            message = _ref(doc, message["$ref"])
            payload = _ref(doc, message["payload"]["$ref"])
            found.append((channel["address"], payload))
    return found


def test_the_sinks_asyncapi_document_receives_the_contract_s_eviction_metric():
    address, contract = _contract_payload()
    defs = contract["$defs"]["MemoryEvictionMetric"]
    channels = _sinks_channels()
    assert len(channels) == 2  # one receive channel per sink
    for sink_address, payload in channels:
        assert _nats_matches(sink_address, address), (sink_address, address)
        assert payload["type"] == "array"  # a batch of metrics
        item = payload["items"]
        # The same object: the same fields, all required, nothing else, the same types and bounds.
        assert item["required"] == defs["required"] and set(item["properties"]) == set(defs["properties"])
        assert item["additionalProperties"] is False and defs["additionalProperties"] is False
        assert set(item["properties"]["scope"]["enum"]) == set(defs["properties"]["scope"]["enum"])
        for key in ("type", "minimum"):
            assert item["properties"]["decay_days"][key] == defs["properties"]["decay_days"][key]


VALID = [{"scope": "server", "decay_days": 30}, {"scope": "personal", "decay_days": 1}]
INVALID = [{"scope": "server"}, {"scope": "guild", "decay_days": 30}, {"scope": "server", "decay_days": 0},
           {"scope": "server", "decay_days": 30, "memory_id": 4}, {"scope": "server", "decay_days": "30"}, [1]]


@pytest.mark.parametrize("payload", VALID + INVALID, ids=lambda p: re.sub(r"\W+", "_", json.dumps(p)))
def test_the_contract_the_sinks_document_and_the_sinks_validation_agree(payload):
    _, contract = _contract_payload()
    [(_, sink_payload), *_] = _sinks_channels()

    def valid(schema: dict) -> bool:
        try:
            jsonschema.validate(payload, schema)
        except jsonschema.ValidationError:
            return False
        return True

    def accepted() -> bool:
        try:
            parse_metric(EVICTION, msgspec.json.encode(payload))
        except InvalidMetric:
            return False
        return True

    expected = payload in VALID
    assert valid(contract) is expected
    assert valid(sink_payload["items"]) is expected
    assert accepted() is expected


async def test_a_batch_fetch_s_builtin_timeout_reaches_faststream_as_nats_py_s_own():
    """FastStream 0.7.8's batch loop catches only nats.errors.TimeoutError; nats-py 2.16 can end
    a fetch with the builtin one (worker/sinks/startup.py)."""
    import nats.errors

    from worker.sinks import startup

    class Subscription:
        def __init__(self, error: BaseException | None) -> None:
            self.error = error

        async def fetch(self, batch: int, timeout: float | None = None) -> list:
            if self.error is not None:
                raise self.error
            return ["a message"]

    class JetStream:
        def __init__(self, error: BaseException | None) -> None:
            self.error = error

        async def pull_subscribe(self, subject: str, **_: object) -> Subscription:
            return Subscription(self.error)

    for error, expected in ((TimeoutError(), nats.errors.TimeoutError), (nats.errors.TimeoutError(),
                            nats.errors.TimeoutError), (ConnectionResetError(), ConnectionResetError)):
        js = JetStream(error)
        startup.fetch_timeouts_as_nats_timeouts(js)
        subscription = await js.pull_subscribe("metrics.>")
        with pytest.raises(expected):
            await subscription.fetch(64, timeout=0.1)
    js = JetStream(None)
    startup.fetch_timeouts_as_nats_timeouts(js)
    assert await (await js.pull_subscribe("metrics.>")).fetch(1) == ["a message"]
