"""The whole `memory.create` decision, and the results rendered from it and from what the save
learned under the lock (worker/domain/create_result.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from contracts import results as codes
from contracts.commands import Channel, CreateMemory, MemberMatch, Participant, Persona, Retrieval
from contracts.results import CacheKey, CommandResult
from worker.domain import messages
from worker.domain.arguments import parse_tool_args
from worker.domain.create import decide_create
from worker.domain.create_decision import SaveFacts, SavePlan
from worker.domain.create_result import render_create, save_notice
from worker.domain.model import CreateContext, HostLink, KnownUser, Limits, ProxyIdentity, SaveOutcome, Workspace
from worker.domain.notice import NoticeSettings, route_notice
from worker.domain.proxy import HOST_BLACKLISTED, HOST_FULL_PRIVACY, NO_HOST
from worker.domain.targets import lookup_ids

WORKSPACE = "500000000000000001"
BOT = "900000000000000001"
ALICE = "100000000000000001"
BOB = "100000000000000002"
PROXY = "pk:0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
MATRIX = "@mx:matrix.org"
LIMITS = Limits(max_memory_length=1000, max_server_memories=50, max_personal_memories=20)
READY = Retrieval(rag_available=True, embedding_model="emb", embedding_credentials=True)
# Why a default workspace and retrieval may not evict (decay off, retrieval unusable).
NO_EVICTION = ("decay_off", "retrieval_unavailable", "no_embedding_credentials", "no_embedding_model")
ALICE_MEMBER = MemberMatch(id=ALICE, display_name="Alice", username="alice")
ALICE_ROW = KnownUser(user_id=11, disc_id=ALICE, nickname="Ali")


def command(
    tool_args: Any,
    *,
    lineage: int = 7,
    is_dm: bool = False,
    participants: list[Participant] | None = None,
    members: list[MemberMatch] | None = None,
    retrieval: Retrieval = Retrieval(),
) -> CreateMemory:
    return CreateMemory(
        command_id="cmd-1",
        issued_at=datetime(2025, 1, 1, tzinfo=UTC),
        workspace_id=WORKSPACE,
        persona=Persona(id=3, lineage_id=lineage, name="Tomori"),
        bot_user_id=BOT,
        channel=Channel(id="600000000000000001", is_dm=is_dm),
        tool_args=tool_args,
        participants=participants or [],
        member_matches=[ALICE_MEMBER] if members is None else members,
        retrieval=retrieval,
    )


def server_args(content: str = "{user} likes tea") -> dict[str, Any]:
    return {"memory_content": content, "memory_scope": "server_wide"}


def personal_args(target: str = "Alice", content: str = "{user} likes tea") -> dict[str, Any]:
    return {"memory_content": content, "memory_scope": "target_user", "target_user": target}


def context(
    workspace: Workspace = Workspace(), users: dict[str, KnownUser] | None = None
) -> CreateContext:
    return CreateContext(workspace=workspace, users={ALICE: ALICE_ROW} if users is None else users)


def decide(cmd: CreateMemory, ctx: CreateContext | None = None, limits: Limits = LIMITS) -> Any:
    """The SavePlan of a save; for a refusal, the result rendered from its decision (what the model reads)."""
    decision = decide_create(cmd, parse_tool_args(cmd.tool_args), ctx or context(), limits, NoticeSettings())
    return decision if isinstance(decision, SavePlan) else render_create(cmd.command_id, decision, None)


def ended(plan: SavePlan, outcome: SaveOutcome, **facts: Any) -> CommandResult:
    """The result of a save that ended in `outcome` under the lock."""
    return render_create("cmd-1", plan, SaveFacts(outcome=outcome, **facts))


def refused(result: Any, status: str) -> CommandResult:
    assert isinstance(result, CommandResult), result
    assert result.command_id == "cmd-1"
    assert result.success is False
    assert result.data.status == status
    assert result.error and result.data.reason == result.error
    assert result.message is None and result.invalidated == []
    return result


def planned(result: Any) -> SavePlan:
    assert isinstance(result, SavePlan), result
    return result


# --- step 1: arguments -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_args", "parameter"),
    [
        (None, "object"),
        ("remember tea", "object"),
        ({"memory_scope": "server_wide"}, "memory_content"),
        ({"memory_content": 3, "memory_scope": "server_wide"}, "memory_content"),
        ({"memory_content": "x", "memory_scope": "global"}, "memory_scope"),
        ({"memory_content": "x", "memory_scope": "target_user"}, "target_user"),
        ({"memory_content": "x", "memory_scope": "target_user", "target_user_nickname": 4}, "target_user_nickname"),
    ],
)
def test_invalid_args(tool_args: Any, parameter: str) -> None:
    result = refused(decide(command(tool_args)), codes.INVALID_ARGS)
    assert parameter in result.error  # type: ignore[operator]


def test_invalid_args_come_before_the_feature_gate() -> None:
    ctx = context(Workspace(self_teaching_enabled=False))
    refused(decide(command({"memory_scope": "x"}, lineage=0), ctx), codes.INVALID_ARGS)


# --- step 2: feature gate ----------------------------------------------------------------


@pytest.mark.parametrize("tool_args", [server_args(), personal_args(), personal_args("self")])
def test_self_teaching_disabled(tool_args: dict[str, Any]) -> None:
    ctx = context(Workspace(self_teaching_enabled=False))
    result = refused(decide(command(tool_args, lineage=0), ctx), codes.DISABLED)
    assert "Self-teaching is turned off" in result.error  # type: ignore[operator]
    assert "/memories" in result.error  # type: ignore[operator]
    assert result.data.scope == tool_args["memory_scope"]


def test_personal_memories_disabled_refuses_personal_saves() -> None:
    ctx = context(Workspace(personal_memories_enabled=False))
    result = refused(decide(command(personal_args()), ctx), codes.DISABLED)
    assert "Personal memories are turned off" in result.error  # type: ignore[operator]


@pytest.mark.parametrize(
    ("tool_args", "participants"),
    [
        (server_args(), []),
        (personal_args("self"), []),
        (personal_args(MATRIX), [Participant(id=MATRIX, kind="matrix", label="Mx (Matrix)")]),
    ],
)
def test_personal_memories_disabled_still_allows_server_saves(
    tool_args: dict[str, Any], participants: list[Participant]
) -> None:
    ctx = context(Workspace(personal_memories_enabled=False))
    assert planned(decide(command(tool_args, participants=participants), ctx)).scope == "server"


# --- step 3: lineage guard ----------------------------------------------------------------


@pytest.mark.parametrize("tool_args", [server_args(), personal_args()])
def test_lineage_zero_is_an_internal_error(tool_args: dict[str, Any]) -> None:
    result = refused(decide(command(tool_args, lineage=0)), codes.INTERNAL_ERROR)
    assert "lineage 0" in result.error  # type: ignore[operator]


def test_lineage_guard_comes_before_target_resolution() -> None:
    refused(decide(command(personal_args("nobody"), lineage=0)), codes.INTERNAL_ERROR)


# --- step 4: target resolution --------------------------------------------------------------


def test_personal_plan() -> None:
    cmd = command(personal_args("@ALICE", "  {User} likes {drink}  "))
    plan = planned(decide(cmd))
    assert plan == SavePlan(
        scope="personal",
        tool_scope="target_user",
        owner_id=ALICE,
        user_id=11,
        lineage_id=7,
        persona_id=3,
        persona_name="Tomori",
        content="{User} likes drink",
        cap=20,
        blocked_by=NO_EVICTION,
        decay_days=30,
        target_label="Alice",
        teacher_id=None,
        proxy=False,
        notice=route_notice(NoticeSettings(), cmd.channel),
    )


def test_server_plan() -> None:
    cmd = command(server_args(" {{name}} likes {{char}} "))
    plan = planned(decide(cmd))
    assert plan == SavePlan(
        scope="server",
        tool_scope="server_wide",
        owner_id=WORKSPACE,
        user_id=None,
        lineage_id=7,
        persona_id=3,
        persona_name="Tomori",
        content="name likes {{char}}",
        cap=50,
        blocked_by=NO_EVICTION,
        decay_days=30,
        target_label=None,
        teacher_id=None,
        proxy=False,
        notice=route_notice(NoticeSettings(), cmd.channel),
    )


def test_a_plan_that_may_evict_carries_an_opaque_metric_id_and_the_rest_none() -> None:
    ready = command(server_args(), retrieval=READY)
    evicting = planned(decide(ready, context(Workspace(memory_decay_enabled=True))))
    assert evicting.metric_event_id is not None and evicting.metric_event_id.startswith("metric:")
    assert "cmd-1" not in evicting.metric_event_id
    assert planned(decide(ready)).metric_event_id is None


def test_the_teacher_is_who_caused_the_turn() -> None:
    cmd = msgspec.structs.replace(command(server_args()), triggerer={"id": BOB, "name": "Bob"})
    assert planned(decide(msgspec.convert(msgspec.to_builtins(cmd), CreateMemory))).teacher_id == BOB


@pytest.mark.parametrize("target", ["self", "@Self", " SELF ", BOT, "Tomo"])
def test_bot_itself_becomes_server_wide(target: str) -> None:
    cmd = command(personal_args(target), participants=[Participant(id=BOT, label="Tomori", aliases=["Tomo"])])
    plan = planned(decide(cmd, context(users={})))
    assert (plan.scope, plan.tool_scope, plan.owner_id, plan.user_id) == ("server", "server_wide", WORKSPACE, None)
    assert plan.content == "{user} likes tea"


@pytest.mark.parametrize(
    ("label", "content", "expected"),
    [
        ("Mx (Matrix)", "{user} likes tea", "Mx likes tea"),
        ("Mx Person (Matrix)", "{user} and {{user}} like {bot}", "Mx Person and Mx Person like {bot}"),
        ("Mx", "tea for {User}", "tea for Mx"),
        ("Mx (Matrix)", "{name} likes tea", "name likes tea"),
    ],
)
def test_matrix_bridge_user_becomes_server_wide_with_name(label: str, content: str, expected: str) -> None:
    cmd = command(
        personal_args("mx", content),
        participants=[Participant(id=MATRIX, kind="matrix", label=label, aliases=["mx"])],
    )
    plan = planned(decide(cmd, context(users={})))
    assert (plan.scope, plan.tool_scope, plan.owner_id) == ("server", "server_wide", WORKSPACE)
    assert plan.target_label is None
    assert plan.content == expected


def test_matrix_id_target() -> None:
    bridge = Participant(id=MATRIX, kind="matrix", label="Mx (Matrix)")
    cmd = command(personal_args("@MX:matrix.org"), participants=[bridge])
    assert planned(decide(cmd)).content == "Mx likes tea"


def test_matrix_substitution_counts_towards_the_length() -> None:
    cmd = command(
        personal_args("mx", "a" * 994 + "{user}"),
        participants=[Participant(id=MATRIX, kind="matrix", label="Longname (Matrix)", aliases=["mx"])],
    )
    result = refused(decide(cmd), codes.INVALID_CONTENT)
    assert "1002" in result.error  # type: ignore[operator]


NOVA = Participant(id=PROXY, kind="proxy", label="Nova")
NOVA_ROW = KnownUser(user_id=99, disc_id=PROXY)
OPEN_HOST = HostLink(ALICE)


def proxy_context(*hosts: HostLink, users: dict[str, KnownUser] | None = None, known: bool = True) -> CreateContext:
    """A context where PROXY has a users row and (when `known`) an identity row with `hosts`."""
    proxies = {PROXY: ProxyIdentity(99, PROXY, hosts)} if known else {}
    return CreateContext(users={PROXY: NOVA_ROW} if users is None else users, proxies=proxies)


@pytest.mark.parametrize("target", [PROXY, PROXY.upper(), "Nova"])
def test_proxy_identity_stays_personal(target: str) -> None:
    cmd = command(personal_args(target), participants=[NOVA])
    plan = planned(decide(cmd, proxy_context(OPEN_HOST)))
    assert (plan.scope, plan.owner_id, plan.user_id, plan.target_label) == ("personal", PROXY, 99, "Nova")
    assert plan.proxy is True
    assert ended(plan, SaveOutcome.SAVED, memory_id=1).invalidated == [CacheKey("user", PROXY)]


def test_proxy_identity_without_users_row_is_not_found() -> None:
    cmd = command(personal_args(PROXY), participants=[NOVA])
    result = refused(decide(cmd, proxy_context(OPEN_HOST, users={})), codes.USER_NOT_FOUND)
    assert "users I already know" in result.error  # type: ignore[operator]


# --- step 7 for proxy identities: host protection ----------------------------------------------


@pytest.mark.parametrize(
    ("hosts", "known", "why"),
    [
        ((HostLink(ALICE, privacy_level=2),), True, HOST_FULL_PRIVACY),
        ((HostLink(ALICE, blacklisted=True),), True, HOST_BLACKLISTED),
        ((OPEN_HOST, HostLink(BOB, privacy_level=2)), True, HOST_FULL_PRIVACY),
        ((HostLink(BOB, privacy_level=2), OPEN_HOST), True, HOST_FULL_PRIVACY),
        ((OPEN_HOST, HostLink(BOB, blacklisted=True)), True, HOST_BLACKLISTED),
        ((), True, NO_HOST),
        ((OPEN_HOST,), False, NO_HOST),
    ],
    ids=["host-full", "host-blacklisted", "second-of-two-full", "first-of-two-full",
         "one-of-two-blacklisted", "no-host-link", "no-identity-row"],
)
@pytest.mark.parametrize("target", [PROXY, "Nova"])
def test_protected_host_refuses(target: str, hosts: tuple[HostLink, ...], known: bool, why: str) -> None:
    cmd = command(personal_args(target), participants=[NOVA])
    result = refused(decide(cmd, proxy_context(*hosts, known=known)), codes.PRIVACY_RESTRICTED)
    assert why in result.error  # type: ignore[operator]
    assert "Nova" in result.error and "Nothing was saved" in result.error  # type: ignore[operator]
    assert (result.data.scope, result.data.target_user) == ("target_user", "Nova")


@pytest.mark.parametrize(
    "hosts",
    [(OPEN_HOST,), (HostLink(ALICE, privacy_level=1),), (OPEN_HOST, HostLink(BOB, privacy_level=1))],
    ids=["open", "partial", "open-and-partial"],
)
def test_open_or_partial_hosts_save_as_personal(hosts: tuple[HostLink, ...]) -> None:
    plan = planned(decide(command(personal_args("Nova"), participants=[NOVA]), proxy_context(*hosts)))
    assert (plan.scope, plan.tool_scope, plan.owner_id, plan.user_id) == ("personal", "target_user", PROXY, 99)


def test_host_protection_fails_closed_without_users_row_either() -> None:
    # No identity row and no users row: protected wins, so the model does not retry in vain.
    cmd = command(personal_args(PROXY), participants=[NOVA])
    refused(decide(cmd, proxy_context(users={}, known=False)), codes.PRIVACY_RESTRICTED)


def test_host_protection_comes_before_the_content_checks() -> None:
    cmd = command(personal_args("Nova", "a" * 1001), participants=[NOVA])
    refused(decide(cmd, proxy_context(HostLink(ALICE, privacy_level=2))), codes.PRIVACY_RESTRICTED)


def test_identity_privacy_still_applies_with_open_hosts() -> None:
    users = {PROXY: KnownUser(user_id=99, disc_id=PROXY, privacy_level=1)}
    cmd = command(personal_args("Nova"), participants=[NOVA])
    result = refused(decide(cmd, proxy_context(OPEN_HOST, users=users)), codes.PRIVACY_RESTRICTED)
    assert "partial" in result.error  # type: ignore[operator]


def test_synthetic_id_is_protected_whatever_its_participant_kind() -> None:
    # A bot that labels a proxy participant "discord" must not open a way around the hosts.
    cmd = command(personal_args("Nova"), participants=[Participant(id=PROXY, label="Nova")])
    refused(decide(cmd, proxy_context(known=False)), codes.PRIVACY_RESTRICTED)
    assert planned(decide(cmd, proxy_context(OPEN_HOST))).owner_id == PROXY


def test_host_protection_ignores_personal_saves_of_discord_users() -> None:
    ctx = CreateContext(users={ALICE: ALICE_ROW}, proxies={})
    assert planned(decide(command(personal_args()), ctx)).owner_id == ALICE


def test_host_protection_ignores_server_saves() -> None:
    plan = planned(decide(command(server_args()), proxy_context(known=False)))
    assert plan.scope == "server"


@pytest.mark.parametrize("target", [PROXY, "Nova", "nobody"])
def test_lookup_ids_include_proxy_identities(target: str) -> None:
    cmd = command(personal_args(target), participants=[NOVA])
    assert PROXY in lookup_ids(cmd, parse_tool_args(cmd.tool_args))


def test_known_member_without_users_row_is_not_found() -> None:
    result = refused(decide(command(personal_args()), context(users={})), codes.USER_NOT_FOUND)
    assert "I can only save personal memories for users I already know" in result.error  # type: ignore[operator]
    assert result.data.target_user == "Alice"


@pytest.mark.parametrize("target", ["Bob", "Al", "alic"])
def test_unknown_name_is_not_found(target: str) -> None:
    result = refused(decide(command(personal_args(target))), codes.USER_NOT_FOUND)
    assert f'"{target}"' in result.error  # type: ignore[operator]
    assert result.data.scope == "target_user"


def test_dm_does_not_search_member_matches() -> None:
    refused(decide(command(personal_args(), is_dm=True)), codes.USER_NOT_FOUND)


def test_ambiguous_target() -> None:
    members = [MemberMatch(id=str(10**17 + i), display_name="Sam", username=f"sam{i}") for i in range(4)]
    result = refused(decide(command(personal_args("sam"), members=members)), codes.AMBIGUOUS_USER)
    assert result.data.candidates == ["Sam (@sam0)", "Sam (@sam1)", "Sam (@sam2)"]
    assert "Sam (@sam2)" in result.error and "Sam (@sam3)" not in result.error  # type: ignore[operator]
    assert result.data.scope == "target_user"


def test_saved_nickname_stage_uses_context_rows() -> None:
    members = [MemberMatch(id=ALICE, display_name="Alice"), MemberMatch(id=BOB, display_name="Bob")]
    ctx = context(users={ALICE: ALICE_ROW, BOB: KnownUser(user_id=12, disc_id=BOB, nickname="Bobby")})
    assert planned(decide(command(personal_args("bobby"), members=members), ctx)).user_id == 12


def test_persona_nickname_stage_uses_context() -> None:
    ctx = CreateContext(users={ALICE: ALICE_ROW}, persona_nicknames={ALICE: "Sunny"})
    assert planned(decide(command(personal_args("sunny")), ctx)).owner_id == ALICE


# --- steps 5 and 6: sanitize and length -------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "saved"),
    [
        ("a" * 1000, "a" * 1000),
        ("a" * 1001, None),
        ("a" * 998 + "😀", "a" * 998 + "😀"),
        ("a" * 999 + "😀", None),
        ("   " + "a" * 1000 + "   ", "a" * 1000),
        ("{" + "a" * 999 + "}", "a" * 999),
    ],
)
def test_length_limit_in_utf16_units_after_sanitizing(content: str, saved: str | None) -> None:
    result = decide(command(server_args(content)))
    if saved is None:
        refused(result, codes.INVALID_CONTENT)
    else:
        assert planned(result).content == saved


def test_too_long_names_length_and_limit() -> None:
    result = refused(decide(command(server_args("a" * 999 + "😀"))), codes.INVALID_CONTENT)
    assert "1001" in result.error and "1000" in result.error  # type: ignore[operator]
    assert result.data.scope == "server_wide"


def test_limit_comes_from_limits() -> None:
    refused(decide(command(server_args("abcdef")), limits=Limits(max_memory_length=5)), codes.INVALID_CONTENT)
    planned(decide(command(server_args("abcde")), limits=Limits(max_memory_length=5)))


# --- step 7: privacy ----------------------------------------------------------------------------


@pytest.mark.parametrize(("level", "word"), [(1, "partial"), (2, "full")])
def test_privacy_restricted(level: int, word: str) -> None:
    ctx = context(users={ALICE: KnownUser(user_id=11, disc_id=ALICE, privacy_level=level)})
    result = refused(decide(command(personal_args()), ctx), codes.PRIVACY_RESTRICTED)
    assert word in result.error and "/personal config" in result.error  # type: ignore[operator]
    assert result.data.target_user == "Alice"


def test_privacy_zero_saves() -> None:
    ctx = context(users={ALICE: KnownUser(user_id=11, disc_id=ALICE, privacy_level=0)})
    assert planned(decide(command(personal_args()), ctx)).user_id == 11


def test_privacy_ignored_for_server_saves() -> None:
    ctx = context(users={ALICE: KnownUser(user_id=11, disc_id=ALICE, privacy_level=2)})
    assert planned(decide(command(server_args()), ctx)).scope == "server"


def test_content_is_checked_before_privacy() -> None:
    ctx = context(users={ALICE: KnownUser(user_id=11, disc_id=ALICE, privacy_level=2)})
    refused(decide(command(personal_args(content="a" * 1001)), ctx), codes.INVALID_CONTENT)


# --- eviction prerequisites in the plan -----------------------------------------------------------


@pytest.mark.parametrize(
    ("workspace", "retrieval", "may_evict"),
    [
        (Workspace(memory_decay_enabled=True, memory_decay_days=14), READY, True),
        (Workspace(memory_decay_enabled=False, memory_decay_days=14), READY, False),
        (Workspace(memory_decay_enabled=True, memory_decay_days=14), Retrieval(), False),
    ],
)
def test_plan_carries_eviction_permission(workspace: Workspace, retrieval: Retrieval, may_evict: bool) -> None:
    plan = planned(decide(command(server_args(), retrieval=retrieval), context(workspace)))
    assert (plan.may_evict, plan.decay_days) == (may_evict, 14)


def test_plan_says_why_eviction_is_blocked() -> None:
    def blocked(workspace: Workspace, retrieval: Retrieval) -> tuple[str, ...]:
        return planned(decide(command(server_args(), retrieval=retrieval), context(workspace))).blocked_by

    assert blocked(Workspace(memory_decay_enabled=True), READY) == ()
    assert blocked(Workspace(), READY) == ("decay_off",)
    assert "retrieval_unavailable" in blocked(Workspace(memory_decay_enabled=True), Retrieval())


# --- results rendered from what the save learned under the lock ----------------------------------


def _plan(scope: str = "server") -> SavePlan:
    args = server_args() if scope == "server" else personal_args()
    return planned(decide(command(args)))


@pytest.mark.parametrize("scope", ["server", "personal"])
def test_at_cap_with_eviction_not_permitted(scope: str) -> None:
    plan = _plan(scope)
    assert "decay_off" in plan.blocked_by
    result = refused(ended(plan, SaveOutcome.AT_CAP, count=0), codes.LIMIT_EXCEEDED)
    assert (result.data.current_count, result.data.max_allowed) == (0, plan.cap)
    assert ended(plan, SaveOutcome.AT_CAP, count=49).data.current_count == 49
    assert "memory decay is turned off for this server" in result.error  # type: ignore[operator]
    assert ("/personal memories" if scope == "personal" else "/memories") in result.error  # type: ignore[operator]
    assert result.data.scope == plan.tool_scope


def test_at_cap_with_nothing_eligible() -> None:
    evictable = msgspec.structs.replace(_plan(), blocked_by=())
    result = refused(ended(evictable, SaveOutcome.AT_CAP, count=50), codes.LIMIT_EXCEEDED)
    assert "written by hand" in result.error and "30 days" in result.error  # type: ignore[operator]


def test_over_cap() -> None:
    result = refused(ended(_plan(), SaveOutcome.OVER_CAP, count=51), codes.LIMIT_EXCEEDED)
    assert "more memories than the current limit of 50" in result.error  # type: ignore[operator]
    assert result.data.current_count == 51


def test_a_cap_refusal_stored_without_its_count_fails_instead_of_saying_zero() -> None:
    with pytest.raises(ValueError, match="without the count"):
        ended(_plan(), SaveOutcome.AT_CAP)


@pytest.mark.parametrize(("outcome", "word"), [(SaveOutcome.PRIVACY_PARTIAL, "partial"),
                                               (SaveOutcome.PRIVACY_FULL, "full")])
def test_privacy_read_again_under_the_lock_refuses(outcome: SaveOutcome, word: str) -> None:
    result = refused(ended(_plan("personal"), outcome), codes.PRIVACY_RESTRICTED)
    assert word in result.error and "Alice" in result.error  # type: ignore[operator]


def test_a_hosts_protection_changed_under_the_lock_refuses() -> None:
    result = refused(ended(_plan("personal"), SaveOutcome.HOST_PROTECTED), codes.PRIVACY_RESTRICTED)
    assert "protection changed while saving" in result.error  # type: ignore[operator]


def test_limit_exceeded_texts_differ_and_carry_count() -> None:
    plan = msgspec.structs.replace(_plan(), blocked_by=("retrieval_unavailable",))
    texts = {
        messages.limit_exceeded("cmd-1", plan, 50, reason).error
        for reason in ("eviction_not_permitted", "nothing_eligible", "over_cap")
    }
    assert len(texts) == 3
    assert any("retrieval is not available" in (text or "") for text in texts)
    result = messages.limit_exceeded("cmd-1", plan, 50, "over_cap")
    assert result.data.current_count == 50


def test_saved_result() -> None:
    plan = _plan("personal")
    result = ended(plan, SaveOutcome.SAVED, memory_id=412)
    assert result.success is True and result.error is None
    assert result.message == "Memory saved successfully"
    assert result.data.status == codes.SAVED
    assert (result.data.scope, result.data.memory_id, result.data.content_saved) == ("target_user", 412, plan.content)
    assert result.data.content_forgotten is None and result.data.target_user == "Alice"
    assert result.invalidated == [CacheKey("user", ALICE)]


def test_saved_with_eviction_result_encodes_like_the_contract() -> None:
    plan = _plan()
    facts = SaveFacts(outcome=SaveOutcome.SAVED_WITH_EVICTION, memory_id=412, evicted_id=9,
                      forgotten="{user} likes coffee")
    result = render_create("cmd-1", plan, facts)
    encoded = msgspec.json.decode(msgspec.json.encode(result))
    assert encoded == {
        "command_id": "cmd-1",
        "success": True,
        "message": "Memory saved successfully",
        "error": None,
        "data": {
            "status": "memory_saved_with_eviction",
            "scope": "server_wide",
            "memory_id": 412,
            "content_saved": "{user} likes tea",
            "content_forgotten": "{user} likes coffee",
            "reason": None,
        },
        "invalidated": [{"cache": "tomori_state", "key": WORKSPACE}],
        "notice": msgspec.to_builtins(save_notice(plan, facts)),
    }
    assert encoded["notice"]["title"] == "Memory saved (one forgotten to make room)"


def test_db_error_result() -> None:
    result = refused(messages.db_error("cmd-1", "server_wide"), codes.DB_ERROR)
    assert "try again" in result.error  # type: ignore[operator]


def test_invalid_command_result() -> None:
    result = messages.invalid_command("cmd-9", "workspace_id does not match the subject")
    assert (result.command_id, result.success, result.data.status) == ("cmd-9", False, codes.COMMAND_INVALID)
    assert result.data.reason == result.error
    assert "workspace_id does not match" in result.error  # type: ignore[operator]


def test_refusal_keeps_extra_fields_and_omits_unset_ones() -> None:
    result = messages.refusal("cmd-2", codes.AMBIGUOUS_USER, "which one?", candidates=["a", "b"])
    data = msgspec.json.decode(msgspec.json.encode(result))["data"]
    assert data == {
        "status": codes.AMBIGUOUS_USER,
        "scope": None,
        "memory_id": None,
        "content_saved": None,
        "content_forgotten": None,
        "reason": "which one?",
        "candidates": ["a", "b"],
    }


# Every status of memory.create is produced somewhere above; this keeps that list honest.
def test_every_create_status_is_reachable() -> None:
    plan = _plan()
    cmd = command(server_args())
    two_alices = [ALICE_MEMBER, MemberMatch(id=BOB, display_name="Alice")]
    produced = {
        decide(command(None)).data.status,
        decide(cmd, context(Workspace(self_teaching_enabled=False))).data.status,
        decide(command(server_args(), lineage=0)).data.status,
        decide(command(personal_args("alice"), members=two_alices)).data.status,
        decide(command(personal_args("nobody"))).data.status,
        decide(command(server_args("a" * 1001))).data.status,
        decide(command(personal_args()), context(users={ALICE: KnownUser(1, ALICE, privacy_level=1)})).data.status,
        ended(plan, SaveOutcome.AT_CAP, count=0).data.status,
        messages.db_error(cmd.command_id).data.status,
        ended(plan, SaveOutcome.SAVED, memory_id=1).data.status,
        ended(plan, SaveOutcome.SAVED_WITH_EVICTION, memory_id=1, evicted_id=2, forgotten="old").data.status,
    }
    assert produced == set(codes.CREATE_STATUSES)


def test_command_from_wire_json() -> None:
    raw = {
        "command_id": "cmd-1",
        "issued_at": "2025-01-01T00:00:00Z",
        "workspace_id": WORKSPACE,
        "persona": {"id": 3, "lineage_id": 7, "name": "Tomori"},
        "bot_user_id": BOT,
        "channel": {"id": "1", "is_dm": False},
        "tool_args": personal_args("alice"),
        "member_matches": [{"id": ALICE, "display_name": "Alice", "is_bot": False}],
        "retrieval": {"rag_available": True, "embedding_model": "emb", "embedding_credentials": True},
    }
    cmd = msgspec.convert(raw, CreateMemory)
    plan = planned(decide(cmd, context(Workspace(memory_decay_enabled=True))))
    assert (plan.owner_id, plan.may_evict) == (ALICE, True)


def test_a_decision_reads_back_from_its_stored_json_as_it_was() -> None:
    from worker.domain.create_decision import CreateDecision

    for cmd, ctx in ((command(server_args(), retrieval=READY), context(Workspace(memory_decay_enabled=True))),
                     (command(personal_args("nobody")), context()),
                     (command({"memory_scope": 1}), context())):
        decision = decide_create(cmd, parse_tool_args(cmd.tool_args), ctx, LIMITS, NoticeSettings())
        assert msgspec.json.decode(msgspec.json.encode(decision), type=CreateDecision) == decision


def test_ambiguous_result_never_lists_more_than_three() -> None:
    result = messages.ambiguous("cmd-1", "jo", ["Jo A", "Jo B", "Jo C", "Jo D", "Jo E"])
    assert result.data.candidates == ["Jo A", "Jo B", "Jo C"]
    assert "Jo C" in result.error and "Jo D" not in result.error  # type: ignore[operator]


def test_an_unknown_privacy_level_is_named_as_full_as_the_save_under_the_lock_names_it():
    from worker.domain import messages

    assert messages.privacy_restricted("c1", "Mika", 7) == messages.privacy_restricted("c1", "Mika", 2)
