"""`memory.create` against TomoriBot's `create_long_term_memory`: every text the model reads, the
result's keys, and the order of the checks, case by case.

The expected strings are typed from TomoriBot's source (Bredrumb/TomoriBot), never read from
it: src/tools/functionCalls/memoryTool.ts @60e529b0 (60e529b00fca2c888aeb31ec36cdf7314bf1b431) for
the checks and texts, @910f1d36 for the notice's ref; src/types/tool/interfaces.ts @034f1928 for
the parameter check; src/utils/misc/memoryLimits.ts for the length texts. Where TomoriBot has no
such case the worker's own wording is held here too, marked "worker-only".
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.kinds.create import (
    AMBIGUOUS_USER,
    DB_ERROR,
    DISABLED,
    INTERNAL_ERROR,
    INVALID_ARGS,
    INVALID_CONTENT,
    LIMIT_EXCEEDED,
    PRIVACY_RESTRICTED,
    USER_NOT_FOUND,
)
from contracts.result_parts import CacheKey
from contracts.tool_call import MemberMatch, Participant
from tests.unit.test_create_decision import (
    ALICE,
    ALICE_LABEL,
    BOB,
    PROXY,
    TRIGGERER,
    TRIGGERER_ROW,
    WORKSPACE,
    command,
    context,
    decide,
    ended,
    personal_args,
    planned,
    server_args,
)
from worker.domain.context import CreateContext
from worker.domain.people import HostLink, KnownUser, ProxyIdentity
from worker.domain.workspace import Workspace
from worker.kinds.create import texts
from worker.kinds.create.outcome import SaveOutcome

CRITICAL = "Internal bot error: Critical state information is missing"


def data(result: Any) -> dict[str, Any]:
    """The result's `data` as the model gets it (JSON)."""
    encoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(result))["data"]
    return encoded


def refusal(result: Any, status: str, error: str, reason: str, **keys: Any) -> None:
    """The refusal says `error` and `reason`; `keys` are the data keys it has beyond status and
    reason (the contract's always-present keys are null unless listed)."""
    assert result.success is False and result.message is None
    assert result.error == error
    expected = {"status": status, "reason": reason, "scope": None, "memory_id": None, "content_saved": None,
                "content_forgotten": None, **keys}
    assert data(result) == expected


# --- memoryTool.ts @60e529b0, step 1: this.validateParameters(args) ---------------------------


@pytest.mark.parametrize(("tool_args", "text"), [
    ({"memory_content": "x", "memory_scope": "global"},
     "Invalid parameters: Parameter 'memory_scope' must be one of: server_wide, target_user"),
    ({}, "Invalid parameters: Missing required parameters: memory_content, memory_scope"),
    ({"memory_scope": "server_wide"}, "Invalid parameters: Missing required parameters: memory_content"),
    ({"memory_content": "x", "memory_scope": "server_wide", "target_user": 42},
     "Invalid parameters: Parameter 'target_user' expected type 'string' but got 'number'"),
    ({"memory_content": ["x"], "memory_scope": 1},
     "Invalid parameters: Parameter 'memory_content' expected type 'string' but got 'array', "
     "Parameter 'memory_scope' expected type 'string' but got 'number'"),
])
def test_invalid_parameters(tool_args: dict[str, Any], text: str) -> None:
    refusal(decide(command(tool_args)), INVALID_ARGS, text, text)


def test_a_legacy_target_name_of_another_type() -> None:
    """Worker-only: TomoriBot's `target_user_discord_id?.trim()` throws on a number; worded as its check."""
    text = "Invalid parameters: Parameter 'target_user_discord_id' expected type 'string' but got 'number'"
    refusal(decide(command({"memory_content": "x", "memory_scope": "target_user", "target_user_discord_id": 5})),
            INVALID_ARGS, text, text)


# --- step 2: isEnabled ------------------------------------------------------------------------


def test_self_teaching_disabled() -> None:
    refusal(decide(command(personal_args()), context(Workspace(self_teaching_enabled=False))), DISABLED,
            "Self-teaching is disabled for this server", "Self-teaching functionality is disabled for this server")


# --- step 3: the critical state -------------------------------------------------------------


@pytest.mark.parametrize(("cmd", "ctx"), [
    (command(server_args(), triggerer=None), context()),
    (command(server_args()), context(triggerer_known=False)),
    (command(personal_args(), persona_id=0), context()),
    (command(personal_args("nobody"), triggerer=None), context()),
], ids=["no-triggerer", "triggerer-without-users-row", "persona-id-0", "before-the-target"])
def test_critical_state_missing(cmd: Any, ctx: CreateContext) -> None:
    refusal(decide(cmd, ctx), INTERNAL_ERROR, CRITICAL, CRITICAL)


