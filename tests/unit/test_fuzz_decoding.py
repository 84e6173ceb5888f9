"""Property-based fuzzing of the command decoders and of the model's `tool_args` (issue 4; an
update's since issue 37).

Whatever bytes arrive on a command subject, `CommandHandler._decode` answers with a command
or an `Invalid` that says why, and `answerable` (which digs the reply subject out of a broken
command) never raises either: a raise there escapes the handler before it can ack, nak or
dead-letter, so the message would block its partition. For every create that decodes,
`decide_create` answers with a `SavePlan` or a create result the model can read, and nothing
it hands on (result, or the plan's save request for PostgreSQL jsonb) carries a NUL.

Raw fragments (deep nesting, numbers beyond int64 and beyond Python's int-to-str limit,
lone surrogate escapes, invalid UTF-8) are spliced into otherwise valid JSON text, because
`json.dumps` cannot write them.
"""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from contracts import subjects
from contracts.codec import RESULT_DECODER, UPDATE_RESULT_DECODER, encode
from contracts.kinds.create import CREATE_STATUSES, CreateMemory
from contracts.kinds.create import INVALID_ARGS as CREATE_INVALID_ARGS
from contracts.kinds.manual import ManualMemory
from contracts.kinds.update import UPDATE_INVALID_ARGS, UPDATE_STATUSES, UpdateMemory
from contracts.registry import COMMAND_TYPES
from contracts.tool_call import ToolCall
from db.requests import CreateOp
from tests.support.commands import (
    create_fields,
    envelope,
    manual_fields,
    reinforce_fields,
    seed_bio_fields,
    shadow_fields,
    update_fields,
)
from tests.support.fuzz import delete_at, inner_paths, paths, replace_at
from worker.consuming import dead_letters
from worker.consuming.intake.handlers import CommandHandler, Invalid
from worker.consuming.probe import answerable
from worker.domain.content import utf16_length
from worker.domain.context import CreateContext
from worker.domain.notice import NoticeSettings
from worker.domain.people import HostLink, KnownUser, PersonaNamingPreference, ProxyIdentity
from worker.domain.workspace import Limits, Workspace
from worker.kinds.create import texts
from worker.kinds.create.arguments import parse_tool_args
from worker.kinds.create.decision import decide_create
from worker.kinds.create.record import SavePlan
from worker.kinds.create.rendering import render_create
from worker.kinds.manual.context import ManualContext, PanelMemory
from worker.kinds.manual.decision import decide_manual
from worker.kinds.update.arguments import read_update_args
from worker.kinds.update.decision import decide_update
from worker.kinds.update.record import UpdatePlan
from worker.kinds.update.rendering import render_update

FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

KINDS = tuple(COMMAND_TYPES)
WORKSPACE = "500000000000000001"
TOKEN = subjects.encode_token(WORKSPACE)
PREFIXES = ("_INBOX.",)
BOT = "900000000000000001"
ALICE = "100000000000000001"
BOB = "100000000000000002"
PROXY = "pk:0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
MATRIX = "@mx:matrix.org"
LIMITS = Limits(max_memory_length=1000, max_server_memories=50, max_personal_memories=20)
INVALID_CODES = {dead_letters.INVALID_COMMAND, dead_letters.UNSUPPORTED_COMMAND}


def _envelope(command_id: str = "cmd-1") -> dict[str, Any]:
    return envelope(WORKSPACE, command_id=command_id, issued_at="2025-01-01T00:00:00+00:00", reply_to="_INBOX.fuzz.1")


# The create and update bases carry every optional part a bot may send, so mutations reach them.
_TOOL_CALL: dict[str, Any] = dict(
    persona={"id": 3, "lineage_id": 7, "name": "Tomori",
             "naming": {"prefixes": {"neutral": "Sir", "feminine": "Lady"}, "suffixes": {"neutral": "-kun"}}},
    bot_user_id=BOT, triggerer={"id": ALICE, "name": "Alice"},
    channel={"id": "600000000000000001", "is_dm": False, "is_private": False, "everyone_can_view": True, "url": None},
    participants=[
        {"id": ALICE, "kind": "discord", "label": "Alice", "primary_label": "Alice", "aliases": ["Ali"]},
        {"id": MATRIX, "kind": "matrix", "label": "Mx (Matrix)", "aliases": []},
        {"id": PROXY, "kind": "proxy", "label": "Fox", "aliases": ["fox"]},
    ],
    member_matches=[
        {"id": ALICE, "display_name": "Alice", "username": "alice"},
        {"id": BOB, "display_name": "Bob", "global_name": "Robert", "username": "bob"},
    ],
)

