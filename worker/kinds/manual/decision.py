"""The `memory.manual` decision (the `/memories` and `/personal memories` panels and TomoriBot's data import,
docs/design.md, section 8.1).

`decide_manual` takes what the persistence layer read under the owner lock (`ManualContext`)
and answers with a refusal or the one write to make. Checks run in a fixed order: first who
may act on this owner at all (blacklist, privacy, proxy identity and its host, the teaching
switch), then the action's own checks, so a person who may not act learns that before being
told about their content.

People write these memories by hand, so unlike model saves they are only trimmed, never
sanitized, and they never evict: at the cap a manual add is refused and the person chooses
what to remove. Every add and edit is written `manually_written`, which protects the row
from eviction; that is why an edit of an unprotected row is an `Update` even when nothing
visible changes.

Beyond the spec:
- `identity_id` is ignored for server memories (it only means something for personal ones).
- An edit that keeps the stored content (tags only, or the same text) is not length-checked:
  a limit lowered after the row was written must not block changing its tags.
- A target whose id or lineage differs from the command's is treated as not found, so a
  loader mistake cannot lead to a write outside the owner's exact lineage.
- A server row with no known teacher (`taught_by` None) is hidden from non-managers.

The import's own checks are worker/kinds/manual/data_import.py's; who may import is decided here,
with the other actions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from contracts.kinds.manual import (
    ALL_DUPLICATES,
    BATCH_LIMIT_REACHED,
    BLACKLISTED,
    HOST_PROTECTED,
    LIMIT_REACHED,
    MANAGERS_ONLY,
    NOT_FOUND,
    PRIVACY_BLOCKED,
    TEACHING_DISABLED,
    ManualMemory,
)
from worker.domain.people import Privacy
from worker.domain.proxy import WORDS, host_protection
from worker.domain.tags import parse_tags
from worker.domain.workspace import Limits
from worker.kinds.manual.context import ManualContext, PanelMemory
from worker.kinds.manual.data_import import decide_import
from worker.kinds.manual.decided import Delete, Insert, ManualDecision, Refuse, Unchanged, Update
from worker.kinds.manual.panel import EMPTY, SERVER_PANEL, PanelOwner, first_of_each, panel_owner, too_long

__all__ = ["decide_manual"]

_PRIVACY_PANEL = "/personal config"


# --- who may act --------------------------------------------------------------------------


def _only_forgets(cmd: ManualMemory) -> bool:
    """A remove, or a replace with no entries: it only deletes, which no protection blocks."""
    return cmd.action == "remove" or (cmd.action == "import" and cmd.strategy == "replace" and cmd.entries == [])


def _server_refusal(cmd: ManualMemory, ctx: ManualContext) -> Refuse | None:
    if cmd.actor.is_manager:
        return None  # managers run the server's memories whatever their own standing
    if cmd.action == "import":
        # TomoriBot's data import of a server's memories is a manager's command.
        return Refuse(
            MANAGERS_ONLY,
            "Only server managers can import this server's memories. Ask one to run the import.",
        )
    if ctx.actor_blacklisted:
        return Refuse(
            BLACKLISTED,
            "You are excluded from personalization on this server, so you can't change its "
            "memories. A server manager can change that.",
        )
    if cmd.action != "remove" and not ctx.workspace.member_teaching_enabled:
        # Removing stays open: people may always take back what they taught.
        return Refuse(
            TEACHING_DISABLED,
            "Teaching is turned off on this server, so only server managers can add or edit "
            f"its memories. You can still remove memories you taught with {SERVER_PANEL}.",
        )
    return None


def _identity_refusal(cmd: ManualMemory, ctx: ManualContext) -> Refuse | None:
    if ctx.identity is None or not ctx.identity_hosted_by_actor:
        return Refuse(
            NOT_FOUND,
            f"No such identity among yours: {cmd.identity_id} is not a proxy identity you host.",
        )
    if _only_forgets(cmd):
        return None  # neither protection blocks forgetting
    why = host_protection(ctx.identity)
    if why is not None:
        return Refuse(HOST_PROTECTED, f"Nothing was changed for this identity: {WORDS[why]}.")
    if ctx.identity.privacy_level >= Privacy.FULL:
        return Refuse(PRIVACY_BLOCKED, "This identity's privacy setting is full, so no personal memories are "
                                             f"kept about it. It can be changed with {_PRIVACY_PANEL}.")
    return None


def _personal_refusal(cmd: ManualMemory, ctx: ManualContext) -> Refuse | None:
    if cmd.identity_id is not None:
        return _identity_refusal(cmd, ctx)
    # Only FULL blocks: PARTIAL limits what the bot learns on its own, not what people write.
    # Removing is never blocked: forgetting is what a full privacy setting asks for.
    if ctx.actor_privacy_level >= Privacy.FULL and not _only_forgets(cmd):
        return Refuse(
            PRIVACY_BLOCKED,
            "Your privacy setting is full, so no personal memories are kept about you. "
            f"You can change that with {_PRIVACY_PANEL}.",
        )
    return None


def _actor_refusal(cmd: ManualMemory, ctx: ManualContext) -> Refuse | None:
    if cmd.scope == "server":
        return _server_refusal(cmd, ctx)
    return _personal_refusal(cmd, ctx)


# --- content --------------------------------------------------------------------------------


def _unique(items: Iterable[str], existing: Iterable[str]) -> tuple[list[str], int]:
    """Items not already seen (case-insensitively) in `existing` or earlier in the batch."""
    return first_of_each(items, str.casefold, (text.strip().casefold() for text in existing))


def _batch_items(cmd: ManualMemory) -> list[str]:
    # The typed entry comes last, after the lines of the uploaded file.
    raw = list(cmd.contents or [])
    if cmd.content is not None:
        raw.append(cmd.content)
    return [text for text in (item.strip() for item in raw) if text]


# --- actions ----------------------------------------------------------------------------------


def _add(cmd: ManualMemory, ctx: ManualContext, limits: Limits, owner: PanelOwner) -> ManualDecision:
    content = (cmd.content or "").strip()
    if not content:
        return EMPTY
    if refusal := too_long(content, limits):
        return refusal
    if ctx.count >= owner.cap:
        return Refuse(
            LIMIT_REACHED,
            f"{owner.has} reached the limit of {owner.cap} memories, and memories added by hand "
            f"never replace old ones. Remove some with {owner.panel} to make room.",
        )
    return Insert((content,), parse_tags(cmd.tags))


def _add_batch(cmd: ManualMemory, ctx: ManualContext, limits: Limits, owner: PanelOwner) -> ManualDecision:
    given = _batch_items(cmd)
    if not given:
        return EMPTY
    items, skipped = _unique(given, ctx.existing_contents)
    if not items:
        return Refuse(
            ALL_DUPLICATES,
            "Every memory in the batch is already saved (or repeats another line), so nothing was added.",
        )
    for position, item in enumerate(items, start=1):
        if refusal := too_long(item, limits, f"Memory {position} of the batch"):
            return refusal
    requested = len(items)
    if ctx.count + requested > owner.cap:
        # All or nothing: a partial upload would leave the person guessing which lines made it.
        available = max(owner.cap - ctx.count, 0)
        return Refuse(
            BATCH_LIMIT_REACHED,
            f"The batch has {requested} new memories, but only {available} more fit under the limit "
            f"of {owner.cap}, so nothing was added. Remove some with {owner.panel}, or add fewer.",
            {"available": available, "requested": requested},
        )
    return Insert(tuple(items), parse_tags(cmd.tags), skipped_duplicates=skipped)


def _visible(row: PanelMemory, cmd: ManualMemory, owner: PanelOwner) -> bool:
    if row.memory_id != cmd.memory_id or row.lineage_id != cmd.lineage_id:
        return False
    return not owner.only_own or row.taught_by == cmd.actor.id


def _not_found(cmd: ManualMemory, owner: PanelOwner) -> Refuse:
    if cmd.memory_id is None:
        return Refuse(NOT_FOUND, f"No memory was chosen to {cmd.action}. Pick one in {owner.panel}.")
    mine = " among the server memories you taught" if owner.only_own else ""
    return Refuse(
        NOT_FOUND,
        f"Memory {cmd.memory_id} was not found{mine}; it may have been removed already or belong "
        f"to another persona. Check the list in {owner.panel}.",
    )


def _edit(cmd: ManualMemory, ctx: ManualContext, limits: Limits, owner: PanelOwner) -> ManualDecision:
    row = ctx.target
    if row is None or not _visible(row, cmd, owner):
        return _not_found(cmd, owner)
    content = cmd.content.strip() if cmd.content is not None else row.content
    if not content:
        return EMPTY
    if content != row.content and (refusal := too_long(content, limits)):
        return refusal
    tags = parse_tags(cmd.tags) if cmd.tags is not None else row.tags
    if content == row.content and tags == row.tags and row.manually_written:
        return Unchanged(row.memory_id)
    return Update(row.memory_id, content, tags)


def _remove(cmd: ManualMemory, ctx: ManualContext, limits: Limits, owner: PanelOwner) -> ManualDecision:
    row = ctx.target
    if row is None or not _visible(row, cmd, owner):
        return _not_found(cmd, owner)
    return Delete(row.memory_id, row.content)


_Action = Callable[[ManualMemory, ManualContext, Limits, PanelOwner], ManualDecision]
_ACTIONS: dict[str, _Action] = {"add": _add, "add_batch": _add_batch, "edit": _edit, "remove": _remove,
                                "import": decide_import}


def decide_manual(cmd: ManualMemory, ctx: ManualContext, limits: Limits) -> ManualDecision:
    """Who may act first, then the action's own checks; the first refusal is the answer."""
    if refusal := _actor_refusal(cmd, ctx):
        return refusal
    return _ACTIONS[cmd.action](cmd, ctx, limits, panel_owner(cmd, limits))