# --- steps 4 to 6: content, scope, target ------------------------------------------------------


@pytest.mark.parametrize("content", ["", "   ", "\n\t\ufeff"])
def test_blank_content(content: str) -> None:
    text = "The 'memory_content' argument was missing, empty, or not a string"
    refusal(decide(command(server_args(content))), INVALID_ARGS, text, text)


@pytest.mark.parametrize("targets", [{}, {"target_user": "  "}, {"target_user": "", "target_user_nickname": " "}])
def test_target_required(targets: dict[str, Any]) -> None:
    text = "The 'target_user' argument is required when 'memory_scope' is 'target_user'."
    refusal(decide(command({"memory_content": "x", "memory_scope": "target_user", **targets})),
            INVALID_ARGS, text, text, scope="target_user")


def test_ambiguous() -> None:
    members = [MemberMatch(id=str(10**17 + i), display_name="Sam", username=f"sam{i}") for i in range(4)]
    labels = ["Sam (@sam0)", "Sam (@sam1)", "Sam (@sam2)"]
    refusal(decide(command(personal_args("  Sam "), members=members)), AMBIGUOUS_USER,
            'Multiple users match "Sam". Please clarify which one you mean: Sam (@sam0), Sam (@sam1), Sam (@sam2).',
            "Multiple users matched the requested target.", scope="target_user", candidates=labels,
            target_user="Sam")


def test_not_found() -> None:
    refusal(decide(command(personal_args(" Zed "))), USER_NOT_FOUND,
            'Could not find a user matching "Zed" in this conversation or server.',
            "The requested user was not found in this conversation or server.", scope="target_user",
            target_user="Zed")


# --- steps 7 and 8: sanitize, then memoryLimits.ts validateMemoryContent ----------------------------


def test_content_empty_after_a_bridge_users_name_replaced_it() -> None:
    bridge = Participant(id="@mx:matrix.org", kind="matrix", label=" (Matrix)", aliases=["mx"])
    refusal(decide(command(personal_args("mx", "{user}"), participants=[bridge])), INVALID_CONTENT,
            "Memory content cannot be empty", "Memory content cannot be empty")


def test_content_too_long() -> None:
    refusal(decide(command(server_args("a" * 1001))), INVALID_CONTENT,
            "Memory content is too long. Maximum length is 1000 characters.",
            "Memory content exceeds maximum length of 1000 characters")


@pytest.mark.parametrize(("tool_args", "parameter"), [(server_args("tea\x00"), "memory_content"),
                                                   (personal_args("Ali\x00ce"), "target_user")])
def test_nul_character(tool_args: dict[str, Any], parameter: str) -> None:
    """Worker-only: PostgreSQL cannot store NUL (TomoriBot fails at its insert)."""
    text = f"Invalid parameters: Parameter '{parameter}' must not contain NUL characters"
    refusal(decide(command(tool_args)), INVALID_ARGS, text, text)


# --- step 9: the lineage guard ------------------------------------------------------------------


@pytest.mark.parametrize("tool_args", [server_args(), personal_args()])
def test_lineage_zero(tool_args: dict[str, Any]) -> None:
    refusal(decide(command(tool_args, lineage=0)), INTERNAL_ERROR,
            "Internal configuration error: this persona has an invalid lineage ID.",
            "Persona lineage ID is 0, which is reserved for global memories. Schema migration may not have run.")


# --- step 11: the personal branch ---------------------------------------------------------------


def test_no_users_row() -> None:
    refusal(decide(command(personal_args()), context(users={})), USER_NOT_FOUND,
            f"I don't know {ALICE_LABEL} yet, so I cannot save a personal memory for them.",
            "I can only save personal memories for users I already know.", scope="target_user",
            target_user=ALICE_LABEL)


NOVA = Participant(id=PROXY, kind="proxy", label="Nova", aliases=["Nova"])


