"""The published contract (contracts/asyncapi.json and contracts/schema/) is current and says
what the code does. @asyncapi/parser, Ajv and the TypeScript declarations are checked with
Node in tests/e2e/test_e2e_interop.py."""

import json
from typing import get_args

import jsonschema
import pytest

from contracts import asyncapi, result_parts, schema, subjects
from contracts.codec import encode
from contracts.events import MemoryEvictionMetric
from contracts.kinds import create, manual, reinforce, seed_bio, update
from contracts.op_result import OpStatus
from contracts.registry import COMMAND_KINDS
from worker.consuming.administration import streams
from worker.shared.settings import DEFAULT_REPLY_PREFIXES

DOC = asyncapi.document()
SCHEMA_DIR = asyncapi.PATH.parent / "schema"


def load(name: str) -> dict:
    return json.loads((SCHEMA_DIR / schema.file_name(name)).read_text())


def test_the_document_file_is_current():
    assert asyncapi.PATH.read_text() == asyncapi.render(), "run `make schemas` and commit"


def test_it_is_asyncapi_3_1_with_every_reference_resolving():
    assert DOC["asyncapi"] == "3.1.0"
    for op_id, op in DOC["operations"].items():
        assert op["action"] in ("send", "receive"), op_id
        for ref in [op["channel"]["$ref"]] + ([op["reply"]["channel"]["$ref"]] if "reply" in op else []):
            assert ref.removeprefix("#/channels/") in DOC["channels"], (op_id, ref)
    for channel in DOC["channels"].values():
        for ref in channel["messages"].values():
            assert ref["$ref"].removeprefix("#/components/messages/") in DOC["components"]["messages"]
        # Every {parameter} in an address is declared, and nothing else is.
        address = channel["address"] or ""
        names = {part[1:-1] for part in address.replace(".", " ").split() if part.startswith("{")}
        assert names == set(channel.get("parameters", {})), address


def test_the_worker_receives_commands_and_lookups_and_sends_everything_else():
    actions = {op["channel"]["$ref"].removeprefix("#/channels/"): op["action"] for op in DOC["operations"].values()}
    received = {c for c, a in actions.items() if a == "receive"}
    assert received == {asyncapi.command_channel(kind) for kind in COMMAND_KINDS} | {"resultLookup"}
    assert {"memoryCreate", "memoryManual", "memoryReinforce", "memorySeedBio"} <= received  # the names bots know
    # Every command names the reply it gets, at the address its payload's reply_to gives.
    for kind in COMMAND_KINDS:
        op = DOC["operations"][asyncapi.receive_operation(kind)]
        assert op["channel"]["$ref"] == f"#/channels/{asyncapi.command_channel(kind)}"
        assert op["reply"]["address"]["location"] == "$message.payload#/reply_to"
    # The lookup is request/reply: its answer is the reply, never a message the worker receives.
    lookup = DOC["operations"]["answerResultLookup"]
    reply = DOC["channels"][lookup["reply"]["channel"]["$ref"].removeprefix("#/channels/")]
    assert set(reply["messages"]) == {"StoredResult", "CommandOutcome"} and reply["address"] is None


def test_every_subject_of_the_wire_contract_has_a_channel():
    addresses = {c["address"].split(".{")[0] for c in DOC["channels"].values() if c["address"]}
    expected = {f"memory.{kind}" for kind in COMMAND_KINDS} | {
        "memory.saved", "memory.evicted", "memory.removed", "memory.updated", "cache.invalidate",
        "metrics.memory_eviction", "memory.result", "dlq"}
    assert expected == addresses


