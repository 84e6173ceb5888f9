"""The `memory.manual` import's decision (docs/design.md, section 8.1): who may import, every entry
validated first, merge and its duplicates, replace, the cap, tags per entry.

TomoriBot's rules are held to its bundle import (src/utils/db/repositories/ImportRepository.ts,
importWorkspaceMemoryBundle / importPersonalMemoryBundle, Bredrumb/TomoriBot@7e828268; the duplicate
key is normalizeMemoryItem of src/types/db/dataExport.ts, file id 69277470106; a workspace import
needs Manage Server: tests/unit/commands/import/memoriesImportOperation.test.ts@10551131). The
tests named `..._as_tomoribot_does` use the examples of its repository test "memory bundle
imports" (file id 66326604134 in the search index, which names no path).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import pytest

from contracts.kinds.manual import (
    CONTENT_TOO_LONG,
    EMPTY_CONTENT,
    HOST_PROTECTED,
    LIMIT_REACHED,
    MANAGERS_ONLY,
    MAX_IMPORT_ENTRIES,
    NOT_FOUND,
    PRIVACY_BLOCKED,
    ImportEntry,
    ManualMemory,
)
from tests.support.commands import fixed_envelope, manual_command
from tests.unit.test_manual import refused
from worker.domain.memory import MemoryEntry
from worker.domain.people import HostLink, ProxyIdentity
from worker.domain.workspace import Limits, Workspace
from worker.kinds.manual.context import ManualContext
from worker.kinds.manual.data_import import duplicate_key
from worker.kinds.manual.decided import Import, ManualDecision
from worker.kinds.manual.decision import decide_manual

ALICE = "100000000000000001"
IDENTITY = "pk:0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
LIMITS = Limits(max_memory_length=20, max_server_memories=5, max_personal_memories=3)
LINEAGE = 7
HOSTED = ProxyIdentity(99, IDENTITY, (HostLink(ALICE),))


def entry(content: str, tags: str | list[str] | None = None) -> ImportEntry:
    return ImportEntry(content=content, tags=tags)


def importing(entries: list[ImportEntry] | None, strategy: str = "merge", *, scope: str = "server",
              manager: bool = True, identity_id: str | None = None, **fields: Any) -> ManualMemory:
    return manual_command("500000000000000001", actor=ALICE, is_manager=manager, scope=scope, action="import",
                          lineage_id=LINEAGE, persona_id=None, identity_id=identity_id, strategy=strategy,
                          entries=entries, envelope_fields=fixed_envelope("i-1"), **fields)


def stored(*rows: tuple[str, tuple[str, ...]]) -> tuple[MemoryEntry, ...]:
    return tuple(MemoryEntry(content, tags) for content, tags in rows)


def decide(cmd: ManualMemory, ctx: ManualContext | None = None, limits: Limits = LIMITS) -> ManualDecision:
    return decide_manual(cmd, ctx or ManualContext(), limits)


# --- who may import ------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["merge", "replace"])
@pytest.mark.parametrize("ctx", [ManualContext(), ManualContext(actor_blacklisted=True),
                                 ManualContext(workspace=Workspace(member_teaching_enabled=False))],
                         ids=["plain", "blacklisted", "teaching-off"])
def test_only_managers_import_server_memories(strategy: str, ctx: ManualContext) -> None:
    result = refused(decide(importing([entry("a")], strategy, manager=False), ctx), MANAGERS_ONLY)
    assert "managers" in result.reason


@pytest.mark.parametrize("ctx", [ManualContext(actor_blacklisted=True),
                                 ManualContext(workspace=Workspace(member_teaching_enabled=False))])
def test_a_manager_imports_whatever_their_own_standing(ctx: ManualContext) -> None:
    assert isinstance(decide(importing([entry("a")]), ctx), Import)


def test_even_an_empty_replace_is_a_managers_act() -> None:
    refused(decide(importing([], "replace", manager=False)), MANAGERS_ONLY)


@pytest.mark.parametrize("manager", [False, True])
def test_anyone_imports_their_own_personal_memories(manager: bool) -> None:
    assert isinstance(decide(importing([entry("a")], scope="personal", manager=manager)), Import)


@pytest.mark.parametrize("strategy", ["merge", "replace"])
def test_full_privacy_blocks_a_personal_import_that_adds(strategy: str) -> None:
    ctx = ManualContext(actor_privacy_level=2)
    result = refused(decide(importing([entry("a")], strategy, scope="personal"), ctx), PRIVACY_BLOCKED)
    assert "/personal config" in result.reason


def test_full_privacy_still_lets_a_replace_with_no_entries_forget() -> None:
    ctx = ManualContext(actor_privacy_level=2, count=2, lineage_rows=stored(("a", ()), ("b", ())))
    assert decide(importing([], "replace", scope="personal"), ctx) == Import((), True)


@pytest.mark.parametrize("entries", [None, []])
def test_a_merge_that_adds_nothing_is_still_blocked_by_full_privacy(entries: list[ImportEntry] | None) -> None:
    refused(decide(importing(entries, scope="personal"), ManualContext(actor_privacy_level=2)),
            PRIVACY_BLOCKED)


def test_an_identity_is_imported_for_only_by_its_host() -> None:
    cmd = importing([entry("a")], scope="personal", identity_id=IDENTITY)
    refused(decide(cmd, ManualContext(identity=HOSTED, identity_hosted_by_actor=False)), NOT_FOUND)
    assert isinstance(decide(cmd, ManualContext(identity=HOSTED, identity_hosted_by_actor=True)), Import)


@pytest.mark.parametrize("identity", [ProxyIdentity(99, IDENTITY, ()),
                                      ProxyIdentity(99, IDENTITY, (HostLink(ALICE, privacy_level=2),)),
                                      ProxyIdentity(99, IDENTITY, (HostLink(ALICE, blacklisted=True),))],
                         ids=["no-host", "host-full", "host-blacklisted"])
def test_a_protected_identity_refuses_an_import_that_adds_but_not_an_empty_replace(identity: ProxyIdentity) -> None:
    ctx = ManualContext(identity=identity, identity_hosted_by_actor=True)
    refused(decide(importing([entry("a")], "replace", scope="personal", identity_id=IDENTITY), ctx),
            HOST_PROTECTED)
    assert decide(importing([], "replace", scope="personal", identity_id=IDENTITY), ctx) == Import((), True)


def test_an_identity_at_full_privacy_is_privacy_blocked() -> None:
    identity = ProxyIdentity(99, IDENTITY, (HostLink(ALICE),), privacy_level=2)
    cmd = importing([entry("a")], scope="personal", identity_id=IDENTITY)
    refused(decide(cmd, ManualContext(identity=identity, identity_hosted_by_actor=True)), PRIVACY_BLOCKED)


def test_who_may_act_comes_before_the_entries() -> None:
    refused(decide(importing([entry(" ")], manager=False)), MANAGERS_ONLY)
    refused(decide(importing([entry("x" * 99)], scope="personal"), ManualContext(actor_privacy_level=2)),
            PRIVACY_BLOCKED)


# --- every entry validated first ----------------------------------------------------------------------


def test_missing_entries_are_refused_as_empty() -> None:
    result = refused(decide(importing(None, "replace")), EMPTY_CONTENT)
    assert "no entries" in result.reason


@pytest.mark.parametrize("strategy", ["merge", "replace"])
@pytest.mark.parametrize(("entries", "position"), [([entry(" ")], 1), ([entry("a"), entry("b"), entry("\n\t")], 3)])
def test_one_blank_entry_refuses_the_whole_import(strategy: str, entries: list[ImportEntry], position: int) -> None:
    result = refused(decide(importing(entries, strategy)), EMPTY_CONTENT)
    assert f"Memory {position} of the import is empty" in result.reason


@pytest.mark.parametrize(("content", "length"), [("x" * 21, 21), ("x" * 19 + "😀", 21)])
def test_one_over_long_entry_refuses_the_whole_import(content: str, length: int) -> None:
    result = refused(decide(importing([entry("ok"), entry(content)])), CONTENT_TOO_LONG)
    assert "Memory 2 of the import" in result.reason and str(length) in result.reason and "20" in result.reason


def test_an_over_long_duplicate_is_still_refused() -> None:
    # Validation sees every entry, before any duplicate is skipped (TomoriBot validates all first).
    long = "x" * 21
    ctx = ManualContext(count=1, lineage_rows=stored((long, ())))
    refused(decide(importing([entry(long)]), ctx), CONTENT_TOO_LONG)


def test_the_entries_are_checked_before_the_cap() -> None:
    refused(decide(importing([entry(" ")]), ManualContext(count=5)), EMPTY_CONTENT)


def test_content_is_trimmed_never_sanitized_and_at_the_limit_fits() -> None:
    decision = decide(importing([entry("  {name} likes {{tea}}  "), entry("  " + "x" * 20 + " ")]))
    assert decision == Import((MemoryEntry("{name} likes {{tea}}"), MemoryEntry("x" * 20)), False)


# --- tags per entry ------------------------------------------------------------------------------------


def test_each_entry_keeps_its_own_tags_parsed_as_the_panel_parses_them() -> None:
    decision = decide(importing([entry("a", "drinks, 'Hot', #kitchen, drinks"), entry("b", ["x, y", "X", "  "]),
                                 entry("c"), entry("d", ["t" * 33, "1", "2", "3", "4", "5", "6"])]))
    assert decision == Import((MemoryEntry("a", ("drinks", "Hot", "#kitchen")), MemoryEntry("b", ("x", "y")),
                               MemoryEntry("c"), MemoryEntry("d", ("1", "2", "3", "4", "5"))), False)


def test_the_commands_own_tags_field_is_not_read_by_an_import() -> None:
    assert decide(importing([entry("a")], tags="ignored")) == Import((MemoryEntry("a"),), False)


# --- merge ----------------------------------------------------------------------------------------------


def test_merge_skips_normalized_duplicates_as_tomoribot_does() -> None:
    # "merges normalized existing and incoming duplicates": inserted 1, skipped 2.
    ctx = ManualContext(count=1, lineage_rows=stored((" existing memory ", ("tag-b", "tag-a"))))
    cmd = importing([entry("existing   memory", ["tag-a", "tag-b"]), entry("new memory", ["new"]),
                     entry(" new   memory ", ["new"])])
    assert decide(cmd, ctx) == Import((MemoryEntry("new memory", ("new",)),), False, skipped_duplicates=2)


@pytest.mark.parametrize(
    ("given", "stored_row", "duplicate"),
    [
        (("tea", ()), ("tea", ()), True),
        (("Tea", ()), ("tea", ()), False),  # case counts
        (("tea  is\u00a0hot", ()), (" tea is hot\n", ()), True),  # every JavaScript whitespace collapses
        (("tea", ("a",)), ("tea", ()), False),  # the tags are part of the memory
        (("tea", ("a", "b")), ("tea", ("b", "a")), True),  # their order is not
        (("tea", ("a",)), ("tea", ("'a'",)), True),  # quotes a stored tag kept are stripped
        (("tea", ("a  b",)), ("tea", ("a b",)), True),
        (("tea", ("A",)), ("tea", ("a",)), False),
    ],
)
def test_the_duplicate_key(given: tuple[str, tuple[str, ...]], stored_row: tuple[str, tuple[str, ...]],
                           duplicate: bool) -> None:
    assert (duplicate_key(MemoryEntry(*given)) == duplicate_key(MemoryEntry(*stored_row))) is duplicate


def test_merge_skips_repeats_within_the_import_keeping_the_first() -> None:
    decision = decide(importing([entry("a", "x"), entry("b"), entry(" a ", "x"), entry("a", "y")]))
    assert decision == Import((MemoryEntry("a", ("x",)), MemoryEntry("b"), MemoryEntry("a", ("y",))), False,
                              skipped_duplicates=1)


def test_merge_of_only_duplicates_adds_nothing_and_is_not_refused() -> None:
    ctx = ManualContext(count=5, lineage_rows=stored(("a", ()), ("b", ())))
    assert decide(importing([entry("a"), entry("b")]), ctx) == Import((), False, skipped_duplicates=2)


@pytest.mark.parametrize("entries", [None, []])
def test_merge_of_no_entries(entries: list[ImportEntry] | None) -> None:
    decision = decide(importing(entries))
    if entries is None:
        refused(decision, EMPTY_CONTENT)
    else:
        assert decision == Import((), False)


def test_merge_compares_only_the_exact_lineage() -> None:
    # The context holds the rows of exactly this lineage: a global row of the same text is not among them.
    ctx = ManualContext(count=1, lineage_rows=())
    assert decide(importing([entry("global fact")], scope="personal"), ctx) == Import(
        (MemoryEntry("global fact"),), False)


# --- the cap ---------------------------------------------------------------------------------------------


def test_merge_enforces_the_lineage_limit_and_accepts_an_exact_landing_as_tomoribot_does() -> None:
    # "enforces the workspace lineage limit and accepts an exact landing" (MAX_SERVER_MEMORIES=2 there).
    limits = Limits(max_server_memories=2)
    ctx = ManualContext(count=1, lineage_rows=stored(("existing", ())))
    over = refused(decide(importing([entry("one"), entry("two")]), ctx, limits), LIMIT_REACHED)
    assert dict(over.extra) == {"available": 1, "requested": 2}
    assert "only 1 more fit under the limit of 2" in over.reason and "/memories" in over.reason
    assert decide(importing([entry("one")]), ctx, limits) == Import((MemoryEntry("one"),), False)


@pytest.mark.parametrize(("scope", "count", "new", "refuse"),
                         [("server", 3, 2, False), ("server", 3, 3, True), ("personal", 1, 2, False),
                          ("personal", 2, 2, True), ("server", 9, 1, True)])
def test_merge_refuses_when_existing_and_new_exceed_the_cap(scope: str, count: int, new: int, refuse: bool) -> None:
    cmd = importing([entry(f"new {n}") for n in range(new)], scope=scope)
    decision = decide(cmd, ManualContext(count=count))
    if not refuse:
        assert isinstance(decision, Import) and len(decision.entries) == new
        return
    cap = 5 if scope == "server" else 3
    result = refused(decision, LIMIT_REACHED)
    assert dict(result.extra) == {"available": max(cap - count, 0), "requested": new}
    assert ("/memories" if scope == "server" else "/personal memories") in result.reason


def test_only_new_entries_count_against_the_cap() -> None:
    ctx = ManualContext(count=5, lineage_rows=stored(("a", ()),))
    refused(decide(importing([entry("a"), entry("b")]), ctx), LIMIT_REACHED)
    ctx = ManualContext(count=4, lineage_rows=stored(("a", ()),))
    assert decide(importing([entry("a"), entry("b")]), ctx) == Import((MemoryEntry("b"),), False, 1)


def test_replace_refuses_only_when_the_new_entries_exceed_the_cap_as_tomoribot_does() -> None:
    full = ManualContext(count=5, lineage_rows=stored(*[(f"old {n}", ()) for n in range(5)]))
    assert isinstance(decide(importing([entry(f"n{n}") for n in range(5)], "replace"), full), Import)
    result = refused(decide(importing([entry(f"n{n}") for n in range(6)], "replace"), full), LIMIT_REACHED)
    assert dict(result.extra) == {"available": 5, "requested": 6} and "the limit is 5" in result.reason


def test_replace_counts_what_the_cap_keeps_beside_the_lineage() -> None:
    # Personal lineage 7: 1 row of the lineage and 2 global rows count 3; the replace keeps the 2.
    ctx = ManualContext(count=3, lineage_rows=stored(("mine", ()),))
    assert isinstance(decide(importing([entry("new")], "replace", scope="personal"), ctx), Import)
    result = refused(decide(importing([entry("a"), entry("b")], "replace", scope="personal"), ctx),
                     LIMIT_REACHED)
    assert dict(result.extra) == {"available": 1, "requested": 2}
    assert "beside the 2 other memories" in result.reason


def test_replace_inserts_every_entry_repeats_included_as_tomoribot_does() -> None:
    ctx = ManualContext(count=1, lineage_rows=stored(("a", ()),))
    assert decide(importing([entry("a"), entry("a"), entry("b", "t")], "replace"), ctx) == Import(
        (MemoryEntry("a"), MemoryEntry("a"), MemoryEntry("b", ("t",))), True)


def test_replace_with_no_entries_clears_the_lineage_as_tomoribot_does() -> None:
    # "replaces only mapped scopes and clears an empty mapped scope".
    ctx = ManualContext(count=9, lineage_rows=stored(*[(f"old {n}", ()) for n in range(9)]))
    assert decide(importing([], "replace"), ctx) == Import((), True)


def test_an_owner_above_the_cap_may_still_import_nothing_new() -> None:
    ctx = ManualContext(count=9, lineage_rows=stored(("a", ()),))
    assert decide(importing([entry("a")]), ctx) == Import((), False, 1)


# --- the contract -------------------------------------------------------------------------------------------


def test_strategy_defaults_to_merge_and_entries_are_bounded() -> None:
    base: dict[str, Any] = {"command_id": "i", "issued_at": "2025-01-01T00:00:00Z", "workspace_id": "1", "actor": {"id": "2"},
            "scope": "server", "action": "import", "lineage_id": 3}
    cmd = msgspec.convert({**base, "entries": [{"content": "a", "tags": "x, y"}, {"content": "b"}]}, ManualMemory)
    assert cmd.strategy == "merge" and cmd.entries == [ImportEntry(content="a", tags="x, y"), ImportEntry(content="b")]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"strategy": "overwrite"}, "$.strategy"),
        ({"entries": [{"tags": ["x"]}]}, "$.entries[0]"),
        ({"entries": [{"content": "a\x00"}]}, "$.entries[0].content"),
        ({"entries": [{"content": "a"}] * (MAX_IMPORT_ENTRIES + 1)}, "$.entries")]
    for bad, where in cases:
        with pytest.raises(msgspec.ValidationError, match=re.escape(f"- at `{where}`")):
            msgspec.convert({**base, **bad}, ManualMemory)


def test_an_entry_is_trimmed_of_javascripts_white_space() -> None:
    """TomoriBot's trim: U+FEFF is white space to it, U+0085 and U+001F are not."""
    decision = decide(importing([entry("\ufeffNova\ufeff"), entry("\u0085"), entry("\u001f")]))
    assert isinstance(decision, Import)
    assert [e.content for e in decision.entries] == ["Nova", "\u0085", "\u001f"]