BASES: dict[str, dict[str, Any]] = {
    "create": {**_envelope(), **create_fields(
        WORKSPACE, "{user} likes tea", scope="target_user", target="Alice",
        retrieval={"rag_available": True, "embedding_model": "emb", "embedding_credentials": True}, **_TOOL_CALL)},
    "manual": {**_envelope(), **manual_fields(
        actor=ALICE, action="edit", persona_id=3, identity_id=None, memory_id=12, content="likes tea",
        contents=["a", "b"], tags="tea, #general")},
    "reinforce": {**_envelope(), **reinforce_fields([("server", 1), ("personal", 2)])},
    "seed_bio": {**_envelope(), **seed_bio_fields(PROXY, "a fox who likes tea")},
    "shadow": {**_envelope(), **shadow_fields(result={"success": True, "data": {"status": "memory_saved_successfully"}},
                                              timed_out=False, error=None)},
    "update": {**_envelope(), **update_fields(WORKSPACE, 12, "{user} likes green tea", target="Alice", **_TOOL_CALL)},
}


def test_the_base_commands_decode():
    """The fuzzing starts from valid commands, one of every kind: each base payload decodes as is."""
    assert set(BASES) == set(COMMAND_TYPES), "a base payload for every kind of contracts/registry.py"
    for kind, payload in BASES.items():
        decoded = CommandHandler._decode(kind, TOKEN, json.dumps(payload).encode(), PREFIXES)
        assert isinstance(decoded, COMMAND_TYPES[kind]), decoded


# --- raw fragments json.dumps cannot write -----------------------------------------------------

DEEP = 10_000


def nested_lists(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def nested_objects(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


RAW_FRAGMENTS = [
    nested_lists(50), nested_objects(50), nested_lists(200),
    b"1" + b"0" * 30,  # beyond uint64
    b"-" + b"9" * 25,  # below int64
    b"9" * 4300,  # the longest integer Python converts to str
    b"9" * 5000,  # beyond it
    b"1e400", b"-1e400", b"NaN", b"Infinity",
    b'"\\ud800"', b'"a\\udc00b"', b'"\\ud800\\u0041"',  # lone surrogate escapes
    b'"\xed\xa0\x80"',  # a surrogate encoded as UTF-8: invalid UTF-8
    b'"\xff\xfe"', b'"\\u0000"', b'"a\\u0000b"',
    b'"' + b"x" * 70_000 + b'"',
]
SENTINEL = "\x01raw-fragment-{}\x01"


def splice(payload: Any, raws: list[bytes]) -> bytes:
    """json.dumps(payload), with each SENTINEL string replaced by its raw fragment."""
    text = json.dumps(payload).encode()
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(SENTINEL.format(i)).encode(), raw)
    return text


# --- strategies -------------------------------------------------------------------------------

# Text as the JSON encoder sees it: lone surrogates allowed (json.dumps writes them as \\udXXX).
any_text = st.text(max_size=40)
huge_text = st.builds(lambda n, ch: ch * n, st.sampled_from([65, 129, 257, 513, 2_001, 20_001, 40_000]),
                      st.sampled_from(["x", "\u00e9", "\U0001f600", "\x00", " "]))
nul_text = st.builds(lambda a, b: f"{a}\x00{b}", st.text(max_size=10), st.text(max_size=10))
big_numbers = st.sampled_from([2**31, 2**63, 2**64, -(2**63) - 1, 10**30, -(10**40), 1.5e308, -0.0, 1e-320])
json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | any_text | big_numbers
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(any_text, inner, max_size=4), max_leaves=12)
weird_values = st.one_of(json_values, huge_text, nul_text, big_numbers,
                         st.sampled_from(["", " ", "\ud800", "a\udfffb", "\ufeff", "\u2028"]))