def test_headers_are_declared_where_the_worker_reads_or_sets_them():
    messages = DOC["components"]["messages"]
    assert "Nats-Msg-Id" in messages["CreateMemory"]["headers"]["properties"]
    for event in ("MemorySaved", "MemoryEvicted", "MemoryRemoved", "MemoryUpdated", "CacheInvalidate",
                  "MemoryEvictionMetric"):
        assert messages[event]["headers"]["required"] == ["Nats-Msg-Id"]
    dlq = messages["DeadLetter"]["headers"]
    assert {"Dlq-Reason", "Dlq-Error", "Dlq-Deliveries", "Dlq-Original-Subject", "Dlq-First-Failed-At"} <= set(
        dlq["required"])


def test_the_nats_facts_match_the_code():
    facts = DOC["x-nats"]
    assert facts["duplicateWindowSeconds"] == streams.DUPLICATE_WINDOW_S
    assert facts["replySubjectPrefixes"]["default"] == list(DEFAULT_REPLY_PREFIXES)
    stated = {name: sorted(s["subjects"]) for name, s in facts["streams"].items()}
    assert stated[subjects.COMMANDS_STREAM] == sorted(streams.command_stream(4).subjects)
    assert stated[subjects.EVENTS_STREAM] == sorted(streams.events_stream().subjects)
    assert stated[subjects.DLQ_STREAM] == sorted(streams.dlq_stream().subjects)


