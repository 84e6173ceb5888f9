"""The whole `memory.create` decision, and the results rendered from it and from what the save
learned under the lock (worker/kinds/create/rendering.py): what each rule decides and plans. The
words of each result are held to TomoriBot's in tests/unit/test_tomoribot_create_parity.py."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.kinds.create import (
    AMBIGUOUS_USER,
    CREATE_STATUSES,
    DB_ERROR,
    DISABLED,
    INTERNAL_ERROR,
    INVALID_ARGS,
    INVALID_CONTENT,
    LIMIT_EXCEEDED,
    PRIVACY_RESTRICTED,
    USER_NOT_FOUND,
    CommandResult,
    CreateMemory,
    Retrieval,
)
from contracts.result_parts import COMMAND_INVALID, CacheKey
from contracts.tool_call import AffixVariants, Channel, MemberMatch, Participant, Persona, PersonaNaming, Triggerer
from tests.support.commands import create_command, fixed_envelope
from worker.domain.context import CreateContext
from worker.domain.notice import NoticeSettings, route_notice
from worker.domain.people import HostLink, KnownUser, PersonaNamingPreference, ProxyIdentity
from worker.domain.targets import lookup_ids
from worker.domain.workspace import Limits, Workspace
from worker.kinds.create import texts
from worker.kinds.create.arguments import parse_tool_args
from worker.kinds.create.decision import decide_create
from worker.kinds.create.outcome import EvictionBlocker, SaveOutcome
from worker.kinds.create.record import SavePlan, SaveSettled
from worker.kinds.create.rendering import render_create, save_notice

WORKSPACE = "500000000000000001"
BOT = "900000000000000001"
ALICE = "100000000000000001"
BOB = "100000000000000002"
PROXY = "pk:0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
MATRIX = "@mx:matrix.org"
LIMITS = Limits(max_memory_length=1000, max_server_memories=50, max_personal_memories=20)
READY = Retrieval(rag_available=True, embedding_model="emb", embedding_credentials=True)
# Why a default workspace and retrieval may not evict (decay off, retrieval unusable).
NO_EVICTION: tuple[EvictionBlocker, ...] = ("decay_off", "retrieval_unavailable", "no_embedding_credentials",
                                           "no_embedding_model")
ALICE_MEMBER = MemberMatch(id=ALICE, display_name="Alice", username="alice_01")
ALICE_LABEL = "Alice (@alice_01)"
ALICE_ROW = KnownUser(user_id=11, disc_id=ALICE, nickname="Ali")
# Who caused the turn: TomoriBot needs their users row (its "critical state").
TRIGGERER = "110000000000000009"
TRIGGERER_ROW = KnownUser(user_id=5, disc_id=TRIGGERER)
SOMEONE = Triggerer(id=TRIGGERER, name="Tri")


def command(
    tool_args: Any,
    *,
    lineage: int = 7,
    is_dm: bool = False,
    participants: list[Participant] | None = None,
    members: list[MemberMatch] | None = None,
    retrieval: Retrieval = Retrieval(),
    triggerer: Triggerer | None = SOMEONE,
    persona_id: int = 3,
    naming: PersonaNaming | None = None,
) -> CreateMemory:
    return create_command(
        WORKSPACE, persona=Persona(id=persona_id, lineage_id=lineage, name="Tomori", naming=naming), bot_user_id=BOT,
        triggerer=triggerer, channel=Channel(id="600000000000000001", is_dm=is_dm), tool_args=tool_args,
        participants=participants or [], member_matches=[ALICE_MEMBER] if members is None else members,
        retrieval=retrieval, envelope_fields=fixed_envelope("cmd-1"))


def server_args(content: str = "{user} likes tea") -> dict[str, Any]:
    return {"memory_content": content, "memory_scope": "server_wide"}


def personal_args(target: str = "Alice", content: str = "{user} likes tea") -> dict[str, Any]:
    return {"memory_content": content, "memory_scope": "target_user", "target_user": target}


def context(
    workspace: Workspace = Workspace(), users: dict[str, KnownUser] | None = None, *, triggerer_known: bool = True
) -> CreateContext:
    """Alice's row unless `users` says otherwise, and the triggerer's unless not `triggerer_known`."""
    known = {ALICE: ALICE_ROW} if users is None else dict(users)
    if triggerer_known:
        known[TRIGGERER] = TRIGGERER_ROW
    return CreateContext(workspace=workspace, users=known)


def decide(cmd: CreateMemory, ctx: CreateContext | None = None, limits: Limits = LIMITS) -> Any:
    """The SavePlan of a save; for a refusal, the result rendered from its decision (what the model reads)."""
    decision = decide_create(cmd, parse_tool_args(cmd.tool_args), ctx or context(), limits, NoticeSettings())
    return decision if isinstance(decision, SavePlan) else render_create(cmd.command_id, decision, None)


def ended(plan: SavePlan, outcome: SaveOutcome, **facts: Any) -> CommandResult:
    """The result of a save that ended in `outcome` under the lock."""
    return render_create("cmd-1", plan, SaveSettled(outcome=outcome, **facts))


def refused(result: Any, status: str) -> CommandResult:
    assert isinstance(result, CommandResult), result
    assert result.command_id == "cmd-1"
    assert result.success is False
    assert result.data.status == status
    assert result.error and result.data.reason
    assert result.message is None and result.invalidated == []
    return result


def planned(result: Any) -> SavePlan:
    assert isinstance(result, SavePlan), result
    return result


# --- the parameter check, self-teaching, the critical state ---------------------------------


@pytest.mark.parametrize(
    ("tool_args", "parameter"),
    [
        (None, "memory_content"),
        ("remember tea", "memory_content"),
        ({"memory_content": 3, "memory_scope": "server_wide"}, "memory_content"),
        ({"memory_content": "x", "memory_scope": "target_user"}, "target_user"),
        ({"memory_content": "x", "memory_scope": "target_user", "target_user_nickname": 4}, "target_user_nickname"),
        ({"memory_content": " ", "memory_scope": "server_wide"}, "memory_content"),
    ],
)
def test_invalid_args_name_the_parameter(tool_args: Any, parameter: str) -> None:
    result = refused(decide(command(tool_args)), INVALID_ARGS)
    assert parameter in result.error  # type: ignore[operator]


def test_invalid_args_come_before_the_feature_gate() -> None:
    ctx = context(Workspace(self_teaching_enabled=False))
    refused(decide(command({"memory_scope": "x"}, lineage=0), ctx), INVALID_ARGS)


@pytest.mark.parametrize("tool_args", [server_args(), personal_args(), personal_args("self"),
                                       {"memory_content": "x", "memory_scope": "server_wide",
                                        "target_user_discord_id": 7}])
def test_self_teaching_disabled_comes_before_everything_but_the_parameter_check(tool_args: dict[str, Any]) -> None:
    ctx = context(Workspace(self_teaching_enabled=False), triggerer_known=False)
    result = refused(decide(command(tool_args, lineage=0, persona_id=0), ctx), DISABLED)
    assert result.data.scope is None


def test_a_legacy_target_name_that_is_no_string_is_refused_before_the_critical_state() -> None:
    """TomoriBot trims it before reading the triggerer, and throws on anything but a string."""
    tool_args = {"memory_content": "x", "memory_scope": "server_wide", "target_user_discord_id": 123456789012345678}
    refused(decide(command(tool_args, triggerer=None)), INVALID_ARGS)
    # A non-blank target_user is read first: the legacy names are never looked at.
    tool_args = {**personal_args(), "target_user_nickname": 5}
    assert planned(decide(command(tool_args))).owner_id == ALICE


def test_the_critical_state_comes_before_blank_content_and_lineage() -> None:
    refused(decide(command(server_args(" "), lineage=0), context(triggerer_known=False)), INTERNAL_ERROR)


def test_the_triggerer_is_looked_up_for_every_create() -> None:
    assert lookup_ids(command(server_args()), None) == (TRIGGERER,)
    assert lookup_ids(command(server_args(), triggerer=None), None) == ()


# --- personal memories off: saved, only the notice's footer changes ------------------------


@pytest.mark.parametrize("enabled", [True, False])
def test_personal_memories_off_still_saves_personal_memories(enabled: bool) -> None:
    plan = planned(decide(command(personal_args()), context(Workspace(personal_memories_enabled=enabled))))
    assert (plan.scope, plan.owner_id, plan.personalization_enabled) == ("personal", ALICE, enabled)


@pytest.mark.parametrize(("enabled", "blacklisted", "footer"), [
    (True, False, "genai.self_teach.personal_memory_footer_manage"),
    (True, True, "genai.self_teach.personal_memory_footer_user_blacklisted"),
    (False, True, "genai.self_teach.personal_memory_footer_personalization_disabled"),
])
def test_the_personal_footer_follows_the_switch_and_the_blacklist(enabled: bool, blacklisted: bool,
                                                                  footer: str) -> None:
    users = {ALICE: KnownUser(user_id=11, disc_id=ALICE, blacklisted=blacklisted)}
    plan = planned(decide(command(personal_args()), context(Workspace(personal_memories_enabled=enabled), users)))
    assert plan.target_blacklisted is blacklisted
    notice = ended(plan, SaveOutcome.SAVED, memory_id=4).notice
    assert notice is not None and notice["embed"]["footer_key"] == footer


# --- the lineage guard: after the content checks ----------------------------------------------


def test_lineage_guard_comes_after_target_resolution_and_content() -> None:
    refused(decide(command(personal_args("nobody"), lineage=0)), USER_NOT_FOUND)
    refused(decide(command(server_args("a" * 1001), lineage=0)), INVALID_CONTENT)


def test_lineage_guard_comes_before_the_users_row_and_privacy() -> None:
    users = {ALICE: KnownUser(user_id=11, disc_id=ALICE, privacy_level=2)}
    refused(decide(command(personal_args(), lineage=0), context(users=users)), INTERNAL_ERROR)
    refused(decide(command(personal_args(), lineage=0), context(users={})), INTERNAL_ERROR)


# --- plans -------------------------------------------------------------------------------------


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
        target_label=ALICE_LABEL,
        teacher_id=TRIGGERER,
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
        teacher_id=TRIGGERER,
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
    cmd = command(server_args(), triggerer=Triggerer(id=BOB, name="Bob"))
    ctx = context(users={BOB: KnownUser(user_id=12, disc_id=BOB)})
    assert planned(decide(cmd, ctx)).teacher_id == BOB


# --- the target: the bot, "self", bridge users --------------------------------------------------


@pytest.mark.parametrize("target", [BOT, "Tomo", "@tomo", "TOMORI"])
def test_a_target_that_resolves_to_the_bot_becomes_server_wide(target: str) -> None:
    bot = Participant(id=BOT, label="Tomori", aliases=["Tomori", "Tomo"])
    plan = planned(decide(command(personal_args(target), participants=[bot]), context(users={})))
    assert (plan.scope, plan.tool_scope, plan.owner_id, plan.user_id) == ("server", "server_wide", WORKSPACE, None)
    assert plan.content == "{user} likes tea" and plan.target_label is None


@pytest.mark.parametrize("target", ["self", " SELF ", "Self"])
def test_self_becomes_server_wide_only_once_resolved(target: str) -> None:
    """TomoriBot: `requestedTargetUser.toLowerCase() === "self"` is checked after a resolution."""
    someone = Participant(id=BOB, label="Self", aliases=["Self"])
    plan = planned(decide(command(personal_args(target), participants=[someone]), context(users={})))
    assert (plan.scope, plan.tool_scope) == ("server", "server_wide")
    refused(decide(command(personal_args(target))), USER_NOT_FOUND)


def test_at_self_is_no_self() -> None:
    someone = Participant(id=BOB, label="Self", aliases=["Self"])
    ctx = context(users={BOB: KnownUser(user_id=12, disc_id=BOB)})
    assert planned(decide(command(personal_args("@self"), participants=[someone]), ctx)).owner_id == BOB


def test_the_bots_own_id_is_not_found_unless_a_participant_carries_it() -> None:
    bot_member = MemberMatch(id=BOT, display_name="Tomori", username="tomori", is_bot=True)
    refused(decide(command(personal_args(BOT), members=[bot_member])), USER_NOT_FOUND)


@pytest.mark.parametrize(
    ("label", "content", "expected"),
    [
        ("Mx (Matrix)", "{user} likes tea", "Mx likes tea"),
        # Only the exact `{user}` is replaced; `{{user}}` keeps its outer braces.
        ("Mx Person (Matrix)", "{user} and {{user}} like {bot}", "Mx Person and {Mx Person} like {bot}"),
        ("Mx", "tea for {User}", "tea for {User}"),
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


def test_matrix_id_target_is_matched_exactly() -> None:
    bridge = Participant(id=MATRIX, kind="matrix", label="Mx (Matrix)")
    assert planned(decide(command(personal_args(f" {MATRIX} "), participants=[bridge]))).content == "Mx likes tea"
    refused(decide(command(personal_args("@MX:matrix.org"), participants=[bridge])), USER_NOT_FOUND)


def test_matrix_substitution_counts_towards_the_length() -> None:
    cmd = command(
        personal_args("mx", "a" * 994 + "{user}"),
        participants=[Participant(id=MATRIX, kind="matrix", label="Longname (Matrix)", aliases=["mx"])],
    )
    refused(decide(cmd), INVALID_CONTENT)


# --- proxy identities ------------------------------------------------------------------------------


NOVA = Participant(id=PROXY, kind="proxy", label="Nova", aliases=["Nova"])
NOVA_ROW = KnownUser(user_id=99, disc_id=PROXY)
OPEN_HOST = HostLink(ALICE)


def proxy_context(*hosts: HostLink, users: dict[str, KnownUser] | None = None, known: bool = True) -> CreateContext:
    """A context where PROXY has a users row and (when `known`) an identity row with `hosts`."""
    proxies = {PROXY: ProxyIdentity(99, PROXY, hosts)} if known else {}
    return CreateContext(users={PROXY: NOVA_ROW, TRIGGERER: TRIGGERER_ROW} if users is None
                         else {**users, TRIGGERER: TRIGGERER_ROW}, proxies=proxies)


@pytest.mark.parametrize("target", [PROXY, "Nova", "@nova"])
def test_proxy_identity_stays_personal(target: str) -> None:
    cmd = command(personal_args(target), participants=[NOVA])
    plan = planned(decide(cmd, proxy_context(OPEN_HOST)))
    assert (plan.scope, plan.owner_id, plan.user_id, plan.target_label) == ("personal", PROXY, 99, "Nova")
    assert plan.proxy is True
    assert ended(plan, SaveOutcome.SAVED, memory_id=1).invalidated == [CacheKey("user", PROXY)]


def test_a_proxy_id_in_other_case_is_no_proxy_id() -> None:
    refused(decide(command(personal_args(PROXY.upper()), participants=[NOVA]), proxy_context(OPEN_HOST)),
            USER_NOT_FOUND)


def test_a_custom_instance_identity_is_protected_like_any_proxy() -> None:
    custom = "pk:i:46:pluralkit:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0:0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
    member = Participant(id=custom, label="Vega", aliases=["Vega"])  # labelled discord by the bot
    users = {custom: KnownUser(user_id=98, disc_id=custom), TRIGGERER: TRIGGERER_ROW}
    protected = refused(decide(command(personal_args("Vega"), participants=[member]),
                               CreateContext(users=users)), PRIVACY_RESTRICTED)
    assert protected.data.target_user == "Vega"
    hosted = CreateContext(users=users, proxies={custom: ProxyIdentity(98, custom, (OPEN_HOST,))})
    assert planned(decide(command(personal_args("Vega"), participants=[member]), hosted)).proxy is True


def test_proxy_identity_without_users_row_is_not_found() -> None:
    cmd = command(personal_args(PROXY), participants=[NOVA])
    refused(decide(cmd, proxy_context(OPEN_HOST, users={})), USER_NOT_FOUND)


@pytest.mark.parametrize(
    ("hosts", "known"),
    [
        ((HostLink(ALICE, privacy_level=2),), True),
        ((HostLink(ALICE, blacklisted=True),), True),
        ((OPEN_HOST, HostLink(BOB, privacy_level=2)), True),
        ((HostLink(BOB, privacy_level=2), OPEN_HOST), True),
        ((OPEN_HOST, HostLink(BOB, blacklisted=True)), True),
        ((), True),
        ((OPEN_HOST,), False),
    ],
    ids=["host-full", "host-blacklisted", "second-of-two-full", "first-of-two-full",
         "one-of-two-blacklisted", "no-host-link", "no-identity-row"],
)
@pytest.mark.parametrize("target", [PROXY, "Nova"])
def test_protected_host_refuses(target: str, hosts: tuple[HostLink, ...], known: bool) -> None:
    cmd = command(personal_args(target), participants=[NOVA])
    result = refused(decide(cmd, proxy_context(*hosts, known=known)), PRIVACY_RESTRICTED)
    assert "Nova" in result.error  # type: ignore[operator]
    assert (result.data.scope, result.data.target_user) == ("target_user", "Nova")


@pytest.mark.parametrize(
    "hosts",
    [(OPEN_HOST,), (HostLink(ALICE, privacy_level=1),), (OPEN_HOST, HostLink(BOB, privacy_level=1))],
    ids=["open", "partial", "open-and-partial"],
)
def test_open_or_partial_hosts_save_as_personal(hosts: tuple[HostLink, ...]) -> None:
    plan = planned(decide(command(personal_args("Nova"), participants=[NOVA]), proxy_context(*hosts)))
    assert (plan.scope, plan.tool_scope, plan.owner_id, plan.user_id) == ("personal", "target_user", PROXY, 99)


def test_the_users_row_comes_before_host_protection() -> None:
    """TomoriBot: an identity it has no users row for is not found, whatever its hosts."""
    cmd = command(personal_args(PROXY), participants=[NOVA])
    refused(decide(cmd, proxy_context(users={}, known=False)), USER_NOT_FOUND)


def test_the_content_checks_come_before_host_protection() -> None:
    cmd = command(personal_args("Nova", "a" * 1001), participants=[NOVA])
    refused(decide(cmd, proxy_context(HostLink(ALICE, privacy_level=2))), INVALID_CONTENT)


def test_identity_privacy_still_applies_with_open_hosts() -> None:
    users = {PROXY: KnownUser(user_id=99, disc_id=PROXY, privacy_level=1)}
    cmd = command(personal_args("Nova"), participants=[NOVA])
    refused(decide(cmd, proxy_context(OPEN_HOST, users=users)), PRIVACY_RESTRICTED)


def test_host_protection_comes_before_the_identitys_own_privacy() -> None:
    users = {PROXY: KnownUser(user_id=99, disc_id=PROXY, privacy_level=1)}
    cmd = command(personal_args("Nova"), participants=[NOVA])
    result = refused(decide(cmd, proxy_context(HostLink(ALICE, privacy_level=2), users=users)),
                     PRIVACY_RESTRICTED)
    assert "host account" in (result.data.reason or "")


def test_synthetic_id_is_protected_whatever_its_participant_kind() -> None:
    # A bot that labels a proxy participant "discord" must not open a way around the hosts.
    cmd = command(personal_args("Nova"), participants=[Participant(id=PROXY, label="Nova", aliases=["Nova"])])
    refused(decide(cmd, proxy_context(known=False)), PRIVACY_RESTRICTED)
    assert planned(decide(cmd, proxy_context(OPEN_HOST))).owner_id == PROXY


def test_host_protection_ignores_personal_saves_of_discord_users() -> None:
    ctx = CreateContext(users={ALICE: ALICE_ROW, TRIGGERER: TRIGGERER_ROW}, proxies={})
    assert planned(decide(command(personal_args()), ctx)).owner_id == ALICE


def test_host_protection_ignores_server_saves() -> None:
    plan = planned(decide(command(server_args()), proxy_context(known=False)))
    assert plan.scope == "server"


@pytest.mark.parametrize("target", [PROXY, "Nova", "nobody"])
def test_lookup_ids_include_proxy_identities(target: str) -> None:
    cmd = command(personal_args(target), participants=[NOVA])
    assert PROXY in lookup_ids(cmd, target)


# --- who the target is ----------------------------------------------------------------------------


def test_known_member_without_users_row_is_not_found() -> None:
    result = refused(decide(command(personal_args()), context(users={})), USER_NOT_FOUND)
    assert result.data.target_user == ALICE_LABEL


@pytest.mark.parametrize("target", ["Bob", "Al", "alic", "<@100000000000000001>"])
def test_unknown_name_is_not_found(target: str) -> None:
    result = refused(decide(command(personal_args(target))), USER_NOT_FOUND)
    assert f'"{target}"' in result.error  # type: ignore[operator]
    assert result.data.scope == "target_user"


def test_dm_does_not_search_member_matches() -> None:
    refused(decide(command(personal_args(), is_dm=True)), USER_NOT_FOUND)


def test_ambiguous_target() -> None:
    members = [MemberMatch(id=str(10**17 + i), display_name="Sam", username=f"sam{i}") for i in range(4)]
    result = refused(decide(command(personal_args("sam"), members=members)), AMBIGUOUS_USER)
    assert result.data.candidates == ["Sam (@sam0)", "Sam (@sam1)", "Sam (@sam2)"]
    assert "Sam (@sam2)" in result.error and "Sam (@sam3)" not in result.error  # type: ignore[operator]
    assert result.data.scope == "target_user"


def test_saved_nickname_stage_uses_context_rows() -> None:
    members = [MemberMatch(id=ALICE, display_name="Alice"), MemberMatch(id=BOB, display_name="Bob")]
    ctx = context(users={ALICE: ALICE_ROW, BOB: KnownUser(user_id=12, disc_id=BOB, nickname="Bobby")})
    assert planned(decide(command(personal_args("bobby"), members=members), ctx)).user_id == 12


def test_persona_nickname_stage_uses_context() -> None:
    sunny = KnownUser(user_id=11, disc_id=ALICE, persona_naming=PersonaNamingPreference(nickname="Sunny"))
    assert planned(decide(command(personal_args("sunny")), context(users={ALICE: sunny}))).owner_id == ALICE


def test_persona_affixes_are_taken_off_the_name() -> None:
    naming = PersonaNaming(prefixes=AffixVariants(neutral="Master"))
    plan = planned(decide(command(personal_args("Master Alice"), naming=naming)))
    assert (plan.owner_id, plan.target_label) == (ALICE, ALICE_LABEL)


# --- sanitize and length --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "saved"),
    [
        ("a" * 1000, "a" * 1000),
        ("a" * 1001, None),
        ("a" * 998 + "😀", "a" * 998 + "😀"),
        ("a" * 999 + "😀", None),
        ("   " + "a" * 1000 + "   ", "a" * 1000),
        ("\ufeff" + "a" * 1000, "a" * 1000),  # JavaScript's trim() takes U+FEFF too
        ("{" + "a" * 999 + "}", "a" * 999),
    ],
)
def test_length_limit_in_utf16_units_after_sanitizing(content: str, saved: str | None) -> None:
    result = decide(command(server_args(content)))
    if saved is None:
        refused(result, INVALID_CONTENT)
    else:
        assert planned(result).content == saved


def test_invalid_content_carries_no_scope() -> None:
    result = refused(decide(command(server_args("a" * 999 + "😀"))), INVALID_CONTENT)
    assert "1000" in result.error  # type: ignore[operator]
    assert result.data.scope is None


def test_limit_comes_from_limits() -> None:
    refused(decide(command(server_args("abcdef")), limits=Limits(max_memory_length=5)), INVALID_CONTENT)
    planned(decide(command(server_args("abcde")), limits=Limits(max_memory_length=5)))


# --- privacy ----------------------------------------------------------------------------------------


def test_privacy_zero_saves() -> None:
    ctx = context(users={ALICE: KnownUser(user_id=11, disc_id=ALICE, privacy_level=0)})
    assert planned(decide(command(personal_args()), ctx)).user_id == 11


def test_privacy_ignored_for_server_saves() -> None:
    ctx = context(users={ALICE: KnownUser(user_id=11, disc_id=ALICE, privacy_level=2)})
    assert planned(decide(command(server_args()), ctx)).scope == "server"


def test_content_is_checked_before_privacy() -> None:
    ctx = context(users={ALICE: KnownUser(user_id=11, disc_id=ALICE, privacy_level=2)})
    refused(decide(command(personal_args(content="a" * 1001)), ctx), INVALID_CONTENT)


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
@pytest.mark.parametrize("outcome", [SaveOutcome.AT_CAP, SaveOutcome.OVER_CAP])
def test_a_cap_refusal_carries_the_count_and_the_cap(scope: str, outcome: SaveOutcome) -> None:
    plan = _plan(scope)
    result = refused(ended(plan, outcome, count=0), LIMIT_EXCEEDED)
    assert (result.data.current_count, result.data.max_allowed) == (0, plan.cap)
    assert ended(plan, outcome, count=49).data.current_count == 49
    assert ("/personal memories" if scope == "personal" else "/memories") in (result.data.reason or "")
    assert result.data.scope == plan.tool_scope


def test_a_cap_refusal_reads_the_same_whether_or_not_a_row_could_have_gone() -> None:
    """TomoriBot never evicts: at the cap it has one refusal, which the worker gives in every case."""
    plan = _plan()
    evictable = msgspec.structs.replace(plan, blocked_by=())
    assert ended(evictable, SaveOutcome.AT_CAP, count=50) == ended(plan, SaveOutcome.AT_CAP, count=50)


def test_a_cap_refusal_stored_without_its_count_fails_instead_of_saying_zero() -> None:
    with pytest.raises(ValueError, match="without the count"):
        ended(_plan(), SaveOutcome.AT_CAP)


def test_saved_with_eviction_result_encodes_like_the_contract() -> None:
    plan = _plan()
    facts = SaveSettled(outcome=SaveOutcome.SAVED_WITH_EVICTION, memory_id=412, evicted_id=9,
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
    assert encoded["notice"]["embed"]["ref"] == {"kind": "server_memory", "id": 412}


def test_db_error_result() -> None:
    refused(texts.db_error("cmd-1"), DB_ERROR)


def test_invalid_command_result() -> None:
    result = texts.invalid_command("cmd-9", "workspace_id does not match the subject")
    assert (result.command_id, result.success, result.data.status) == ("cmd-9", False, COMMAND_INVALID)
    assert result.data.reason == result.error
    assert "workspace_id does not match" in result.error  # type: ignore[operator]


def test_refusal_keeps_extra_fields_and_omits_unset_ones() -> None:
    result = texts.refusal("cmd-2", AMBIGUOUS_USER, "which one?", "why", candidates=["a", "b"])
    data = msgspec.json.decode(msgspec.json.encode(result))["data"]
    assert data == {
        "status": AMBIGUOUS_USER,
        "scope": None,
        "memory_id": None,
        "content_saved": None,
        "content_forgotten": None,
        "reason": "why",
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
        texts.db_error(cmd.command_id).data.status,
        ended(plan, SaveOutcome.SAVED, memory_id=1).data.status,
        ended(plan, SaveOutcome.SAVED_WITH_EVICTION, memory_id=1, evicted_id=2, forgotten="old").data.status,
    }
    assert produced == set(CREATE_STATUSES)


def test_command_from_wire_json() -> None:
    raw = {
        "command_id": "cmd-1",
        "issued_at": "2025-01-01T00:00:00Z",
        "workspace_id": WORKSPACE,
        "persona": {"id": 3, "lineage_id": 7, "name": "Tomori",
                    "naming": {"prefixes": {"neutral": "Sir"}, "suffixes": {"feminine": "-chan"}}},
        "bot_user_id": BOT,
        "triggerer": {"id": TRIGGERER, "name": "Tri"},
        "channel": {"id": "1", "is_dm": False},
        "tool_args": personal_args("sir alice"),
        "member_matches": [{"id": ALICE, "display_name": "Alice", "is_bot": False}],
        "retrieval": {"rag_available": True, "embedding_model": "emb", "embedding_credentials": True},
    }
    cmd = msgspec.convert(raw, CreateMemory)
    plan = planned(decide(cmd, context(Workspace(memory_decay_enabled=True))))
    assert (plan.owner_id, plan.may_evict) == (ALICE, True)


def test_a_decision_reads_back_from_its_stored_json_as_it_was() -> None:
    from worker.kinds.create.record import CreateDecision

    for cmd, ctx in ((command(server_args(), retrieval=READY), context(Workspace(memory_decay_enabled=True))),
                     (command(personal_args("nobody")), context()),
                     (command({"memory_scope": 1}), context()),
                     (command(server_args(" ")), context()),
                     (command(server_args(), triggerer=None), context())):
        decision = decide_create(cmd, parse_tool_args(cmd.tool_args), ctx, LIMITS, NoticeSettings())
        assert msgspec.json.decode(msgspec.json.encode(decision), type=CreateDecision) == decision


def test_ambiguous_result_never_lists_more_than_three() -> None:
    result = texts.ambiguous("cmd-1", "jo", ["Jo A", "Jo B", "Jo C", "Jo D", "Jo E"])
    assert result.data.candidates == ["Jo A", "Jo B", "Jo C"]
    assert "Jo C" in result.error and "Jo D" not in result.error  # type: ignore[operator]
