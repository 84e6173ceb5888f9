"""Shadow mode's one rule: how a bot's own write and the worker's dry run of the same command
compare (docs/design.md, section 3.6). Pure: the report service pairs, this decides.

Every field the bot reports is compared with the dry run's, by its dotted path in the result
(`data.status`, `error`, `notice.embed.footer_key`; an object only one side has is one field);
a field the bot leaves out is not compared, and two never are: the command_id (the report's
own) and `invalidated` (the worker's cache keys, which a bot writing itself has no reason to
know).

A difference is put down to a concurrent write, not to a rule, when the ids tell of one: the
dry run answers, for a memory it would have created, the id the table's sequence gives next;
when the bot's own write created as many of the same scope but got later ids, something else
inserted into that table in between, and may have changed what the rule saw (a count, a
duplicate). Where only one side created a memory, or another scope or count, the two decided
differently: that is a disagreement. Other concurrent writes (an edit,
a delete) leave no such trace and count as disagreements: the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts.results import SAVED, SAVED_WITH_EVICTION, ShadowDifference, ShadowOutcome

NOT_COMPARED = frozenset({"command_id", "invalidated"})
# The statuses with which a result carries the ids of memories its command created (a create's
# save, a panel's add and import, a bio seed) in data.memory_id or data.memory_ids.
CREATING_STATUSES = frozenset({SAVED, SAVED_WITH_EVICTION, "added", "imported", "seeded"})


def flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A result's leaves by dotted path; lists are leaves, compared whole."""
    leaves: dict[str, Any] = {}
    for key, item in value.items():
        path = f"{prefix}{key}"
        if isinstance(item, Mapping):
            leaves.update(flatten(item, f"{path}."))
        else:
            leaves[path] = item
    return leaves


def differences(worker: Mapping[str, Any], bot: Mapping[str, Any], prefix: str = "") -> list[ShadowDifference]:
    """The fields the bot gave whose value is not the dry run's, in path order. Objects both
    sides have are compared field by field; an object one side lacks is one difference."""
    found: list[ShadowDifference] = []
    for key in sorted(bot):
        path = f"{prefix}{key}"
        if not prefix and key in NOT_COMPARED:
            continue
        ours, theirs = worker.get(key), bot[key]
        if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
            found += differences(ours, theirs, f"{path}.")
        elif ours != theirs:
            found.append(ShadowDifference(field=path, worker=ours, bot=theirs))
    return found


def compare(dry_result: Mapping[str, Any] | None, *, timed_out: bool,
            bot_result: Mapping[str, Any] | None, bot_error: str | None) -> tuple[ShadowOutcome, list[ShadowDifference]]:
    """The pair's outcome and its differences.

    `dry_result`: the dry run's answer (None: no dry run of this command reached the worker);
    `bot_result`: what the bot's own write gave (None with `bot_error` when it threw)."""
    if timed_out:
        return "timed_out", []
    if dry_result is None:
        return "unpaired", []
    if bot_result is None:
        return "differed", [ShadowDifference(field="error", worker=dry_result.get("error"), bot=bot_error)]
    found = differences(dry_result, bot_result)
    if not found:
        return "agreed", []
    if _created_under_later_ids(dry_result, bot_result):
        return "concurrent", found
    return "differed", found


def _created_under_later_ids(worker: Mapping[str, Any], bot: Mapping[str, Any]) -> bool:
    """Both created memories, of the same scope and as many, and every id the bot's own write
    got is past the one the dry run expected: inserts came between the two. Anything else that
    differs in the ids (a save against a refusal, another scope, another count, an earlier id)
    is the two deciding differently."""
    ours, theirs = flatten(worker), flatten(bot)
    if ours.get("data.status") not in CREATING_STATUSES or theirs.get("data.status") not in CREATING_STATUSES:
        return False
    if "data.scope" in theirs and theirs["data.scope"] != ours.get("data.scope"):
        return False
    expected, got = _new_ids(ours), _new_ids(theirs)
    return bool(expected) and len(expected) == len(got) and expected != got and all(
        mine >= guess for guess, mine in zip(expected, got, strict=True))


def _new_ids(leaves: Mapping[str, Any]) -> list[int]:
    ids = leaves.get("data.memory_ids")
    if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
        return list(ids)
    single = leaves.get("data.memory_id")
    return [single] if isinstance(single, int) else []
