"""memoryctl's operator commands on the directory and on memories."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import asyncpg

from db import directory
from worker.cli import reach, terminal
from worker.cli.admin_arguments import add_parsers as add_parsers
from worker.domain.proxy import is_proxy_identity_id

Out = Callable[[str], None]

CONTENT_WIDTH = 60  # `memories list` cuts a memory to this, marked


async def run(args: argparse.Namespace, database_url: str, out: Callable[[str], None] = terminal.say) -> int:
    conn = await reach.database_connection(database_url)
    try:
        await directory.require_mode(conn)
        return await _COMMANDS[(args.command, args.action)](conn, args, out)
    except (directory.BotOwned, directory.NotSetUp, directory.UnknownWorkspace) as exc:
        out(f"memoryctl {args.command} {args.action}: {exc}")
        return 2
    finally:
        await conn.close()


def _registered(new: bool) -> str:
    return " (registered now: no users row had this id)" if new else ""


async def _user_show(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    row = await directory.user(conn, args.user_id)
    if args.json:
        out(terminal.json_text(None if row is None else {
            "user_id": row["user_disc_id"], "privacy_level": row["privacy_level"],
            "privacy": _level_name(row["privacy_level"]), "nickname": row["nickname"],
            "blacklisted_in": row["blacklisted_in"]}))
        return 1 if row is None else 0
    if row is None:
        out(f"user {args.user_id} is not registered (personal saves for them are refused as user not found)")
        return 1
    out(f"user {row['user_disc_id']}")
    out(f"  privacy            {row['privacy_level']} ({_level_name(row['privacy_level'])})")
    out(f"  saved nickname     {row['nickname']!r}")
    out(f"  blacklisted in     {', '.join(row['blacklisted_in']) or 'none'}")
    return 0


async def _user_add(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    if await directory.user(conn, args.user_id) is not None:
        out(f"user {args.user_id} is already registered: nothing changed (memoryctl user show {args.user_id})")
        return 0
    if await directory.require_mode(conn) == "adopted":
        raise directory.BotOwned(f"this database is adopted: user {args.user_id} has no users row, and registering"
                                 " one is the bot's to do (in the bot itself)")
    await directory.ensure_user(conn, args.user_id)
    out(f"user {args.user_id} registered: privacy 0 (open), no saved nickname")
    return 0


async def _user_privacy(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    new = await directory.set_privacy(conn, args.user_id, args.level)
    out(f"user {args.user_id}: privacy {args.level} ({_level_name(args.level)}){_registered(new)}")
    return 0


async def _user_nickname(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    nickname = None if args.nickname.lower() == "none" else args.nickname
    new = await directory.set_nickname(conn, args.user_id, nickname)
    out(f"user {args.user_id}: nickname {nickname!r}{_registered(new)}")
    return 0


async def _workspace_show(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    row = await directory.workspace(conn, args.workspace_id)
    if args.json:
        out(terminal.json_text(None if row is None else {
            "workspace_id": row["server_disc_id"],
            "settings": {key: row[column] for key, column in directory.WORKSPACE_SETTINGS.items()}}))
        return 1 if row is None else 0
    if row is None:
        out(f"workspace {args.workspace_id} is not registered (defaults apply)")
        return 1
    _print_settings(row, out)
    return 0


async def _workspace_set(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    changes = {key: getattr(args, key) for key in directory.WORKSPACE_SETTINGS if getattr(args, key) is not None}
    if str(changes.get("thought_log", "")).lower() in ("none", "off"):
        changes["thought_log"] = None
    if "secret_guard" in changes:
        changes["secret_guard"] = directory.GUARD_CHOICES[changes["secret_guard"]]
    if not changes:
        out("nothing to change: give at least one option (see memoryctl workspace set --help)")
        return 2
    new = await directory.workspace(conn, args.workspace_id) is None
    _print_settings(await directory.update_workspace(conn, args.workspace_id, changes), out)
    if new:
        out(f"(workspace {args.workspace_id} registered now: no servers row had this id)")
    return 0


async def _blacklist_add(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    new = await directory.workspace(conn, args.workspace_id) is None
    changed = await directory.blacklist(conn, args.workspace_id, args.user_id, add=True)
    out(f"{args.user_id} {'added to' if changed else 'was already on'} the blacklist of {args.workspace_id}"
        + (" (workspace registered now: no servers row had this id)" if new else ""))
    return 0


async def _blacklist_remove(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    changed = await directory.blacklist(conn, args.workspace_id, args.user_id, add=False)
    out(f"{args.user_id} {'removed from' if changed else 'was not on'} the blacklist of {args.workspace_id}")
    return 0 if changed else 1


async def _blacklist_list(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    users = await directory.blacklisted(conn, args.workspace_id)
    if args.json:
        out(terminal.json_text({"workspace_id": args.workspace_id, "blacklisted": users}))
        return 0
    out("\n".join(users) if users else f"no blacklist entries in {args.workspace_id}")
    return 0


async def _proxy_link(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    if not is_proxy_identity_id(args.identity_id):
        out(f"{args.identity_id!r} is not a proxy identity id: expected pk:<uuid>, pb:<digits> or"
            " <prefix>i:<length>:<instance>:<key>")
        return 2
    new = await directory.user(conn, args.identity_id) is None
    await directory.link_proxy(conn, args.identity_id, args.namespace, args.host)
    out(f"{args.identity_id} in namespace {args.namespace}, hosted by {args.host}{_registered(new)}")
    return 0


async def _proxy_unlink(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    changed = await directory.unlink_host(conn, args.namespace, args.host)
    out(f"host {args.host} {'removed from' if changed else 'was not in'} namespace {args.namespace}")
    return 0 if changed else 1


async def _proxy_show(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    row = await directory.proxy(conn, args.identity_id)
    if args.json:
        out(terminal.json_text(None if row is None else {
            "identity_id": row["user_disc_id"], "namespace_id": row["namespace_id"], "hosts": row["hosts"]}))
        return 1 if row is None else 0
    if row is None:
        out(f"{args.identity_id} is not a registered proxy identity")
        return 1
    hosts = ", ".join(row["hosts"]) or "none (writes for it are refused: no resolvable host)"
    namespace = row["namespace_id"] or "(the bot's)"
    out(f"{row['user_disc_id']}: namespace {namespace}, hosts {hosts}")
    return 0


async def _memories_list(conn: asyncpg.Connection, args: argparse.Namespace, out: Out) -> int:
    rows = await directory.list_memories(conn, workspace_id=args.workspace, user_id=args.user, lineage_id=args.lineage)
    if args.json:
        out(terminal.json_text([_memory_json(r, _state(r, r.decay_days if args.workspace else args.decay_days))
                                for r in rows]))
        return 0
    if not rows:
        out("no memories")
        return 0
    out(f"{'id':>8} {'lineage':>7} {'protected':<9} {'idle':>7} {'state':<10} {'source':<8} {'used':>4}  content")
    states = set()
    for r in rows:
        decay = r.decay_days if args.workspace else args.decay_days
        states.add(state := _state(r, decay))
        out(f"{r.memory_id:>8} {r.lineage_id:>7} {'yes' if r.manually_written else 'no':<9} {r.idle_days:>6.1f}d "
            f"{state:<10} {terminal.cell(r.source, 8):<8} {r.reinforcement_count:>4}  {terminal.cell(r.content, CONTENT_WIDTH)}")
    out("")
    for state in sorted(states):
        out(f"{state}: {STATES[state]}")
    return 0


def _memory_json(row: directory.MemoryListing, state: str) -> dict[str, Any]:
    return {"memory_id": row.memory_id, "lineage_id": row.lineage_id, "state": state, "meaning": STATES[state],
            "protected": row.manually_written, "idle_days": round(float(row.idle_days), 3), "source": row.source,
            "reinforcement_count": row.reinforcement_count, "created_at": row.created_at.isoformat(),
            "last_reinforced_at": row.last_reinforced_at.isoformat() if row.last_reinforced_at else None,
            "tags": list(row.tags), "content": row.content}


# What each state means for the next save at the cap (README, "memories list").
STATES = {
    "active": "used or written within the decay days: never replaced",
    "dormant": "idle longer than the decay days: a save at the cap may replace it (the longest idle first)",
    "kept": "decay is off for this workspace: never replaced, a save at the cap is refused",
    "protected": "written or edited by a person (manually_written): never replaced",
    "global": "lineage 0, shared by every persona: never replaced",
}


def _state(row: directory.MemoryListing, decay_days: int | None) -> str:
    if row.lineage_id == 0:
        return "global"
    if row.manually_written:
        return "protected"
    if decay_days is None:
        return "kept"  # decay is off for this workspace: nothing is ever replaced
    return "dormant" if row.idle_days > decay_days else "active"


def _level_name(level: int) -> str:
    return {v: k for k, v in directory.PRIVACY_LEVELS.items()}[level]


def _print_settings(row: dict[str, Any], out: Out) -> None:
    out(f"workspace {row['server_disc_id']}")
    for key, column in directory.WORKSPACE_SETTINGS.items():
        out(f"  {key:<18} {directory.shown(key, row[column])}")


_COMMANDS = {
    ("user", "show"): _user_show,
    ("user", "add"): _user_add,
    ("user", "privacy"): _user_privacy,
    ("user", "nickname"): _user_nickname,
    ("workspace", "show"): _workspace_show,
    ("workspace", "set"): _workspace_set,
    ("blacklist", "add"): _blacklist_add,
    ("blacklist", "remove"): _blacklist_remove,
    ("blacklist", "list"): _blacklist_list,
    ("proxy", "link"): _proxy_link,
    ("proxy", "unlink"): _proxy_unlink,
    ("proxy", "show"): _proxy_show,
    ("memories", "list"): _memories_list,
}