@pytest.mark.parametrize(("host", "reason"), [
    (HostLink(ALICE, blacklisted=True), "The host account for Nova is blacklisted in this server. I cannot save"
                                        " personal memories for its message-proxy identities."),
    (HostLink(ALICE, privacy_level=2), "The host account for Nova has full privacy enabled. I cannot save personal"
                                       " memories for its message-proxy identities."),
    # Worker-only (fail closed): TomoriBot saves for an identity it cannot trace to a host.
    (None, "The host account for Nova could not be found. I cannot save personal memories for its message-proxy"
           " identities."),
])
def test_host_protection(host: HostLink | None, reason: str) -> None:
    ctx = CreateContext(users={PROXY: KnownUser(99, PROXY), TRIGGERER: TRIGGERER_ROW},
                        proxies={PROXY: ProxyIdentity(99, PROXY, (host,) if host else ())})
    refusal(decide(command(personal_args("Nova"), participants=[NOVA]), ctx), PRIVACY_RESTRICTED,
            "Cannot save personal memory: Nova has privacy restrictions.", reason, scope="target_user",
            target_user="Nova")


def test_host_protection_changed_under_the_lock() -> None:
    """Worker-only: the hosts are read again under the owner lock."""
    plan = planned(decide(command(personal_args())))
    refusal(ended(plan, SaveOutcome.HOST_PROTECTED), PRIVACY_RESTRICTED,
            f"Cannot save personal memory: {ALICE_LABEL} has privacy restrictions.",
            f"The host account for {ALICE_LABEL} changed its privacy or blacklist status while I was saving. I cannot"
            " save personal memories for its message-proxy identities.", scope="target_user", target_user=ALICE_LABEL)


PRIVACY_REASON = (f"The user {ALICE_LABEL} has chosen to restrict personal memory storage. I cannot save personal"
                  " memories about them unless they change their privacy settings using '/personal config'.")


@pytest.mark.parametrize("level", [1, 2, 7])
def test_privacy(level: int) -> None:
    ctx = context(users={ALICE: KnownUser(11, ALICE, privacy_level=level)})
    refusal(decide(command(personal_args()), ctx), PRIVACY_RESTRICTED,
            f"Cannot save personal memory: {ALICE_LABEL} has privacy restrictions.", PRIVACY_REASON,
            scope="target_user", target_user=ALICE_LABEL)


@pytest.mark.parametrize("outcome", [SaveOutcome.PRIVACY_PARTIAL, SaveOutcome.PRIVACY_FULL])
def test_privacy_read_again_under_the_lock(outcome: SaveOutcome) -> None:
    refusal(ended(planned(decide(command(personal_args()))), outcome), PRIVACY_RESTRICTED,
            f"Cannot save personal memory: {ALICE_LABEL} has privacy restrictions.", PRIVACY_REASON,
            scope="target_user", target_user=ALICE_LABEL)


# --- steps 10 and 11: the limits (worker: under the owner lock) --------------------------------------


@pytest.mark.parametrize("outcome", [SaveOutcome.AT_CAP, SaveOutcome.OVER_CAP])
def test_server_limit(outcome: SaveOutcome) -> None:
    refusal(ended(planned(decide(command(server_args()))), outcome, count=50), LIMIT_EXCEEDED,
            "Server memory limit reached. This server can have up to 50 memories (currently: 50).",
            "Server memory limit of 50 memories has been reached. Please inform the user that they need to use"
            " '/memories' to remove some memories before I can learn new ones.",
            scope="server_wide", current_count=50, max_allowed=50)


def test_personal_limit() -> None:
    refusal(ended(planned(decide(command(personal_args()))), SaveOutcome.AT_CAP, count=21), LIMIT_EXCEEDED,
            "Personal memory limit reached. Users can have up to 20 personal memories (currently: 21).",
            "Personal memory limit of 20 memories has been reached for this user. Please inform the user that they"
            " need to use '/personal memories' to remove some of their memories before I can learn new ones about"
            " them.", scope="target_user", target_user=ALICE_LABEL, current_count=21, max_allowed=20)


def test_db_error() -> None:
    """The worker gives up after its retries: TomoriBot's words for a thrown database error."""
    refusal(texts.db_error("cmd-1"), DB_ERROR, "Database error occurred while saving memory",
            "Database error occurred")


# --- success ----------------------------------------------------------------------------------------


def test_server_saved() -> None:
    result = ended(planned(decide(command(server_args()))), SaveOutcome.SAVED, memory_id=7)
    assert (result.success, result.message, result.error) == (True, "Memory saved successfully", None)
    assert data(result) == {"status": "memory_saved_successfully", "scope": "server_wide", "memory_id": 7,
                            "content_saved": "{user} likes tea", "content_forgotten": None, "reason": None}


def test_personal_saved() -> None:
    result = ended(planned(decide(command(personal_args()))), SaveOutcome.SAVED, memory_id=8)
    assert (result.success, result.message, result.error) == (True, "Memory saved successfully", None)
    assert data(result) == {"status": "memory_saved_successfully", "scope": "target_user", "memory_id": 8,
                            "content_saved": "{user} likes tea", "content_forgotten": None, "reason": None,
                            "target_user": ALICE_LABEL}
    assert result.invalidated == [CacheKey("user", ALICE)]