@st.composite
def mutated_payloads(draw, kind: str) -> bytes:
    """A valid command of `kind` with a few fields replaced, deleted or added."""
    payload: Any = BASES[kind]
    raws: list[bytes] = []
    for _ in range(draw(st.integers(1, 2))):
        where = draw(st.sampled_from(paths(payload)))
        op = draw(st.sampled_from(["replace", "replace", "raw", "delete", "unknown", "unknown", "unknown"]))
        if op == "replace":
            payload = replace_at(payload, where, draw(weird_values))
        elif op == "raw":
            raws.append(draw(st.sampled_from(RAW_FRAGMENTS)))
            payload = replace_at(payload, where, SENTINEL.format(len(raws) - 1))
        elif op == "delete":
            payload = delete_at(payload, where)
        else:
            # An unknown field next to the chosen one (or at the top), with any value.
            parent = where[:-1] if where and isinstance(where[-1], str) else ()
            target = payload
            for step in parent:
                target = target[step]
            if isinstance(target, dict):
                key = draw(st.sampled_from(["x_unknown", "future_field", "\x00", "\ud800", ""]) | any_text)
                value = draw(weird_values)
                payload = replace_at(payload, parent, {**target, key: value})
    return splice(payload, raws)


@st.composite
def any_kind_payload(draw) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(KINDS))
    return kind, draw(mutated_payloads(kind))


# --- the outcome every decode must have -------------------------------------------------------

def note(label: str) -> None:
    """Count outcomes for --hypothesis-show-statistics (outside hypothesis: nothing)."""
    if currently_in_test_context():
        event(label)


def walk_strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from walk_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk_strings(v)


def holds_infinity(cmd: Any) -> bool:
    def infinite(value: Any) -> bool:
        if isinstance(value, float):
            return math.isinf(value)
        if isinstance(value, dict):
            return any(infinite(v) for v in value.values())
        return isinstance(value, list) and any(infinite(v) for v in value)
    return isinstance(cmd, ToolCall) and infinite(cmd.tool_args)


def assert_no_nul(encoded: bytes) -> None:
    for s in walk_strings(msgspec.json.decode(encoded)):
        assert "\x00" not in s, s[:80]


def check_create_decision(cmd: CreateMemory, ctx: CreateContext, limits: Limits = LIMITS) -> None:
    for notices in NOTICE_SETTINGS:
        decision = decide_create(cmd, parse_tool_args(cmd.tool_args), ctx, limits, notices)
        # What goes to PostgreSQL, stored as the decision (jsonb refuses \u0000).
        assert_no_nul(encode(CreateOp(cmd.command_id, cmd.workspace_id, decision)))
    note(f"plan {decision.scope}" if isinstance(decision, SavePlan) else type(decision).__name__)
    if isinstance(decision, SavePlan):
        assert "\x00" not in decision.content
        assert 0 < utf16_length(decision.content) <= limits.max_memory_length
        assert decision.scope in ("server", "personal")
        return
    result = render_create(cmd.command_id, decision, None)
    assert result.data.status in CREATE_STATUSES, result.data.status
    assert result.command_id == cmd.command_id
    assert not result.success and result.error and result.error.strip()
    assert result.data.reason and result.data.reason.strip()
    encoded = encode(result)
    assert RESULT_DECODER.decode(encoded) == result
    assert_no_nul(encoded)


def check_update_decision(cmd: UpdateMemory, ctx: CreateContext) -> None:
    for notices in NOTICE_SETTINGS:
        decision = decide_update(cmd, read_update_args(cmd.tool_args), ctx, LIMITS, notices)
        assert_no_nul(encode(decision))  # stored as the decision (jsonb refuses \u0000)
    note(f"update plan {decision.scope}" if isinstance(decision, UpdatePlan) else type(decision).__name__)
    if isinstance(decision, UpdatePlan):
        assert decision.content is None or 0 < utf16_length(decision.content) <= LIMITS.max_memory_length
        return
    result = render_update(cmd.command_id, decision, None)
    assert result.data.status in UPDATE_STATUSES and not result.success and result.error and result.data.reason
    encoded = encode(result)
    assert UPDATE_RESULT_DECODER.decode(encoded) == result
    assert_no_nul(encoded)


