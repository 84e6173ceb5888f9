import json

import jsonschema
import pytest

from contracts import asyncapi, schema, subjects

DOC = asyncapi.document()


def test_the_document_file_is_current():
    assert asyncapi.PATH.read_text() == asyncapi.render(), "run `make schemas` and commit"


def test_it_is_asyncapi_3_with_every_reference_resolving():
    assert DOC["asyncapi"] == "3.0.0"
    for op_id, op in DOC["operations"].items():
        assert op["action"] in ("send", "receive"), op_id
        for ref in [op["channel"]["$ref"]] + ([op["reply"]["channel"]["$ref"]] if "reply" in op else []):
            assert ref.removeprefix("#/channels/") in DOC["channels"], (op_id, ref)
    for channel in DOC["channels"].values():
        for ref in channel["messages"].values():
            assert ref["$ref"].removeprefix("#/components/messages/") in DOC["components"]["messages"]
        # Every {parameter} in an address is declared, and nothing else is.
        names = {part[1:-1] for part in channel["address"].replace(".", " ").split() if part.startswith("{")}
        assert names == set(channel.get("parameters", {})), channel["address"]


@pytest.mark.parametrize("ref", sorted(asyncapi.referenced_schema_files()))
def test_every_payload_schema_exists_and_is_a_valid_json_schema(ref):
    path = asyncapi.PATH.parent / ref
    assert path.exists(), ref
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))
    assert path in schema.expected_files()


def test_every_subject_of_the_wire_contract_has_a_channel():
    addresses = {c["address"].split(".{")[0] for c in DOC["channels"].values()}
    expected = {f"memory.{kind}" for kind in subjects.COMMAND_KINDS} | {
        "memory.saved", "memory.evicted", "memory.removed", "cache.invalidate", "metrics.memory_eviction",
        "memory.result", "dlq", "{reply_to}"}
    assert expected <= addresses


def test_a_sample_event_validates_against_its_published_schema():
    from contracts.codec import encode
    from contracts.events import MemoryEvictionMetric

    body = json.loads(encode(MemoryEvictionMetric(scope="server", decay_days=30)))
    jsonschema.validate(body, json.loads((asyncapi.PATH.parent / "schema/metrics.memory_eviction.schema.json").read_text()))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"scope": "galaxy", "decay_days": 30},
                            json.loads((asyncapi.PATH.parent / "schema/metrics.memory_eviction.schema.json").read_text()))
