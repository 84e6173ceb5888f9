"""The `memory.manual` decision: who may act, then add, add_batch, edit and remove (docs/design.md, section 8.1)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.kinds.manual import (
    ALL_DUPLICATES,
    BATCH_LIMIT_REACHED,
    BLACKLISTED,
    CONTENT_TOO_LONG,
    EMPTY_CONTENT,
    HOST_PROTECTED,
    LIMIT_REACHED,
    NOT_FOUND,
    PRIVACY_BLOCKED,
    TEACHING_DISABLED,
    ManualMemory,
)
from tests.support.commands import fixed_envelope, manual_command
from worker.domain.people import HostLink, ProxyIdentity
from worker.domain.proxy import HOST_BLACKLISTED, HOST_FULL_PRIVACY, NO_HOST
from worker.domain.workspace import Limits, Workspace
from worker.kinds.manual.context import ManualContext, PanelMemory
from worker.kinds.manual.decided import Delete, Insert, ManualDecision, Refuse, Unchanged, Update
from worker.kinds.manual.decision import decide_manual

ALICE = "100000000000000001"
BOB = "100000000000000002"
IDENTITY = "pk:0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
LIMITS = Limits(max_memory_length=20, max_server_memories=5, max_personal_memories=3)
LINEAGE = 7
ACTIONS = ["add", "add_batch", "edit", "remove"]
WRITES = ["add", "add_batch", "edit"]
OPEN_IDENTITY = ProxyIdentity(99, IDENTITY, (HostLink(ALICE),))


def manual(
    action: str = "add",
    *,
    scope: str = "server",
    manager: bool = False,
    actor: str = ALICE,
    lineage: int = LINEAGE,
    identity_id: str | None = None,
    memory_id: int | None = None,
    content: str | None = None,
    contents: list[str] | None = None,
    tags: str | list[str] | None = None,
) -> ManualMemory:
    if action in ("edit", "remove") and memory_id is None:
        memory_id = 41
    if action == "add" and content is None:
        content = "tea is hot"
    return manual_command("500000000000000001", actor=actor, is_manager=manager, scope=scope, action=action,
                          lineage_id=lineage, persona_id=None, identity_id=identity_id, memory_id=memory_id,
                          content=content, contents=contents, tags=tags, envelope_fields=fixed_envelope("m-1"))


def row(
    memory_id: int = 41,
    content: str = "tea is hot",
    tags: tuple[str, ...] = ("drinks",),
    *,
    manually_written: bool = True,
    taught_by: str | None = ALICE,
    lineage: int = LINEAGE,
) -> PanelMemory:
    return PanelMemory(memory_id, lineage, content, tags, manually_written, taught_by)


def context(**kwargs: Any) -> ManualContext:
    kwargs.setdefault("target", row())
    return ManualContext(**kwargs)


def decide(cmd: ManualMemory, ctx: ManualContext | None = None, limits: Limits = LIMITS) -> ManualDecision:
    return decide_manual(cmd, ctx or context(), limits)


def refused(decision: ManualDecision, status: str) -> Refuse:
    assert isinstance(decision, Refuse), decision
    assert decision.status == status
    assert decision.reason and decision.reason[0].isupper()
    return decision


def any_action(action: str, **kwargs: Any) -> ManualMemory:
    """A command of `action` that passes every action check when the actor may act."""
    if action == "add_batch":
        kwargs.setdefault("contents", ["one", "two"])
    if action == "edit":
        kwargs.setdefault("content", "tea is warm")
    return manual(action, **kwargs)


# --- server scope: who may act ---------------------------------------------------------------


@pytest.mark.parametrize("action", ACTIONS)
def test_blacklisted_non_manager_is_refused(action: str) -> None:
    result = refused(decide(any_action(action), context(actor_blacklisted=True)), BLACKLISTED)
    assert "server manager" in result.reason


@pytest.mark.parametrize("action", ACTIONS)
def test_blacklisted_manager_may_act(action: str) -> None:
    assert not isinstance(decide(any_action(action, manager=True), context(actor_blacklisted=True)), Refuse)


@pytest.mark.parametrize("action", WRITES)
def test_teaching_disabled_refuses_non_manager_writes(action: str) -> None:
    ctx = context(workspace=Workspace(member_teaching_enabled=False))
    result = refused(decide(any_action(action), ctx), TEACHING_DISABLED)
    assert "managers" in result.reason


def test_teaching_disabled_still_lets_non_managers_remove_their_own() -> None:
    ctx = context(workspace=Workspace(member_teaching_enabled=False))
    assert decide(manual("remove"), ctx) == Delete(41, "tea is hot")


@pytest.mark.parametrize("action", ACTIONS)
def test_teaching_disabled_does_not_stop_managers(action: str) -> None:
    ctx = context(workspace=Workspace(member_teaching_enabled=False))
    assert not isinstance(decide(any_action(action, manager=True), ctx), Refuse)


def test_blacklist_is_checked_before_the_teaching_switch() -> None:
    ctx = context(actor_blacklisted=True, workspace=Workspace(member_teaching_enabled=False))
    refused(decide(manual("add"), ctx), BLACKLISTED)


@pytest.mark.parametrize("action", ACTIONS)
def test_server_scope_ignores_privacy_and_identity(action: str) -> None:
    # identity_id only means something for personal memories; the actor's privacy likewise.
    cmd = any_action(action, identity_id=IDENTITY)
    assert not isinstance(decide(cmd, context(actor_privacy_level=2)), Refuse)


@pytest.mark.parametrize("action", ["edit", "remove"])
@pytest.mark.parametrize("taught_by", [BOB, None])
def test_non_manager_does_not_see_rows_others_taught(action: str, taught_by: str | None) -> None:
    result = refused(decide(any_action(action), context(target=row(taught_by=taught_by))), NOT_FOUND)
    assert "you taught" in result.reason and "/memories" in result.reason


@pytest.mark.parametrize("action", ["edit", "remove"])
@pytest.mark.parametrize("taught_by", [ALICE, BOB, None])
def test_manager_sees_every_server_row(action: str, taught_by: str | None) -> None:
    decision = decide(any_action(action, manager=True), context(target=row(taught_by=taught_by)))
    assert isinstance(decision, Update | Delete)
    assert decision.memory_id == 41


# --- personal scope: who may act ---------------------------------------------------------------


@pytest.mark.parametrize("action", [a for a in ACTIONS if a != "remove"])
@pytest.mark.parametrize("manager", [False, True])
def test_full_privacy_blocks_personal_memories(action: str, manager: bool) -> None:
    cmd = any_action(action, scope="personal", manager=manager)
    result = refused(decide(cmd, context(actor_privacy_level=2)), PRIVACY_BLOCKED)
    assert "/personal config" in result.reason


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("level", [0, 1])
def test_open_or_partial_privacy_allows_personal_memories(action: str, level: int) -> None:
    cmd = any_action(action, scope="personal")
    assert not isinstance(decide(cmd, context(actor_privacy_level=level)), Refuse)


@pytest.mark.parametrize("action", ACTIONS)
def test_personal_scope_ignores_blacklist_teaching_switch_and_teacher(action: str) -> None:
    ctx = context(
        actor_blacklisted=True,
        workspace=Workspace(member_teaching_enabled=False),
        target=row(taught_by=BOB),
    )
    assert not isinstance(decide(any_action(action, scope="personal"), ctx), Refuse)


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize(
    ("identity", "hosted"),
    [(None, False), (None, True), (OPEN_IDENTITY, False)],
    ids=["unknown", "unknown-but-flagged", "not-hosted-by-actor"],
)
def test_identity_not_among_the_actors_is_not_found(
    action: str, identity: ProxyIdentity | None, hosted: bool
) -> None:
    cmd = any_action(action, scope="personal", identity_id=IDENTITY)
    ctx = context(identity=identity, identity_hosted_by_actor=hosted)
    result = refused(decide(cmd, ctx), NOT_FOUND)
    assert "No such identity among yours" in result.reason and IDENTITY in result.reason


@pytest.mark.parametrize("action", [a for a in ACTIONS if a != "remove"])
@pytest.mark.parametrize(
    ("hosts", "why"),
    [
        ((), NO_HOST),
        ((HostLink(ALICE, privacy_level=2),), HOST_FULL_PRIVACY),
        ((HostLink(ALICE), HostLink(BOB, privacy_level=2)), HOST_FULL_PRIVACY),
        ((HostLink(ALICE, blacklisted=True),), HOST_BLACKLISTED),
    ],
)
def test_protected_host_refuses_identity_writes(action: str, hosts: tuple[HostLink, ...], why: str) -> None:
    cmd = any_action(action, scope="personal", identity_id=IDENTITY)
    ctx = context(identity=ProxyIdentity(99, IDENTITY, hosts), identity_hosted_by_actor=True)
    assert why in refused(decide(cmd, ctx), HOST_PROTECTED).reason


def test_a_protected_host_may_still_remove_the_identitys_memories() -> None:
    cmd = any_action("remove", scope="personal", identity_id=IDENTITY)
    ctx = context(identity=ProxyIdentity(99, IDENTITY, (HostLink(ALICE, privacy_level=2),)),
                  identity_hosted_by_actor=True)
    assert not isinstance(decide(cmd, ctx), Refuse)


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("actor_level", [0, 2])
def test_open_identity_may_be_written_whatever_the_actors_own_privacy(action: str, actor_level: int) -> None:
    # The identity's protection is its hosts'; the actor's own row matters only for their memories.
    cmd = any_action(action, scope="personal", identity_id=IDENTITY)
    ctx = context(identity=OPEN_IDENTITY, identity_hosted_by_actor=True, actor_privacy_level=actor_level)
    assert not isinstance(decide(cmd, ctx), Refuse)


def test_partial_host_privacy_does_not_protect_an_identity() -> None:
    identity = ProxyIdentity(99, IDENTITY, (HostLink(ALICE, privacy_level=1),))
    cmd = manual("add", scope="personal", identity_id=IDENTITY)
    ctx = context(identity=identity, identity_hosted_by_actor=True)
    assert isinstance(decide(cmd, ctx), Insert)


@pytest.mark.parametrize(
    ("cmd", "ctx", "status"),
    [
        (manual("add", content=" ", scope="personal"), context(actor_privacy_level=2), PRIVACY_BLOCKED),
        (manual("add", content=" ", scope="personal", identity_id=IDENTITY), context(), NOT_FOUND),
        (
            manual("add", content=" ", scope="personal", identity_id=IDENTITY),
            context(identity=ProxyIdentity(99, IDENTITY, ()), identity_hosted_by_actor=True),
            HOST_PROTECTED,
        ),
        (manual("add", content=" "), context(actor_blacklisted=True), BLACKLISTED),
        (manual("add", content=" "), context(workspace=Workspace(member_teaching_enabled=False)), TEACHING_DISABLED),
        (manual("edit", content="x" * 99), context(actor_blacklisted=True, target=None), BLACKLISTED),
        (manual("add_batch"), context(count=99, actor_blacklisted=True), BLACKLISTED),
    ],
    ids=["privacy", "identity", "host", "blacklist", "teaching", "edit-blacklist", "batch-blacklist"],
)
def test_actor_checks_come_before_the_actions_own(cmd: ManualMemory, ctx: ManualContext, status: str) -> None:
    refused(decide(cmd, ctx), status)


# --- add ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["server", "personal"])
def test_add_inserts_trimmed_content_with_parsed_tags(scope: str) -> None:
    cmd = manual("add", scope=scope, content="  tea is hot \n", tags="drinks, 'Hot', #kitchen, drinks")
    assert decide(cmd) == Insert(("tea is hot",), ("drinks", "Hot", "#kitchen"))


def test_add_does_not_sanitize_placeholders() -> None:
    # People write these by hand: what they typed is what they meant.
    assert decide(manual("add", content="{name} is {{x}}")) == Insert(("{name} is {{x}}",), ())


def test_add_with_a_tag_list() -> None:
    assert decide(manual("add", tags=["a", "b, c"])) == Insert(("tea is hot",), ("a", "b", "c"))


@pytest.mark.parametrize("content", ["", "   ", "\n\t"])
def test_add_empty_content(content: str) -> None:
    refused(decide(manual("add", content=content)), EMPTY_CONTENT)


@pytest.mark.parametrize(
    ("content", "length"),
    [("x" * 21, 21), ("x" * 19 + "😀", 21), ("  " + "x" * 25 + "  ", 25)],
)
def test_add_too_long_says_length_and_limit(content: str, length: int) -> None:
    result = refused(decide(manual("add", content=content)), CONTENT_TOO_LONG)
    assert str(length) in result.reason and "20" in result.reason


@pytest.mark.parametrize("content", ["x" * 20, "x" * 18 + "😀", "  " + "x" * 20 + "  "])
def test_add_at_the_length_limit(content: str) -> None:
    assert isinstance(decide(manual("add", content=content)), Insert)


@pytest.mark.parametrize(
    ("scope", "count", "inserted"),
    [
        ("server", 4, True),
        ("server", 5, False),
        ("server", 9, False),
        ("personal", 2, True),
        ("personal", 3, False),
        ("personal", 4, False),
    ],
)
def test_add_at_the_cap_is_refused_never_evicts(scope: str, count: int, inserted: bool) -> None:
    decision = decide(manual("add", scope=scope), context(count=count))
    if inserted:
        assert isinstance(decision, Insert)
        return
    result = refused(decision, LIMIT_REACHED)
    cap = 5 if scope == "server" else 3
    panel = "/memories" if scope == "server" else "/personal memories"
    assert f"limit of {cap}" in result.reason and f"{panel} " in result.reason
    assert "never replace" in result.reason


def test_add_for_an_identity_names_the_identity_at_the_cap() -> None:
    cmd = manual("add", scope="personal", identity_id=IDENTITY)
    ctx = context(identity=OPEN_IDENTITY, identity_hosted_by_actor=True, count=3)
    assert refused(decide(cmd, ctx), LIMIT_REACHED).reason.startswith("This identity has")


def test_add_checks_length_before_the_cap() -> None:
    refused(decide(manual("add", content="x" * 21), context(count=5)), CONTENT_TOO_LONG)


def test_add_does_not_deduplicate() -> None:
    # Only batches drop duplicates; a single typed entry is saved as the person asked.
    ctx = context(existing_contents=("tea is hot",))
    assert decide(manual("add"), ctx) == Insert(("tea is hot",), ())


# --- add_batch ----------------------------------------------------------------------------------


def batch(contents: list[str] | None, content: str | None = None, **kwargs: Any) -> ManualMemory:
    return manual("add_batch", contents=contents, content=content, **kwargs)


def test_batch_trims_drops_blanks_and_puts_the_typed_entry_last() -> None:
    cmd = batch(["  one ", "", "   ", "two\n"], content=" typed ", tags="t1, t2")
    assert decide(cmd) == Insert(("one", "two", "typed"), ("t1", "t2"), skipped_duplicates=0)


@pytest.mark.parametrize(
    ("contents", "content", "existing", "items", "skipped"),
    [
        (["a", "A", "b"], None, (), ("a", "b"), 1),
        (["Tea", "tea ", " TEA"], None, (), ("Tea",), 2),
        (["a", "b"], "B", (), ("a", "b"), 1),
        (["a", "b"], None, ("A",), ("b",), 1),
        (["a", "b"], None, ("  b  ",), ("a",), 1),
        (["Straße", "STRASSE"], None, (), ("Straße",), 1),
        (["new"], "new", ("old",), ("new",), 1),
        (None, "only", (), ("only",), 0),
        (["x", "", "X", "y"], None, ("z",), ("x", "y"), 1),
    ],
)
def test_batch_deduplicates_case_insensitively(
    contents: list[str] | None, content: str | None, existing: tuple[str, ...], items: tuple[str, ...], skipped: int
) -> None:
    decision = decide(batch(contents, content), context(existing_contents=existing))
    assert decision == Insert(items, (), skipped_duplicates=skipped)


@pytest.mark.parametrize(("contents", "content"), [(None, None), ([], None), (["", "  "], " "), (None, "\n")])
def test_batch_with_nothing_given_is_empty(contents: list[str] | None, content: str | None) -> None:
    refused(decide(batch(contents, content)), EMPTY_CONTENT)


@pytest.mark.parametrize(
    ("contents", "existing"),
    [(["a", "A"], ("a",)), (["Tea"], ("tea",)), (["x", " X "], ("X", "y"))],
)
def test_batch_of_only_duplicates(contents: list[str], existing: tuple[str, ...]) -> None:
    result = refused(decide(batch(contents), context(existing_contents=existing)), ALL_DUPLICATES)
    assert "already" in result.reason


@pytest.mark.parametrize(
    ("contents", "position", "length"),
    [
        (["x" * 21], 1, 21),
        (["a", "A", "x" * 22], 2, 22),  # the position in the de-duplicated list
        (["a", "b", "x" * 19 + "😀", "y" * 30], 3, 21),  # the first too-long item is named
    ],
)
def test_batch_names_the_item_that_is_too_long(contents: list[str], position: int, length: int) -> None:
    result = refused(decide(batch(contents)), CONTENT_TOO_LONG)
    assert f"Memory {position} of the batch" in result.reason
    assert str(length) in result.reason and "20" in result.reason


def test_batch_duplicate_of_a_too_long_item_is_not_reported_twice() -> None:
    long = "x" * 21
    refused(decide(batch(["a", long, long.upper()])), CONTENT_TOO_LONG)


@pytest.mark.parametrize(
    ("scope", "count", "contents", "available"),
    [
        ("server", 3, ["a", "b", "c"], 2),
        ("server", 5, ["a"], 0),
        ("server", 7, ["a"], 0),  # over the cap already: nothing is available, never negative
        ("personal", 1, ["a", "b", "c"], 2),
        ("personal", 0, ["a", "b", "c", "d"], 3),
    ],
)
def test_batch_over_the_cap_inserts_nothing(scope: str, count: int, contents: list[str], available: int) -> None:
    result = refused(decide(batch(contents, scope=scope), context(count=count)), BATCH_LIMIT_REACHED)
    assert dict(result.extra) == {"available": available, "requested": len(contents)}
    assert f"only {available} more" in result.reason
    assert ("/memories" if scope == "server" else "/personal memories") in result.reason


@pytest.mark.parametrize(("scope", "count"), [("server", 2), ("personal", 0)])
def test_batch_that_exactly_fits(scope: str, count: int) -> None:
    assert isinstance(decide(batch(["a", "b", "c"], scope=scope), context(count=count)), Insert)


def test_batch_counts_only_new_items_against_the_cap() -> None:
    ctx = context(count=4, existing_contents=("a",))
    assert decide(batch(["a", "A", "b"]), ctx) == Insert(("b",), (), skipped_duplicates=2)


def test_batch_checks_length_before_the_cap() -> None:
    refused(decide(batch(["a", "x" * 21]), context(count=5)), CONTENT_TOO_LONG)


def test_batch_checks_duplicates_before_length() -> None:
    refused(decide(batch(["x" * 21]), context(existing_contents=("X" * 21,))), ALL_DUPLICATES)


# --- edit ------------------------------------------------------------------------------------------


def edit(content: str | None = None, tags: str | list[str] | None = None, **kwargs: Any) -> ManualMemory:
    return manual("edit", content=content, tags=tags, **kwargs)


@pytest.mark.parametrize("scope", ["server", "personal"])
def test_edit_content_keeps_tags(scope: str) -> None:
    assert decide(edit("  tea is warm ", scope=scope)) == Update(41, "tea is warm", ("drinks",))


def test_edit_tags_only_keeps_content() -> None:
    assert decide(edit(tags="cups, #kitchen")) == Update(41, "tea is hot", ("cups", "#kitchen"))


@pytest.mark.parametrize("tags", ["", [], " , "])
def test_edit_can_clear_tags(tags: str | list[str]) -> None:
    assert decide(edit(tags=tags)) == Update(41, "tea is hot", ())


@pytest.mark.parametrize(
    ("cmd", "target"),
    [
        (edit("tea is hot", "drinks"), row()),
        (edit(" tea is hot ", ["drinks"]), row()),
        (edit(None, None), row()),
        (edit("tea is hot"), row()),
        (edit(None, "'drinks'"), row()),
    ],
)
def test_edit_without_change_of_a_protected_row_is_unchanged(cmd: ManualMemory, target: PanelMemory) -> None:
    assert decide(cmd, context(target=target)) == Unchanged(41)


@pytest.mark.parametrize(
    "cmd",
    [edit("tea is hot", "drinks"), edit(None, None), edit(tags="drinks")],
)
def test_resaving_an_unprotected_row_updates_it(cmd: ManualMemory) -> None:
    # The update is what sets manually_written and so protects the row from eviction.
    decision = decide(cmd, context(target=row(manually_written=False)))
    assert decision == Update(41, "tea is hot", ("drinks",))


@pytest.mark.parametrize(
    "cmd",
    [edit(tags="Drinks"), edit(tags="drinks, more"), edit("Tea is hot")],
)
def test_any_difference_is_an_update(cmd: ManualMemory) -> None:
    assert isinstance(decide(cmd), Update)


@pytest.mark.parametrize("content", ["", "  ", "\n"])
def test_edit_to_empty_content(content: str) -> None:
    refused(decide(edit(content)), EMPTY_CONTENT)


def test_edit_too_long() -> None:
    result = refused(decide(edit("x" * 19 + "😀")), CONTENT_TOO_LONG)
    assert "21" in result.reason and "20" in result.reason


def test_edit_keeping_content_over_a_lowered_limit_may_change_tags() -> None:
    target = row(content="x" * 30)
    assert decide(edit(tags="new"), context(target=target)) == Update(41, "x" * 30, ("new",))
    assert decide(edit("x" * 30), context(target=target)) == Unchanged(41)
    refused(decide(edit("y" * 30), context(target=target)), CONTENT_TOO_LONG)


def test_edit_is_not_limited_by_the_cap() -> None:
    assert isinstance(decide(edit("tea is warm"), context(count=99)), Update)


def test_edit_does_not_sanitize() -> None:
    assert decide(edit("{name} is {{here}}")) == Update(41, "{name} is {{here}}", ("drinks",))


# --- not found (edit and remove) ------------------------------------------------------------------


@pytest.mark.parametrize("action", ["edit", "remove"])
@pytest.mark.parametrize("scope", ["server", "personal"])
@pytest.mark.parametrize(
    ("memory_id", "target"),
    [
        (41, None),
        (41, row(memory_id=42)),  # the loader returned another row: never write it
        (41, row(lineage=8)),  # outside the exact lineage
        (41, row(lineage=0)),
    ],
    ids=["missing", "other-id", "other-lineage", "global-lineage"],
)
def test_not_found(action: str, scope: str, memory_id: int, target: PanelMemory | None) -> None:
    cmd = any_action(action, scope=scope, manager=True, memory_id=memory_id)
    result = refused(decide(cmd, context(target=target)), NOT_FOUND)
    assert "41" in result.reason
    assert ("/memories" if scope == "server" else "/personal memories") in result.reason


@pytest.mark.parametrize("action", ["edit", "remove"])
def test_not_found_without_a_memory_id(action: str) -> None:
    cmd = msgspec.structs.replace(any_action(action, manager=True), memory_id=None)
    assert "No memory was chosen" in refused(decide(cmd, context(target=None)), NOT_FOUND).reason


def test_global_lineage_rows_are_found_at_lineage_zero() -> None:
    cmd = manual("remove", scope="personal", lineage=0)
    assert decide(cmd, context(target=row(lineage=0))) == Delete(41, "tea is hot")


def test_not_found_comes_before_content_checks() -> None:
    refused(decide(edit(" "), context(target=None)), NOT_FOUND)


# --- remove ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cmd", "target"),
    [
        (manual("remove"), row()),
        (manual("remove", manager=True), row(taught_by=BOB)),
        (manual("remove", scope="personal"), row(taught_by=None, manually_written=False)),
        (manual("remove", content="ignored", tags="ignored"), row()),
    ],
)
def test_remove_deletes_with_the_stored_content(cmd: ManualMemory, target: PanelMemory) -> None:
    assert decide(cmd, context(target=target)) == Delete(41, "tea is hot")


def test_remove_is_not_limited_by_the_cap() -> None:
    assert isinstance(decide(manual("remove"), context(count=99)), Delete)


# --- coverage of the statuses ---------------------------------------------------------------------


def test_every_refusal_status_is_reachable() -> None:
    host_less = context(identity=ProxyIdentity(99, IDENTITY, ()), identity_hosted_by_actor=True)
    produced = [
        decide(manual("add", scope="personal"), context(actor_privacy_level=2)),
        decide(manual("add", scope="personal", identity_id=IDENTITY), host_less),
        decide(manual("add", content=" ")),
        decide(manual("add", content="x" * 21)),
        decide(manual("add"), context(count=5)),
        decide(batch(["a"]), context(count=5)),
        decide(batch(["a"]), context(existing_contents=("a",))),
        decide(manual("remove"), context(target=None)),
        decide(manual("add"), context(actor_blacklisted=True)),
        decide(manual("add"), context(workspace=Workspace(member_teaching_enabled=False))),
    ]
    statuses = {decision.status for decision in produced if isinstance(decision, Refuse)}
    assert statuses == {
        PRIVACY_BLOCKED,
        HOST_PROTECTED,
        EMPTY_CONTENT,
        CONTENT_TOO_LONG,
        LIMIT_REACHED,
        BATCH_LIMIT_REACHED,
        ALL_DUPLICATES,
        NOT_FOUND,
        BLACKLISTED,
        TEACHING_DISABLED,
    }


def test_refusal_reasons_are_distinct() -> None:
    reasons = [
        decide(manual("add", content=" ")),
        decide(manual("add", content="x" * 21)),
        decide(manual("add"), context(count=5)),
        decide(manual("remove"), context(target=None)),
        decide(manual("add", scope="personal", identity_id=IDENTITY)),
    ]
    assert len({r.reason for r in reasons if isinstance(r, Refuse)}) == len(reasons)


def test_full_privacy_still_lets_a_user_remove_their_own_memories():
    from worker.domain.workspace import Limits
    from worker.kinds.manual.context import ManualContext, PanelMemory
    from worker.kinds.manual.decided import Delete
    from worker.kinds.manual.decision import decide_manual

    cmd = manual_command("1", actor="5", is_manager=False, scope="personal", action="remove", lineage_id=3,
                         persona_id=None, memory_id=9, envelope_fields=fixed_envelope("c"))
    ctx = ManualContext(actor_privacy_level=2, target=PanelMemory(9, 3, "old fact"))
    assert decide_manual(cmd, ctx, Limits()) == Delete(9, "old fact")


@pytest.mark.parametrize("action", [a for a in ACTIONS if a != "remove"])
def test_an_identity_at_full_privacy_is_privacy_blocked(action: str) -> None:
    cmd = any_action(action, scope="personal", identity_id=IDENTITY)
    ctx = context(identity=ProxyIdentity(99, IDENTITY, (HostLink(ALICE),), privacy_level=2),
                  identity_hosted_by_actor=True)
    refused(decide(cmd, ctx), PRIVACY_BLOCKED)


def test_an_identity_at_full_privacy_may_still_have_its_memories_removed() -> None:
    cmd = any_action("remove", scope="personal", identity_id=IDENTITY)
    ctx = context(identity=ProxyIdentity(99, IDENTITY, (HostLink(ALICE),), privacy_level=2),
                  identity_hosted_by_actor=True)
    assert not isinstance(decide(cmd, ctx), Refuse)


def test_the_panels_teaching_switch_is_not_the_models() -> None:
    # TomoriBot keeps them apart: the model may be barred from saving while members still teach.
    ctx = context(workspace=Workspace(self_teaching_enabled=False, member_teaching_enabled=True))
    assert not isinstance(decide(manual("add"), ctx), Refuse)