def check_outcome(kind: str, data: bytes, token: str = TOKEN) -> Any:
    """`_decode` and `answerable` never raise; a decoded command is well-formed and round-trips."""
    decoded = CommandHandler._decode(kind, token, data, PREFIXES)
    command_id, reply_to = answerable(data, PREFIXES)
    assert command_id is None or (isinstance(command_id, str) and command_id)
    assert reply_to is None or (isinstance(reply_to, str) and reply_to.startswith(PREFIXES))
    note("invalid" if isinstance(decoded, Invalid) else f"decoded {kind}")
    if isinstance(decoded, Invalid):
        assert isinstance(decoded.reason, str) and decoded.reason.strip()
        assert decoded.code in INVALID_CODES
        # The refusal is answerable: its text encodes as a result.
        encode(texts.invalid_command(command_id or "", decoded.reason))
        return decoded
    assert kind in COMMAND_TYPES and isinstance(decoded, COMMAND_TYPES[kind]), decoded
    assert subjects.encode_token(decoded.workspace_id) == token
    assert decoded.reply_to is None or decoded.reply_to.startswith(PREFIXES)
    # Every typed string field refuses NUL at decoding (PostgreSQL text cannot hold it); only
    # the loose tool_args may carry one, for parse_tool_args to refuse as invalid_args.
    assert_no_nul(encode(msgspec.structs.replace(decoded, tool_args=None) if isinstance(decoded, ToolCall)
                         else decoded))
    # JSON has no Infinity (a number beyond a double is read as one): such tool_args cannot
    # go back to JSON as they came, and nothing the worker writes carries them.
    round_trip = msgspec.structs.replace(decoded, tool_args=None) if holds_infinity(decoded) else decoded
    assert msgspec.json.decode(encode(round_trip), type=COMMAND_TYPES[kind]) == round_trip
    if isinstance(decoded, CreateMemory):
        check_create_decision(decoded, CreateContext())
        check_create_decision(decoded, FULL_CONTEXT)
    if isinstance(decoded, UpdateMemory):
        check_update_decision(decoded, CreateContext())
        check_update_decision(decoded, FULL_CONTEXT)
    if isinstance(decoded, ManualMemory):
        for ctx in MANUAL_CONTEXTS:
            decide_manual(decoded, ctx, LIMITS)
    return decoded


NOTICE_SETTINGS = (NoticeSettings(),
                   NoticeSettings(verbosity="verbose", thought_log_channel_id="700000000000000001"))
FULL_CONTEXT = CreateContext(
    workspace=Workspace(server_id=1, memory_decay_enabled=True),
    users={ALICE: KnownUser(11, ALICE, "Ali"),
           BOB: KnownUser(12, BOB, None, privacy_level=1, persona_naming=PersonaNamingPreference("Bobby")),
           PROXY: KnownUser(13, PROXY)},
    proxies={PROXY: ProxyIdentity(13, PROXY, (HostLink(ALICE),))},
)
MANUAL_CONTEXTS = (
    ManualContext(),
    ManualContext(count=50, target=PanelMemory(12, 7, "likes tea", ("tea",), True, ALICE),
                  existing_contents=("a", "likes tea")),
    ManualContext(workspace=Workspace(self_teaching_enabled=False), actor_blacklisted=True, actor_privacy_level=2),
)


# --- properties -------------------------------------------------------------------------------

@FUZZ
@given(kind=st.sampled_from(KINDS + ("bogus",)), data=st.binary(max_size=300),
       token=st.sampled_from([TOKEN, "other", "%C3%A9"]))
def test_random_bytes_never_raise(kind, data, token):
    check_outcome(kind, data, token)


@FUZZ
@given(kind=st.sampled_from(KINDS), value=json_values)
def test_random_json_values_never_raise(kind, value):
    decoded = check_outcome(kind, json.dumps(value).encode())
    assert isinstance(decoded, Invalid)  # nothing random is a whole valid command


@FUZZ
@given(kind_and_data=any_kind_payload())
def test_mutated_commands_decode_or_are_refused_with_a_reason(kind_and_data):
    kind, data = kind_and_data
    check_outcome(kind, data)


@FUZZ
@given(kind=st.sampled_from(KINDS), data=st.data())
def test_mutated_commands_on_the_wrong_kind_are_refused(kind, data):
    """A command published under another kind's subject decodes as that kind or is refused."""
    other = data.draw(st.sampled_from([k for k in KINDS if k != kind]))
    check_outcome(kind, data.draw(mutated_payloads(other)))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fragment", RAW_FRAGMENTS, ids=lambda f: f[:12].decode("latin-1"))
