"""memory.update held to TomoriBot's update_long_term_memory, rule by rule and text by text.

The expected strings are typed from TomoriBot's source, never taken from the worker:
Bredrumb/TomoriBot src/tools/functionCalls/updateLongTermMemoryTool.ts at commit
b09378812a95085582d4723d323ca225399130c8 (the newest stored version), and for the parameter
check BaseTool.validateParameters in src/types/tool/interfaces.ts at
034f1928 (the facts: /work/notes/tomoribot-facts.md, section 2). Each test names the rule of
updateLongTermMemoryTool.ts it holds. Where the worker words a case TomoriBot has none for, the
test says so (docs/tomoribot.md, the parity table).
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.kinds.update import (
    UPDATE_AMBIGUOUS_USER,
    UPDATE_DISABLED,
    UPDATE_ERROR,
    UPDATE_INTERNAL_ERROR,
    UPDATE_INVALID_ARGS,
    UPDATE_INVALID_CONTENT,
    UPDATE_INVALID_SCOPE,
    UPDATE_INVALID_TARGET,
    UPDATE_NOT_FOUND,
    UPDATE_PRIVACY_RESTRICTED,
    UPDATE_USER_NOT_FOUND,
    UpdateMemory,
    UpdateResult,
)
from tests.support.commands import fixed_envelope, update_command
from tests.support.secret_corpus import CREDENTIALS
from worker.domain.context import CreateContext
from worker.domain.notice import NoticeSettings
from worker.domain.people import HostLink, KnownUser, Privacy, ProxyIdentity
from worker.domain.workspace import Limits, Workspace
from worker.kinds.update.arguments import read_update_args
from worker.kinds.update.decision import decide_update
from worker.kinds.update.record import (
    LockedMemory,
    LockedTarget,
    UpdateOutcome,
    UpdatePlan,
    UpdateSecretRefused,
    UpdateSettled,
    settle_update,
)
from worker.kinds.update.rendering import gave_up, render_update

WS = "500000000000000001"
BOT = "900000000000000001"
MIKA = "100000000000000001"
RIN = "100000000000000002"
TRIGGERER = "110000000000000001"
FOX = "pk:0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
MATRIX = "@mx:matrix.org"
LINEAGE = 7
# Usernames equal to display names: the resolved label is the display name alone (TomoriBot's
# formatDiscordUserLabel adds "(@username)" only when they differ).
MEMBERS = [{"id": MIKA, "display_name": "Mika", "username": "mika"},
           {"id": RIN, "display_name": "Rin", "username": "rin"}]
# The conversation's user references, matched on their aliases (TomoriBot's tool_target ones);
# the bot is among them, as TomoriBot's participant index holds it: the only way its id resolves.
PARTICIPANTS = [{"id": MATRIX, "kind": "matrix", "label": "Mx (Matrix)", "aliases": ["Mx"]},
                {"id": FOX, "kind": "proxy", "label": "Fox", "aliases": ["Fox"]},
                {"id": BOT, "kind": "discord", "label": "Tomori", "aliases": ["Tomori"]}]
USERS = {MIKA: KnownUser(11, MIKA), FOX: KnownUser(13, FOX), TRIGGERER: KnownUser(14, TRIGGERER)}


def command(tool_args: Any, **extra: Any) -> UpdateMemory:
    return update_command(WS, tool_args=tool_args, lineage_id=LINEAGE, envelope_fields=fixed_envelope("c-1"), **{
        "member_matches": MEMBERS, "participants": PARTICIPANTS, "bot_user_id": BOT,
        "triggerer": {"id": TRIGGERER, "name": "Kai"}, **extra})


def context(**workspace: Any) -> CreateContext:
    return CreateContext(workspace=Workspace(server_id=1, **workspace), users=USERS)


def decide(tool_args: Any, ctx: CreateContext | None = None, **extra: Any):
    return decide_update(command(tool_args, **extra), read_update_args(tool_args), ctx or context(),
                         Limits(max_memory_length=1000), NoticeSettings())


def answer(tool_args: Any, ctx: CreateContext | None = None, **extra: Any) -> UpdateResult:
    decision = decide(tool_args, ctx, **extra)
    assert not isinstance(decision, UpdatePlan), decision
    return render_update("c-1", decision, None)


def said(result: UpdateResult) -> tuple[str, str | None, str | None]:
    return result.data.status, result.error, result.data.reason


def data(result: UpdateResult) -> dict[str, Any]:
    """`data` as the model reads it, less the keys TomoriBot omits (null here)."""
    return {k: v for k, v in msgspec.to_builtins(result.data).items() if v is not None}


# --- validateParameters (interfaces.ts), step 1 of updateLongTermMemoryTool.ts -------------------


@pytest.mark.parametrize(("tool_args", "text"), [
    ({}, "Invalid parameters: Missing required parameters: memory_id, memory_content"),
    ({"memory_id": None, "memory_content": None}, "Invalid parameters: Missing required parameters: memory_id, memory_content"),
    ({"memory_id": 24}, "Invalid parameters: Missing required parameters: memory_content"),
    ({"memory_content": "x"}, "Invalid parameters: Missing required parameters: memory_id"),
    ({"memory_id": "ID:24", "memory_content": "x"},
     "Invalid parameters: Parameter 'memory_id' expected type 'number' but got 'string'"),
    ({"memory_id": "24", "memory_content": "x"},
     "Invalid parameters: Parameter 'memory_id' expected type 'number' but got 'string'"),
    # Type errors in the arguments' key order, and they win over missing parameters.
    ({"memory_content": 5, "memory_id": True},
     "Invalid parameters: Parameter 'memory_content' expected type 'string' but got 'number', "
     "Parameter 'memory_id' expected type 'number' but got 'boolean'"),
    ({"memory_id": [24]}, "Invalid parameters: Parameter 'memory_id' expected type 'number' but got 'array'"),
    ({"memory_id": {"id": 24}, "memory_content": "x"},
     "Invalid parameters: Parameter 'memory_id' expected type 'number' but got 'object'"),
    # target_user is declared: checked even for a server memory.
    ({"memory_id": 24, "memory_content": "x", "target_user": 5},
     "Invalid parameters: Parameter 'target_user' expected type 'string' but got 'number'"),
])
def test_updateLongTermMemoryTool_validateParameters_refuses_with_tomoribots_text(tool_args, text):
    result = answer(tool_args)
    assert said(result) == (UPDATE_INVALID_ARGS, text, text)
    assert data(result) == {"status": UPDATE_INVALID_ARGS, "reason": text}  # no scope, as TomoriBot


def test_updateLongTermMemoryTool_validateParameters_ignores_unknown_keys_and_undeclared_legacy_names():
    decision = decide({"memory_id": 24, "memory_content": "x", "memory_scope": 5, "target_user_nickname": None})
    assert isinstance(decision, UpdatePlan) and decision.scope == "server"


def test_a_non_object_tool_args_reads_as_no_arguments_the_workers_choice():
    # TomoriBot's tool is always handed an object; the worker reads anything else as {}.
    for raw in ("memory_id: 24", [24, "x"], 24, None):
        assert said(answer(raw))[1] == "Invalid parameters: Missing required parameters: memory_id, memory_content"


# --- step 2: self-teaching --------------------------------------------------------------------


def test_updateLongTermMemoryTool_self_teaching_off_is_disabled_after_the_parameter_check():
    off = context(self_teaching_enabled=False)
    result = answer({"memory_id": 24, "memory_content": "x"}, off)
    assert said(result) == (UPDATE_DISABLED, "Self-teaching is disabled for this server",
                            "Self-teaching functionality is disabled for this server")
    assert said(answer({"memory_id": "24"}, off))[0] == UPDATE_INVALID_ARGS


# --- steps 3 and 4: memory_id, memory_content --------------------------------------------------


@pytest.mark.parametrize("memory_id", [0, -3, 1.5, 2**53, 2**63, 1e300])
def test_updateLongTermMemoryTool_memory_id_must_be_a_positive_safe_integer(memory_id):
    text = "The 'memory_id' argument was missing or invalid."
    assert said(answer({"memory_id": memory_id, "memory_content": ""})) == (UPDATE_INVALID_ARGS, text, text)


@pytest.mark.parametrize(("memory_id", "read"), [(24.0, 24), (2**53 - 1, 2**53 - 1), (1, 1)])
def test_updateLongTermMemoryTool_a_whole_number_is_its_id(memory_id, read):
    decision = decide({"memory_id": memory_id, "memory_content": "x"})
    assert isinstance(decision, UpdatePlan) and decision.memory_id == read


def test_a_legacy_target_name_of_another_type_is_refused_where_tomoribot_throws():
    # `target_user_discord_id?.trim()` of a number throws in TomoriBot (the tool call fails);
    # the worker answers as validateParameters words a declared parameter's type.
    result = answer({"memory_id": 0, "memory_content": "x", "target_user_discord_id": 123})
    text = "Invalid parameters: Parameter 'target_user_discord_id' expected type 'string' but got 'number'"
    assert said(result) == (UPDATE_INVALID_ARGS, text, text)
    # Only a name that is reached: a non-blank target_user comes first, as in `a || b || c`.
    assert decide({"memory_id": 24, "memory_content": "x", "target_user": "Mika",
                   "target_user_discord_id": 123}).scope == "personal"


def test_a_nul_character_is_refused_naming_the_parameter_the_workers_choice():
    # PostgreSQL cannot store U+0000; TomoriBot's write would fail.
    text = "Invalid parameters: Parameter 'memory_content' must not contain NUL characters"
    assert said(answer({"memory_id": 24, "memory_content": "a\x00b"})) == (UPDATE_INVALID_ARGS, text, text)
    named = answer({"memory_id": 24, "memory_content": "x", "target_user": " ", "target_user_nickname": "M\x00"})
    assert said(named)[1] == "Invalid parameters: Parameter 'target_user_nickname' must not contain NUL characters"
    # A name never read (a non-blank one came first) is never stored: no refusal for it.
    assert isinstance(decide({"memory_id": 24, "memory_content": "x", "target_user": "Mika",
                              "target_user_nickname": "M\x00"}), UpdatePlan)


# --- step 5: cleaning, delete, length ---------------------------------------------------------


@pytest.mark.parametrize("blank", ["", " ", "\n\t ", "\ufeff\u3000"])
def test_updateLongTermMemoryTool_blank_content_after_trimming_means_delete(blank):
    decision = decide({"memory_id": 24, "memory_content": blank})
    assert isinstance(decision, UpdatePlan) and decision.deletes


def test_updateLongTermMemoryTool_content_is_sanitized_as_the_create_tool_does():
    decision = decide({"memory_id": 24, "memory_content": "  {{name}} likes {User} and {bot}  "})
    assert isinstance(decision, UpdatePlan) and decision.content == "name likes {User} and {bot}"


def test_updateLongTermMemoryTool_an_update_over_the_limit_is_invalid_content_before_the_target_is_resolved():
    too_long = "\U0001f600" * 500 + "x"  # 1001 UTF-16 units, as JavaScript counts
    result = answer({"memory_id": 24, "memory_content": too_long, "target_user": "Nobody"})
    assert said(result) == (UPDATE_INVALID_CONTENT, "Memory content is too long. Maximum length is 1000 characters.",
                            "Memory content exceeds maximum length of 1000 characters")
    assert isinstance(decide({"memory_id": 24, "memory_content": "\U0001f600" * 500}), UpdatePlan)


# --- step 6: the target -----------------------------------------------------------------------


def test_updateLongTermMemoryTool_an_ambiguous_target():
    two = [{"id": MIKA, "display_name": "Sam", "username": "sam_a"},
           {"id": RIN, "display_name": "Sam", "username": "sam_b"}]
    result = answer({"memory_id": 24, "memory_content": "x", "target_user": " Sam "}, member_matches=two)
    assert said(result) == (UPDATE_AMBIGUOUS_USER,
                            'Multiple users match "Sam". Please clarify which one you mean: Sam (@sam_a), Sam (@sam_b).',
                            "Multiple users matched the requested target.")
    assert data(result) == {"status": UPDATE_AMBIGUOUS_USER, "reason": "Multiple users matched the requested target.",
                            "candidates": ["Sam (@sam_a)", "Sam (@sam_b)"]}


def test_updateLongTermMemoryTool_a_target_nobody_matches():
    result = answer({"memory_id": 24, "memory_content": "x", "target_user": "Nobody"})
    assert said(result) == (UPDATE_USER_NOT_FOUND,
                            'Could not find a user matching "Nobody" in this conversation or server.',
                            "The requested user was not found in this conversation or server.")


def test_updateLongTermMemoryTool_the_legacy_names_are_read_when_target_user_is_blank():
    decision = decide({"memory_id": 24, "memory_content": "x", "target_user": "  ", "target_user_nickname": "Mika"})
    assert isinstance(decision, UpdatePlan) and (decision.scope, decision.owner_id) == ("personal", MIKA)


def test_updateLongTermMemoryTool_a_bridge_user_has_no_personal_memories():
    result = answer({"memory_id": 24, "memory_content": "x", "target_user": MATRIX})
    assert said(result) == (UPDATE_INVALID_SCOPE,
                            "Bridge users only support server-wide memories, so personal memories cannot be updated "
                            "for them.", "Bridge users do not support personal memory updates.")


# --- step 7: server context -------------------------------------------------------------------


def test_updateLongTermMemoryTool_a_persona_without_id_is_missing_server_context_after_resolution():
    text = "Internal bot error: Missing server context"
    no_persona = {"persona": {"id": 0, "lineage_id": LINEAGE, "name": "Tomori"}}
    assert said(answer({"memory_id": 24, "memory_content": "x"}, **no_persona)) == (
        UPDATE_INTERNAL_ERROR, text, text)
    assert said(answer({"memory_id": 24, "memory_content": "x", "target_user": "Nobody"}, **no_persona))[0] == (
        UPDATE_USER_NOT_FOUND)


def test_updateLongTermMemoryTool_has_no_lineage_0_guard():
    decision = decide({"memory_id": 24, "memory_content": "x"}, persona={"id": 1, "lineage_id": 0, "name": "T"})
    assert isinstance(decision, UpdatePlan) and decision.lineage_id == 0


# --- step 10: the personal scope before the lock ----------------------------------------------


def test_updateLongTermMemoryTool_the_bot_is_an_invalid_target():
    result = answer({"memory_id": 24, "memory_content": "x", "target_user": "Tomori"})
    assert said(result) == (UPDATE_INVALID_TARGET,
                            "Cannot update personal memories about the bot. Use a server memory instead.",
                            "Personal memories cannot be updated about the bot itself.")


def test_updateLongTermMemoryTool_has_no_self_and_the_bot_resolves_only_as_a_participant():
    # TomoriBot's update (and its resolver) has no "self": it names nobody unless someone is called so.
    assert said(answer({"memory_id": 24, "memory_content": "x", "target_user": "self"}))[0] == UPDATE_USER_NOT_FOUND
    # The bot's id resolves through the conversation's participants (`targetId === client.user?.id`) ...
    assert said(answer({"memory_id": 24, "memory_content": "x", "target_user": BOT}))[0] == UPDATE_INVALID_TARGET
    # ... never through the guild's members: bots are filtered from them.
    bot_member = [{"id": BOT, "display_name": "Tomori", "username": "tomori", "is_bot": True}]
    alone = answer({"memory_id": 24, "memory_content": "x", "target_user": BOT}, participants=[],
                   member_matches=bot_member)
    assert said(alone)[0] == UPDATE_USER_NOT_FOUND
    assert said(answer({"memory_id": 24, "memory_content": "x", "target_user": "Tomori"}, participants=[],
                       member_matches=bot_member))[0] == UPDATE_USER_NOT_FOUND


def test_updateLongTermMemoryTool_a_target_without_a_users_row_is_unknown():
    result = answer({"memory_id": 24, "memory_content": "", "target_user": "Rin"})
    assert said(result) == (UPDATE_USER_NOT_FOUND, "I don't know Rin yet, so this personal memory cannot be updated.",
                            "I can only update personal memories for users I already know.")


def test_updateLongTermMemoryTool_in_a_guild_the_owner_must_be_a_member_unless_a_proxy_identity():
    text = "Personal memory owner is not in this server"
    left = [{"id": MIKA, "kind": "discord", "label": "Mika", "aliases": ["Mika"]}]  # no member (not in member_matches)
    result = answer({"memory_id": 24, "memory_content": "x", "target_user": "Mika"}, participants=left, member_matches=[])
    assert said(result) == (UPDATE_INVALID_SCOPE, text, text)
    assert decide({"memory_id": 24, "memory_content": "x", "target_user": "Fox"}, member_matches=[]).scope == "personal"


def test_updateLongTermMemoryTool_in_a_dm_the_owner_must_be_the_person_talking():
    text = "Personal memory owner is not in this conversation"
    dm = {"channel": {"id": "120000000000000001", "is_dm": True}}
    talker = [{"id": TRIGGERER, "kind": "discord", "label": "Kai", "aliases": ["Kai"]}]
    assert said(answer({"memory_id": 24, "memory_content": "x", "target_user": "Fox"}, **dm)) == (
        UPDATE_INVALID_SCOPE, text, text)
    assert said(answer({"memory_id": 24, "memory_content": "x", "target_user": "Kai"}, participants=talker,
                       triggerer=None, **dm))[1] == text
    decision = decide({"memory_id": 24, "memory_content": "x", "target_user": "Kai"}, participants=talker, **dm)
    assert isinstance(decision, UpdatePlan) and decision.owner_id == TRIGGERER and not decision.in_guild


# --- step 10 under the lock: privacy, hosts, existence (settle_update) ------------------------


def plan(tool_args: dict[str, Any], **extra: Any) -> UpdatePlan:
    decision = decide(tool_args, **extra)
    assert isinstance(decision, UpdatePlan), decision
    return decision


ROW = LockedMemory(lineage_id=LINEAGE, content="{user} hikes", source="model", manually_written=False)
EDIT_MIKA = {"memory_id": 24, "memory_content": "{user} climbs", "target_user": "Mika"}
DELETE_MIKA = {"memory_id": 24, "memory_content": "", "target_user": "Mika"}


@pytest.mark.parametrize("level", [Privacy.PARTIAL, Privacy.FULL])
def test_updateLongTermMemoryTool_privacy_partial_or_full_blocks_an_update_never_a_delete(level):
    refused = render_update("c-1", edit := plan(EDIT_MIKA), settle_update(edit, LockedTarget(ROW, level)))
    assert said(refused) == (UPDATE_PRIVACY_RESTRICTED, "Cannot update personal memory: Mika has privacy restrictions.",
                             "The user Mika has chosen to restrict personal memory storage.")
    deleted = settle_update(plan(DELETE_MIKA), LockedTarget(ROW, level))
    assert deleted.outcome == UpdateOutcome.DELETED


@pytest.mark.parametrize(("host", "reason"), [
    (HostLink(RIN, Privacy.FULL), "The host account for Fox has full privacy enabled. I cannot update personal memories "
                                  "for its message-proxy identities."),
    (HostLink(RIN, blacklisted=True), "The host account for Fox is blacklisted in this server. I cannot update personal "
                                      "memories for its message-proxy identities."),
])
def test_updateLongTermMemoryTool_a_protecting_host_blocks_an_update_of_its_identity(host, reason):
    edit = plan({"memory_id": 24, "memory_content": "x", "target_user": "Fox"})
    locked = LockedTarget(ROW, identity=ProxyIdentity(13, FOX, (host,)))
    assert said(render_update("c-1", edit, settle_update(edit, locked))) == (
        UPDATE_PRIVACY_RESTRICTED, "Cannot update personal memory: Fox has privacy restrictions.", reason)
    partial = LockedTarget(ROW, identity=ProxyIdentity(13, FOX, (HostLink(RIN, Privacy.PARTIAL),)))
    assert settle_update(edit, partial).outcome == UpdateOutcome.UPDATED  # PARTIAL host privacy does not protect


def test_an_identity_without_a_host_is_protected_the_workers_fail_closed_rule():
    edit = plan({"memory_id": 24, "memory_content": "x", "target_user": "Fox"})
    result = render_update("c-1", edit, settle_update(edit, LockedTarget(ROW, identity=ProxyIdentity(13, FOX, ()))))
    assert result.data.reason == ("The host account for Fox could not be found. I cannot update personal memories for "
                                  "its message-proxy identities.")


def test_updateLongTermMemoryTool_a_memory_not_found():
    server_text, personal_text = "Memory ID not found in this server", "Personal memory ID not found"
    server = plan({"memory_id": 24, "memory_content": ""})
    assert said(render_update("c-1", server, settle_update(server, LockedTarget(None)))) == (
        UPDATE_NOT_FOUND, server_text, server_text)
    personal = plan(DELETE_MIKA)
    assert said(render_update("c-1", personal, settle_update(personal, LockedTarget(None)))) == (
        UPDATE_NOT_FOUND, personal_text, personal_text)


# --- the successes ----------------------------------------------------------------------------


def done(tool_args: dict[str, Any], **locked: Any) -> UpdateResult:
    decided = plan(tool_args)
    return render_update("c-1", decided, settle_update(decided, LockedTarget(ROW, **locked)))


def test_updateLongTermMemoryTool_the_four_successes_have_its_messages_and_data():
    server_update = done({"memory_id": 24, "memory_content": "{user} climbs"})
    assert (server_update.message, data(server_update)) == ("Server memory updated successfully", {
        "status": "memory_updated_successfully", "scope": "server_wide", "memory_id": 24,
        "content_saved": "{user} climbs"})
    server_delete = done({"memory_id": 24, "memory_content": ""})
    assert (server_delete.message, data(server_delete)) == ("Server memory deleted successfully", {
        "status": "memory_deleted_successfully", "scope": "server_wide", "memory_id": 24,
        "content_deleted": "{user} hikes"})
    personal_update = done(EDIT_MIKA)
    assert (personal_update.message, data(personal_update)) == ("Personal memory updated successfully", {
        "status": "memory_updated_successfully", "scope": "target_user", "memory_id": 24,
        "content_saved": "{user} climbs", "target_user": "Mika"})
    personal_delete = done(DELETE_MIKA)
    assert (personal_delete.message, data(personal_delete)) == ("Personal memory deleted successfully", {
        "status": "memory_deleted_successfully", "scope": "target_user", "memory_id": 24,
        "content_deleted": "{user} hikes", "target_user": "Mika"})
    assert all(r.success and r.error is None for r in (server_update, server_delete, personal_update, personal_delete))


@pytest.mark.parametrize(("tool_args", "color", "title", "title_vars", "description_vars"), [
    ({"memory_id": 24, "memory_content": "{user} climbs"}, "memory_update", "server_memory_updated",
     {"persona_nickname": "Tomori"}, {"memory_id": "24", "memory_content": "{user} climbs"}),
    ({"memory_id": 24, "memory_content": ""}, "error", "server_memory_deleted",
     {"persona_nickname": "Tomori"}, {"memory_id": "24", "memory_content": "{user} hikes"}),
    (EDIT_MIKA, "memory_update", "personal_memory_updated", {"user_nickname": "Mika", "persona_nickname": "Tomori"},
     {"user_nickname": "Mika", "memory_id": "24", "memory_content": "{user} climbs"}),
    (DELETE_MIKA, "error", "personal_memory_deleted", {"user_nickname": "Mika", "persona_nickname": "Tomori"},
     {"user_nickname": "Mika", "memory_id": "24", "memory_content": "{user} hikes"}),
])
def test_updateLongTermMemoryTool_notices_use_its_keys_colors_and_variables_and_no_ref(
        tool_args, color, title, title_vars, description_vars):
    embed = done(tool_args).notice["embed"]
    assert embed == {
        "color": color, "title_key": f"genai.self_teach.{title}_title", "title_vars": title_vars,
        "description_key": f"genai.self_teach.{title}_description", "description_vars": description_vars,
        "footer_key": embed["footer_key"], "full_content": description_vars["memory_content"], "ref": None}


def test_updateLongTermMemoryTool_footer_variants():
    prefix = "genai.self_teach."
    assert done({"memory_id": 24, "memory_content": "x"}).notice["embed"]["footer_key"] == f"{prefix}server_memory_footer"
    assert done(EDIT_MIKA).notice["embed"]["footer_key"] == f"{prefix}personal_memory_footer_manage"
    assert done(EDIT_MIKA, blacklisted=True).notice["embed"]["footer_key"] == (
        f"{prefix}personal_memory_footer_user_blacklisted")
    off = plan(EDIT_MIKA, ctx=context(personal_memories_enabled=False))
    facts = settle_update(off, LockedTarget(ROW, blacklisted=True))
    assert render_update("c-1", off, facts).notice["embed"]["footer_key"] == (
        f"{prefix}personal_memory_footer_personalization_disabled")  # the first variant that applies


def test_updateLongTermMemoryTool_the_blacklist_footer_is_a_guilds_only():
    dm = {"channel": {"id": "120000000000000001", "is_dm": True}, "triggerer": {"id": MIKA, "name": "Mika"},
          "participants": [{"id": MIKA, "kind": "discord", "label": "Mika", "aliases": ["Mika"]}]}
    decided = plan(EDIT_MIKA, **dm)
    assert not settle_update(decided, LockedTarget(ROW, blacklisted=True)).blacklisted


def test_updateLongTermMemoryTool_a_throw_is_memory_update_failed_error():
    text = "Error occurred while updating memory"
    assert said(gave_up("c-1")) == (UPDATE_ERROR, text, text)


def test_a_settled_plan_without_facts_is_refused_as_a_storage_fault():
    with pytest.raises(ValueError, match="without what it learned"):
        render_update("c-1", plan(EDIT_MIKA), None)
    assert UpdateSettled(UpdateOutcome.NOT_FOUND) == msgspec.json.decode(b'{"outcome":"not_found"}', type=UpdateSettled)


# --- the worker's one deliberate difference (issue 39): no credential is remembered -------------


@pytest.mark.parametrize("credential", CREDENTIALS[::9], ids=lambda c: c.kind)
def test_an_edit_holding_a_credential_is_refused_by_the_workers_guard_and_stores_its_kind_only(credential):
    """TomoriBot's update saves whatever it is sent; the worker refuses an edit that holds a
    credential as invalid content, right after the length check, never saying the secret."""
    tool_args = {"memory_id": 24, "memory_content": credential.content}
    decision = decide(tool_args)
    assert decision == UpdateSecretRefused(credential.kind)
    assert credential.secret not in msgspec.json.encode(decision).decode()
    status, error, reason = said(answer(tool_args))
    assert status == UPDATE_INVALID_CONTENT and error == reason
    assert credential.secret not in (error or "") and "update_long_term_memory" in (error or "")


def test_the_guard_is_the_workspaces_then_the_operators_and_never_refuses_a_delete():
    tool_args = {"memory_id": 24, "memory_content": CREDENTIALS[0].content}
    assert isinstance(decide(tool_args, context(secret_guard_enabled=False)), UpdatePlan)
    guarded_off = decide_update(command(tool_args), read_update_args(tool_args), context(),
                                Limits(max_memory_length=1000, secret_guard_default=False), NoticeSettings())
    assert isinstance(guarded_off, UpdatePlan)
    assert isinstance(decide({"memory_id": 24, "memory_content": "   "}), UpdatePlan)  # a delete
