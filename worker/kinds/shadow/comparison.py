"""Shadow mode's rules: how a bot's own write and the worker's dry run of the same command
compare, and what of either a shadow pair may keep (docs/design.md, "Dry runs and shadow
mode"). Pure: the report service pairs and reads, this decides.

Every field the bot reports is compared with the dry run's, by its dotted path in the result
(`data.status`, `error`, `notice.embed.footer_key`; an object only one side has is one field);
a field the bot leaves out is not compared, and two never are: the command_id (the report's
own) and `invalidated` (the worker's cache keys, which a bot writing itself has no reason to
know). A report that leaves nothing to compare (`{}`, `{"data": {}}`, a bot reporting the
wrong object) is `nothing_compared`, never an agreement.

A difference is put down to a concurrent write, not to a rule, only when another insert of the
same owner and scope came between the dry run and the bot's own write: the dry run answers,
for a memory it would have created, the id the table's sequence gives next; when the bot's own
write created as many of the same scope under later ids (`insert_window`), the service looks
in the memory table for a row of the dry run's owner with an id in that window. The sequences
are shared by every guild, so later ids alone tell nothing. Where only one side created a
memory, or another scope or count, the two decided differently: that is a disagreement. Other
concurrent writes (an edit, a delete) leave no such trace and count as disagreements.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from contracts.codec import encode
from contracts.kinds.create import SAVED, SAVED_WITH_EVICTION
from contracts.kinds.shadow import ShadowDifference, ShadowOutcome
from worker.domain.secret_guard import find_credential

NOT_COMPARED = frozenset({"command_id", "invalidated"})
# The statuses with which a result carries the ids of memories its command created (a create's
# save, a panel's add and import, a bio seed) in data.memory_id or data.memory_ids.
CREATING_STATUSES = frozenset({SAVED, SAVED_WITH_EVICTION, "added", "imported", "seeded"})
# What a pair keeps of the bot's side: a report is compared whole, but kept bounded, because a
# bot's bytes would otherwise stay for the inbox's retention without limit.
KEPT_RESULT_BYTES = 16 * 1024  # the bot's result, encoded
KEPT_VALUE_BYTES = 4 * 1024  # one value of a difference, either side's
KEPT_DIFFERENCES_BYTES = 16 * 1024  # the differences together
MORE_FIELD = "(more)"  # the one difference that says how many others were not kept


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


def compared_fields(worker: Mapping[str, Any], bot: Mapping[str, Any],
                    prefix: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Each field compared, in path order, with the dry run's value and the bot's. Objects both
    sides have are compared field by field; an object one side lacks is one field."""
    for key in sorted(bot):
        path = f"{prefix}{key}"
        if not prefix and key in NOT_COMPARED:
            continue
        ours, theirs = worker.get(key), bot[key]
        if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
            yield from compared_fields(ours, theirs, f"{path}.")
        else:
            yield path, ours, theirs


def differences(worker: Mapping[str, Any], bot: Mapping[str, Any]) -> list[ShadowDifference]:
    """The fields the bot gave whose value is not the dry run's, in path order."""
    return [ShadowDifference(field=path, worker=ours, bot=theirs)
            for path, ours, theirs in compared_fields(worker, bot) if ours != theirs]


def compare(dry_result: Mapping[str, Any] | None, *, timed_out: bool,
            bot_result: Mapping[str, Any] | None, bot_error: str | None,
            inserted_between: bool = False) -> tuple[ShadowOutcome, list[ShadowDifference]]:
    """The pair's outcome and its differences.

    `dry_result`: the dry run's answer (None: no dry run of this command reached the worker);
    `bot_result`: what the bot's own write gave (None with `bot_error` when it threw);
    `inserted_between`: a row of the dry run's owner and scope lies in `insert_window`'s ids."""
    if timed_out:
        return "timed_out", []
    if dry_result is None:
        return "unpaired", []
    if bot_result is None:
        return "differed", [ShadowDifference(field="error", worker=dry_result.get("error"), bot=bot_error)]
    if next(compared_fields(dry_result, bot_result), None) is None:
        return "nothing_compared", []
    found = differences(dry_result, bot_result)
    if not found:
        return "agreed", []
    if inserted_between and insert_window(dry_result, bot_result) is not None:
        return "concurrent", found
    return "differed", found


def insert_window(worker: Mapping[str, Any], bot: Mapping[str, Any]) -> tuple[int, int, list[int]] | None:
    """Where a concurrent insert would have to be for the ids to differ as they do: both created
    memories, of the same scope and as many, and every id the bot's own write got is past the
    one the dry run expected. Then (the first id foreseen, the bot's last id, the bot's ids);
    None when anything else differs in the ids (a save against a refusal, another scope,
    another count, an earlier id): the two decided differently."""
    ours, theirs = flatten(worker), flatten(bot)
    if ours.get("data.status") not in CREATING_STATUSES or theirs.get("data.status") not in CREATING_STATUSES:
        return None
    if "data.scope" in theirs and theirs["data.scope"] != ours.get("data.scope"):
        return None
    expected, got = _new_ids(ours), _new_ids(theirs)
    if not expected or len(expected) != len(got) or expected == got or any(
            mine < guess for guess, mine in zip(expected, got, strict=True)):
        return None
    return min(expected), max(got), got


def _new_ids(leaves: Mapping[str, Any]) -> list[int]:
    ids = leaves.get("data.memory_ids")
    if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
        return list(ids)
    single = leaves.get("data.memory_id")
    return [single] if isinstance(single, int) else []


def withheld(value: Any) -> Any:
    """`value` (a result, an error, a difference's value) with every string that holds a
    credential, key or value, replaced by the credential's kind: nothing of a secret is kept or
    shown, from the worker's side or from what a bot reports."""
    if isinstance(value, str):
        kind = find_credential(value)
        return value if kind is None else credential_mark(kind)
    if isinstance(value, Mapping):
        return {withheld(key): withheld(item) for key, item in value.items()}
    if isinstance(value, list):
        return [withheld(item) for item in value]
    return value


def credential_mark(kind: str) -> str:
    return f"<credential withheld: {kind}>"


def kept_result(result: Any) -> Any:
    """The bot's result as a pair keeps it: whole up to KEPT_RESULT_BYTES, else a mark."""
    return _bounded(result, KEPT_RESULT_BYTES)


def kept_differences(found: list[ShadowDifference]) -> list[ShadowDifference]:
    """The differences as a pair keeps them: each value up to KEPT_VALUE_BYTES (else a mark
    saying its size), as many as fit in KEPT_DIFFERENCES_BYTES, then one that counts the rest."""
    kept: list[ShadowDifference] = []
    size = 0
    for index, difference in enumerate(found):
        bounded = ShadowDifference(field=difference.field, worker=_bounded(difference.worker, KEPT_VALUE_BYTES),
                                   bot=_bounded(difference.bot, KEPT_VALUE_BYTES))
        size += len(encode(bounded))
        if size > KEPT_DIFFERENCES_BYTES:
            kept.append(ShadowDifference(field=MORE_FIELD, bot=f"<not kept: {len(found) - index} more differences>"))
            break
        kept.append(bounded)
    return kept


def _bounded(value: Any, limit: int) -> Any:
    size = len(encode(value))
    return value if size <= limit else f"<not kept: {size} bytes, more than {limit}>"
