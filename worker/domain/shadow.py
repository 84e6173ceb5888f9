"""Shadow mode's one rule: how a bot's own write and the worker's dry run of the same command
compare (docs/design.md, section 3.6). Pure: the report service pairs, this decides.

Every field the bot reports is compared with the dry run's, by its dotted path in the result
(`data.status`, `error`, `notice.embed.footer_key`; an object only one side has is one field);
a field the bot leaves out is not compared, and two never are: the command_id (the report's
own) and `invalidated` (the worker's cache keys, which a bot writing itself has no reason to
know).

A difference is put down to a concurrent write, not to a rule, when the ids tell of one: the
dry run answers, for a memory it would have created, the id the table's sequence gives next;
when the bot's own write created one too but got another id, something else inserted into that
table in between, and may have changed what the rule saw (a count, a duplicate). Where only one
side created a memory, the two decided differently: that is a disagreement. Other concurrent writes (an edit,
a delete) leave no such trace and count as disagreements: the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts.results import SAVED, SAVED_WITH_EVICTION, ShadowDifference, ShadowOutcome

NOT_COMPARED = frozenset({"command_id", "invalidated"})
# Where a result carries the ids of memories its command created, and the statuses with which
# it does (a create's save, a panel's add and import, a bio seed): only a concurrent insert
# makes those differ.
NEW_ID_FIELDS = frozenset({"data.memory_id", "data.memory_ids"})
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
    # Only where both created a memory: a refusal against a save is the rule's difference.
    if flatten(dry_result).get("data.status") in CREATING_STATUSES and any(
            d.field in NEW_ID_FIELDS and d.worker is not None and d.bot is not None for d in found):
        return "concurrent", found
    return "differed", found