def test_every_raw_fragment_in_every_place(kind, fragment):
    """Each raw fragment as the value of every field (and as an unknown field) of every kind."""
    base = BASES[kind]
    for where in paths(base):
        check_outcome(kind, splice(replace_at(base, where, SENTINEL.format(0)), [fragment]))
    check_outcome(kind, splice({**base, "x_unknown": SENTINEL.format(0)}, [fragment]))


@pytest.mark.parametrize("value, field", [
    ("x" * 129, "command_id"), ("x" * 65, "workspace_id"), ("x" * 257, "reply_to"), ("a\x00b", "command_id"),
    (2**31, "persona"), ("x" * 513, "persona"), (-1, "persona"),
])
def test_over_the_bounds_is_refused_naming_the_field(value, field):
    payload = dict(BASES["create"])
    if field == "persona":
        payload["persona"] = {**payload["persona"], "name" if isinstance(value, str) else "id": value}
    else:
        payload[field] = value
    decoded = check_outcome("create", json.dumps(payload).encode(), TOKEN)
    assert isinstance(decoded, Invalid)
    assert field in decoded.reason, decoded.reason


# --- every command a bot can frame is answered --------------------------------------------------

# What JSON allows (or JSON.stringify writes) that msgspec alone refuses the whole document for:
# read as JavaScript reads it (contracts/decoding.py), so neither the command nor the probe of
# a refused one is left without a reading, and the bot always hears back.
FRAMED = [
    b"1e400", b"-1e400", b"1e-400", b"123456789012345678901234567890", b"1" + b"0" * 5000, b"-" + b"9" * 4301,
    b'"\\ud800"', b'"a\\udc00b"', b'"\\ud83d"', b'"\\\\\\ud800"', b'"\\ud83d\\ude00"', b'{"k\\ud800": [1e400]}',
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fragment", FRAMED, ids=lambda f: f[:14].decode())
def test_every_command_a_bot_can_frame_is_answered(kind, fragment):
    """Each value in every field (and an unknown one) but reply_to itself: the command is run,
    or refused with an answer on its reply subject."""
    base = BASES[kind]
    commands = [replace_at(base, where, SENTINEL.format(0)) for where in inner_paths(base) if where != ("reply_to",)]
    for payload in commands + [{**base, "x_unknown": SENTINEL.format(0)}]:
        data = splice(payload, [fragment])
        decoded = check_outcome(kind, data)
        if isinstance(decoded, Invalid):
            assert answerable(data, PREFIXES)[1] == base["reply_to"], (data[:200], decoded.reason)


@pytest.mark.parametrize("fragment", [b"1e400", b"-1e400", b"123456789012345678901234567890", b"1" + b"0" * 5000],
                         ids=lambda f: f[:14].decode())
@pytest.mark.parametrize(("kind", "parameter"), [
    ("create", "memory_content"), ("create", "memory_scope"), ("create", "target_user"),
    ("create", "target_user_discord_id"), ("update", "memory_id"), ("update", "memory_content"),
    ("update", "target_user"), ("update", "target_user_nickname"),
])
def test_any_number_in_a_tool_argument_is_the_kinds_invalid_args(kind, parameter, fragment):
    """A model's argument holding a number JSON allows, however large, is its bad argument:
    answered with the kind's invalid-args words naming it, never a refused command."""
    args = {k: v for k, v in BASES[kind]["tool_args"].items() if k != "target_user"}  # legacy names read only then
    data = splice({**BASES[kind], "tool_args": {**args, parameter: SENTINEL.format(0)}}, [fragment])
    decoded = check_outcome(kind, data)
    if isinstance(decoded, CreateMemory):
        decision = decide_create(decoded, parse_tool_args(decoded.tool_args), FULL_CONTEXT, LIMITS, NoticeSettings())
        created = render_create(decoded.command_id, decision, None)
        assert (created.data.status, created.success) == (CREATE_INVALID_ARGS, False), created
        assert parameter in created.error, created.error
    else:
        assert isinstance(decoded, UpdateMemory), decoded
        decided = decide_update(decoded, read_update_args(decoded.tool_args), FULL_CONTEXT, LIMITS, NoticeSettings())
        updated = render_update(decoded.command_id, decided, None)
        assert (updated.data.status, updated.success) == (UPDATE_INVALID_ARGS, False), updated
        assert parameter in updated.error, updated.error


# Deep nesting: msgspec raises RecursionError (neither DecodeError nor ValidationError) past
# ~1000 levels minus the caller's stack depth, wherever it has to descend: in the loose
# `tool_args` (Any), in any unknown field (skipped recursively), and in `answerable`'s Any fields
# and skipped fields, i.e. anywhere in the payload. `_decode` and `answerable` let it escape, so
# in the worker CommandHandler.__call__ (or _reject_invalid, whose answerable call sits outside
# its try) raises before it can ack, nak or dead-letter: the message is redelivered every
# ack_wait, forever, and its workspace is blocked. 10,000 nested lists are
# a 20 KB payload, well under the 64 KiB limit.

# Where msgspec must descend into the nesting (Any or skipped) and where a typed field stops it.
DEEP_DESCENDS = [("create", "tool_args"), ("create", "x_unknown"), ("manual", "x_unknown"),
                 ("reinforce", "x_unknown"), ("seed_bio", "x_unknown")]
DEEP_TYPED = [("manual", "content"), ("reinforce", "memories"), ("seed_bio", "bio"), ("create", "command_id"),
              ("create", "reply_to")]


def deep_payload(kind: str, field: str, nest) -> bytes:
    return splice({**BASES[kind], field: SENTINEL.format(0)}, [nest(DEEP)])


@pytest.mark.parametrize("nest", [nested_lists, nested_objects], ids=["lists", "objects"])
@pytest.mark.parametrize("kind, field", [pytest.param(*p, id=".".join(p)) for p in DEEP_DESCENDS]
                         + [pytest.param(*p, id=".".join(p)) for p in DEEP_TYPED])
def test_deep_nesting_is_refused_not_raised_by_decode(kind, field, nest):
    decoded = CommandHandler._decode(kind, TOKEN, deep_payload(kind, field, nest), PREFIXES)
    assert isinstance(decoded, Invalid) and decoded.reason


@pytest.mark.parametrize("nest", [nested_lists, nested_objects], ids=["lists", "objects"])
@pytest.mark.parametrize("kind, field", [pytest.param(*p, id=".".join(p)) for p in DEEP_DESCENDS + DEEP_TYPED])
def test_deep_nesting_does_not_hide_where_to_answer(kind, field, nest):
    """However deep a member nests, the refusal still finds the command's id and reply subject
    (unless the nesting is in place of one of them)."""
    command_id, reply_to = answerable(deep_payload(kind, field, nest), PREFIXES)
    assert command_id == (None if field == "command_id" else "cmd-1")
    assert reply_to == (None if field == "reply_to" else "_INBOX.fuzz.1")


# --- decide_create over arbitrary tool_args ---------------------------------------------------

# After decoding, strings hold no lone surrogates and integers have at most 4300 digits.
decoded_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
decoded_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                   | decoded_text
                   | st.sampled_from([2**63, -(2**64), 10**4299, -(10**4299), 1.7976931348623157e308]))