@pytest.mark.parametrize("target", ["self", "SELF"])
def test_self_resolved_is_saved_server_wide(target: str) -> None:
    someone = Participant(id=BOB, label="Self", aliases=["Self"])
    result = ended(planned(decide(command(personal_args(target), participants=[someone]))), SaveOutcome.SAVED,
                   memory_id=3)
    assert (data(result)["scope"], "target_user" in data(result)) == ("server_wide", False)
    assert result.invalidated[0].key == WORKSPACE


# --- the notice: memoryTool.ts @910f1d36 (embed options and ref) and @60e529b0 (footer) --------------


def test_server_notice_embed() -> None:
    result = ended(planned(decide(command(server_args()))), SaveOutcome.SAVED, memory_id=7)
    assert result.notice is not None and result.notice["embed"] == {
        "color": "success",
        "title_key": "genai.self_teach.server_memory_learned_title",
        "title_vars": {"persona_nickname": "Tomori"},
        "description_key": "genai.self_teach.server_memory_learned_description",
        "description_vars": {"memory_content": "{user} likes tea"},
        "footer_key": "genai.self_teach.server_memory_footer",
        "full_content": "{user} likes tea",
        "ref": {"kind": "server_memory", "id": 7},
    }


@pytest.mark.parametrize(("workspace", "blacklisted", "footer"), [
    (Workspace(), False, "genai.self_teach.personal_memory_footer_manage"),
    (Workspace(), True, "genai.self_teach.personal_memory_footer_user_blacklisted"),
    (Workspace(personal_memories_enabled=False), True,
     "genai.self_teach.personal_memory_footer_personalization_disabled"),
])
def test_personal_notice_embed(workspace: Workspace, blacklisted: bool, footer: str) -> None:
    """personal_memories_enabled off saves: only the footer says so (memoryTool.ts never refuses on it)."""
    ctx = context(workspace, {ALICE: KnownUser(11, ALICE, blacklisted=blacklisted)})
    result = ended(planned(decide(command(personal_args()), ctx)), SaveOutcome.SAVED, memory_id=8)
    assert result.success and result.notice is not None
    assert result.notice["embed"] == {
        "color": "success",
        "title_key": "genai.self_teach.personal_memory_learned_title",
        "title_vars": {"user_nickname": ALICE_LABEL, "persona_nickname": "Tomori"},
        "description_key": "genai.self_teach.personal_memory_learned_description",
        "description_vars": {"user_nickname": ALICE_LABEL, "memory_content": "{user} likes tea"},
        "footer_key": footer,
        "full_content": "{user} likes tea",
        "ref": {"kind": "personal_memory", "id": 8},
    }


# --- the order of the checks (memoryTool.ts @60e529b0, execute) ----------------------------------------


def test_the_order_of_the_checks() -> None:
    """One command with every problem; each is fixed in turn, and the next check answers."""
    problems: dict[str, Any] = {"args": True, "teaching": True, "legacy": True, "triggerer": True, "blank": True,
                                "target": True, "long": True, "lineage": True, "row": True, "privacy": True}
    expected = [INVALID_ARGS, DISABLED, INVALID_ARGS, INTERNAL_ERROR, INVALID_ARGS,
                USER_NOT_FOUND, INVALID_CONTENT, INTERNAL_ERROR, USER_NOT_FOUND,
                PRIVACY_RESTRICTED]
    seen = []
    for problem in problems:
        tool_args: dict[str, Any] = {"memory_content": " " if problems["blank"] else
                                     ("a" * 1001 if problems["long"] else "x"),
                                     "memory_scope": "global" if problems["args"] else "target_user",
                                     "target_user": "nobody" if problems["target"] else "Alice"}
        if problems["legacy"]:
            tool_args = {**tool_args, "target_user": " ", "target_user_discord_id": 5}
        users = {} if problems["row"] else {ALICE: KnownUser(11, ALICE, privacy_level=2 if problems["privacy"] else 0)}
        ctx = context(Workspace(self_teaching_enabled=not problems["teaching"]), users,
                      triggerer_known=not problems["triggerer"])
        seen.append(decide(command(tool_args, lineage=0 if problems["lineage"] else 7), ctx).data.status)
        problems[problem] = False
    assert seen == expected
    assert planned(decide(command(personal_args()))).owner_id == ALICE