@pytest.mark.parametrize("ref", sorted(asyncapi.referenced_schema_files()))
def test_every_payload_schema_exists_and_is_a_valid_2020_12_schema(ref):
    path = asyncapi.PATH.parent / ref
    assert path in schema.expected_files(), ref
    body = json.loads(path.read_text())
    assert body["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert body["$id"].startswith(schema.ID_PREFIX)
    jsonschema.Draft202012Validator.check_schema(body)


# Keywords that mean the same in draft-07 (the AsyncAPI Schema) and 2020-12, so the parser's
# reading of a payload and Ajv2020's agree.
SHARED_KEYWORDS = {"$schema", "$id", "$ref", "$defs", "type", "properties", "required", "items", "enum",
                   "anyOf", "oneOf", "additionalProperties", "minimum", "maximum", "minLength", "maxLength",
                   "maxItems", "pattern", "format", "title", "description", "default", "allOf", "if", "then"}


def _keywords(node, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            out.add(key)
            if key in ("properties", "$defs"):
                for sub in value.values():
                    _keywords(sub, out)
            elif key not in ("enum", "default", "required"):
                _keywords(value, out)
    elif isinstance(node, list):
        for item in node:
            _keywords(item, out)
    return out


@pytest.mark.parametrize("name", sorted(schema.schemas()))
def test_schemas_use_only_keywords_draft_07_reads_alike(name):
    assert _keywords(load(name), set()) <= SHARED_KEYWORDS


def test_issued_at_and_occurred_at_are_date_times():
    create = load("memory.create")["$defs"]["CreateMemory"]["properties"]
    assert create["issued_at"]["format"] == "date-time"
    assert load("memory.saved")["$defs"]["MemorySaved"]["properties"]["occurred_at"]["format"] == "date-time"


def test_status_enums_are_the_statuses_of_each_command_kind():
    def enum(name: str, data: str) -> set[str]:
        return set(load(name)["$defs"][data]["properties"]["status"]["enum"])

    assert enum("result", "ResultData") == set(create.CREATE_STATUSES) | {result_parts.COMMAND_INVALID}
    assert enum("result.update", "UpdateData") == set(update.UPDATE_STATUSES)
    assert enum("result.manual", "ManualData") == set(get_args(manual.ManualStatus))
    assert enum("result.reinforce", "ReinforceData") == {reinforce.REINFORCED, result_parts.FAILED}
    assert enum("result.seed_bio", "SeedBioData") == {seed_bio.SEEDED, seed_bio.SKIPPED, result_parts.FAILED}
    assert enum("result.op", "OpData") == set(get_args(OpStatus))
    assert {manual.ADDED, manual.BATCH_LIMIT_REACHED, manual.TEACHING_DISABLED, result_parts.FAILED} <= set(
        get_args(OpStatus))


# A kind's statuses are declared once, as its Literal; a named constant only names one of them.
_STATUSES_BY_MODULE = {
    create: set(get_args(create.CreateStatus)),
    update: set(update.UPDATE_STATUSES),
    manual: set(get_args(manual.ManualStatus)),
    reinforce: set(get_args(reinforce.ReinforceStatus)),
    seed_bio: set(get_args(seed_bio.SeedBioStatus)),
    result_parts: {result_parts.COMMAND_INVALID, result_parts.FAILED},
}


@pytest.mark.parametrize("module", list(_STATUSES_BY_MODULE), ids=lambda m: m.__name__)
def test_every_status_constant_names_a_status_of_its_own_kind(module):
    declared = vars(module).get("__annotations__", {})  # the module's own constants, not its imports
    constants = {k: v for k, v in vars(module).items() if k.isupper() and isinstance(v, str) and k in declared}
    assert constants, module.__name__
    assert {k: v for k, v in constants.items() if v not in _STATUSES_BY_MODULE[module]} == {}


def test_the_create_the_update_and_the_other_kinds_share_no_status():
    # The lookup's oneOf tells a stored result's kind by its status alone.
    tool_create = set(create.CREATE_STATUSES)
    tool_update = set(update.UPDATE_STATUSES)
    others = set(get_args(OpStatus))
    assert not (tool_create & tool_update or tool_create & others or tool_update & others)
    assert result_parts.COMMAND_INVALID not in tool_create | tool_update | others


def _create_result() -> dict:
    return {"command_id": "c-1", "success": True, "message": "Memory saved successfully", "error": None,
            "data": {"status": "memory_saved_successfully", "scope": "server_wide", "memory_id": 1,
                     "content_saved": "x", "content_forgotten": None, "reason": None},
            "invalidated": [{"cache": "tomori_state", "key": "1"}], "notice": None}


def _op_result() -> dict:
    return {"command_id": "c-2", "success": True, "error": None, "data": {"status": "added", "memory_id": 3},
            "invalidated": []}


def _update_result() -> dict:
    return {"command_id": "c-3", "success": True, "message": "Server memory deleted successfully", "error": None,
            "data": {"status": "memory_deleted_successfully", "scope": "server_wide", "memory_id": 4,
                     "content_deleted": "x", "reason": None},
            "invalidated": [{"cache": "tomori_state", "key": "1"}], "notice": None}


@pytest.mark.parametrize("body", [_create_result(), _op_result(), _update_result(), None])
def test_the_lookup_answer_validates_with_exactly_one_branch(body):
    # oneOf: a create result must not also pass as an op result, or no create result validates.
    jsonschema.validate(body, load("lookup.result"), format_checker=jsonschema.FormatChecker())
    outcome = {"command_id": "c", "workspace_id": "w", "outcome": "processed", "kind": "create", "result": body}
    if body is not None:
        jsonschema.validate(outcome, load("lookup.outcome"))
        with pytest.raises(jsonschema.ValidationError):  # processed says what it processed
            jsonschema.validate({k: v for k, v in outcome.items() if k != "result"}, load("lookup.outcome"))


def test_a_dead_lettered_outcome_must_say_why():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"command_id": "c", "workspace_id": "w", "outcome": "dead_lettered"}, load("lookup.outcome"))


def test_the_eviction_metric_admits_exactly_its_two_fields():
    metric = load("metrics.memory_eviction")
    jsonschema.validate(json.loads(encode(MemoryEvictionMetric(scope="server", decay_days=30))), metric)
    for bad in ({"scope": "galaxy", "decay_days": 30}, {"scope": "server", "decay_days": 30, "command_id": "c"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, metric)


def test_the_reply_to_rule_is_in_the_schema():
    reply_to = load("envelope")["$defs"]["Envelope"]["properties"]["reply_to"]["anyOf"][0]
    assert "REPLY_SUBJECT_PREFIXES" in reply_to["description"]