decoded_json = st.recursive(
    decoded_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(decoded_text, inner, max_size=4),
    max_leaves=15,
)
decoded_huge = st.builds(lambda n, ch: ch * n, st.sampled_from([999, 1000, 1001, 5_000, 60_000]),
                         st.sampled_from(["x", "\u00e9", "\U0001f600", " ", "\x00", "{x}"]))
decoded_nul = st.builds(lambda a, b: f"{a}\x00{b}", decoded_text, decoded_text)
names = st.sampled_from(["Alice", "alice", "@Alice", " ALICE ", "Ali", "Bob", "Bobby", "Robert", "bob", "self",
                         "@self", BOT, ALICE, BOB, f"<@{ALICE}>", f"<@!{BOB}>", MATRIX, PROXY, PROXY.upper(),
                         "pb:123", "Fox", "fox", "Mx (Matrix)", "nobody", "", "   "])
plausible = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=60)
special_contents = st.sampled_from([
    "{user} likes {{tea}}", "{{{x}}}", "{bot} and {CHAR} and {Foo_1}", "   ", "\t\n", "\U0001f600" * 500,
    "\U0001f600" * 501, "x" * 1000 + "   ", "x" * 1001, "{x}" * 400, "\u200b", "\x00",
])


def weighted(*choices: tuple[int, st.SearchStrategy]) -> st.SearchStrategy:
    """Pick a strategy with these relative weights, then draw from it."""
    return st.sampled_from([strategy for weight, strategy in choices for _ in range(weight)]).flatmap(lambda s: s)


# Weighted towards what a model really sends, so every stage of the decision is reached.
contents = weighted((12, plausible), (3, special_contents), (1, decoded_huge), (1, decoded_nul), (1, decoded_json))
scopes = weighted((12, st.sampled_from(["server_wide", "target_user"])),
                  (1, st.sampled_from(["Server_Wide", "personal", "", "server_wide "])), (1, decoded_nul),
                  (1, decoded_huge), (1, decoded_json))
targets = weighted((12, names), (2, decoded_text), (1, decoded_nul), (1, decoded_huge), (1, decoded_json),
                   (1, st.integers(min_value=10**16, max_value=10**20)))


@st.composite
def tool_arguments(draw) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(decoded_json)  # anything at all
    args: dict[str, Any] = {}
    for key, values, percent in (("memory_content", contents, 95), ("memory_scope", scopes, 90),
                                 ("target_user", targets, 80), ("target_user_nickname", targets, 20),
                                 ("target_user_discord_id", targets, 20)):
        if draw(st.integers(0, 99)) < percent:
            args[key] = draw(values)
    args.update(draw(st.dictionaries(decoded_text, decoded_json, max_size=2)))
    return args


base_create = msgspec.json.decode(json.dumps(BASES["create"]).encode(), type=CreateMemory)

contexts = st.builds(
    lambda teach, personal, decay, privacy, hosts, lineage_known: CreateContext(
        workspace=Workspace(server_id=1, self_teaching_enabled=teach, personal_memories_enabled=personal,
                            memory_decay_enabled=decay),
        users={ALICE: KnownUser(11, ALICE, "Ali", privacy, prefix_override="Sir"),
               BOB: KnownUser(12, BOB, "Bobby", persona_naming=PersonaNamingPreference("Bobby", suffix="-kun")),
               PROXY: KnownUser(13, PROXY)} if lineage_known else {},
        proxies={PROXY: ProxyIdentity(13, PROXY, hosts)},
    ),
    st.sampled_from([True] * 5 + [False]), st.sampled_from([True] * 3 + [False]), st.booleans(),
    st.sampled_from([0, 0, 0, 1, 2, 7]),
    st.sampled_from([(), (HostLink(ALICE),), (HostLink(ALICE, 2),), (HostLink(BOB, 0, True),)]),
    st.sampled_from([True] * 3 + [False]),
)


@FUZZ
@given(tool_args=tool_arguments(), ctx=contexts, lineage=st.sampled_from([7] * 5 + [0]),
       is_dm=st.sampled_from([False] * 3 + [True]), max_len=st.sampled_from([1000] * 3 + [1, 10]))
def test_decide_create_answers_every_tool_args(tool_args, ctx, lineage, is_dm, max_len):
    cmd = msgspec.structs.replace(
        base_create, tool_args=tool_args,
        persona=msgspec.structs.replace(base_create.persona, lineage_id=lineage),
        channel=msgspec.structs.replace(base_create.channel, is_dm=is_dm),
    )
    check_create_decision(cmd, ctx, Limits(max_memory_length=max_len))


@FUZZ
@given(tool_args=tool_arguments())
def test_tool_args_survive_the_wire(tool_args):
    """The same tool_args after a trip through JSON: the worker's decoder, then the decision."""
    payload = {**BASES["create"], "tool_args": tool_args}
    check_outcome("create", msgspec.json.encode(payload))


@pytest.mark.parametrize("tool_args", [
    {"memory_content": "a\x00b", "memory_scope": "server_wide"},
    {"memory_content": "fact", "memory_scope": "target_user", "target_user": "Al\x00ice"},
    {"memory_content": "fact", "memory_scope": "target_user", "target_user_discord_id": 10**4299},
    {"memory_content": "fact", "memory_scope": "a\x00" * 100},
])
def test_nul_and_absurd_arguments_are_invalid_args_without_a_nul(tool_args):
    cmd = msgspec.structs.replace(base_create, tool_args=tool_args)
    decision = decide_create(cmd, parse_tool_args(cmd.tool_args), FULL_CONTEXT, LIMITS, NoticeSettings())
    assert not isinstance(decision, SavePlan)
    result = render_create(cmd.command_id, decision, None)
    assert result.data.status in ("memory_save_failed_invalid_args", "memory_save_failed_user_not_found")
    assert_no_nul(encode(decision))
    assert_no_nul(encode(result))
