"""memoryctl's operator commands on the directory and on memories."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import asyncpg

from db import directory
from worker.cli import reach, terminal
from worker.cli.arguments import json_option
from worker.domain.proxy import is_proxy_identity_id

Out = Callable[[str], None]

ON_OFF = {"on": True, "off": False, "true": True, "false": False, "yes": True, "no": False}


def _on_off(value: str) -> bool:
    try:
        return ON_OFF[value.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"expected on or off, got {value!r}") from None


def _privacy(value: str) -> int:
    if value.lower() in directory.PRIVACY_LEVELS:
        return directory.PRIVACY_LEVELS[value.lower()]
    if value in ("0", "1", "2"):
        return int(value)
    raise argparse.ArgumentTypeError(f"expected open, partial or full (or 0, 1, 2), got {value!r}")


# The bounds of the tables' own checks and of the contract: out of them, a clear argument
# error instead of the database driver's traceback.
MAX_DECAY_DAYS = 36_500  # memory_decay_days' CHECK in db/standalone.sql and db/adopted.sql
MAX_LINEAGE = 2**63 - 1  # the contract's LineageId (contracts/fields.py): bigint
CONTENT_WIDTH = 60  # `memories list` cuts a memory to this, marked


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of days, got {value!r}") from None
    if not 1 <= number <= MAX_DECAY_DAYS:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_DECAY_DAYS} days, got {number}")
    return number


def _lineage(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a persona lineage id (a whole number), got {value!r}") from None
    if not 0 <= number <= MAX_LINEAGE:
        raise argparse.ArgumentTypeError(f"expected a lineage id from 0 to 2^63 - 1 ({MAX_LINEAGE}), got {number}")
    return number


def _list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    user = sub.add_parser("user", help="users: register one, privacy level, saved nickname").add_subparsers(
        dest="action", required=True)
    user.add_parser("add", help="register a user (a users row, as the bot would make); standalone only",
                    description="Add the users row of a Discord user id, with the defaults (privacy open, no"
                                " nickname), for a command that needs the row before the bot has written it."
                                " Nothing changes when the row exists. An adopted database's users are the"
                                " bot's to register.").add_argument("user_id")
    p = user.add_parser("show", help="a user's privacy level, saved nickname and blacklists, as the worker reads them")
    p.add_argument("user_id")
    json_option(p)
    p = user.add_parser("privacy", help="set a user's privacy level (open, partial, full); standalone only")
    p.add_argument("user_id")
    p.add_argument("level", type=_privacy)
    p = user.add_parser("nickname", help="set (or clear with 'none') a user's saved nickname; standalone only")
    p.add_argument("user_id")
    p.add_argument("nickname")

    ws = sub.add_parser("workspace", help="workspace settings (adopted: decay and the secret guard only)"
                        ).add_subparsers(dest="action", required=True)
    p = ws.add_parser("show", help="print a workspace's settings")
    p.add_argument("workspace_id")
    json_option(p)
    p = ws.add_parser("set", help="change workspace settings (only the options given)")
    p.add_argument("workspace_id")
    p.add_argument("--self-teaching", type=_on_off, metavar="on|off")
    p.add_argument("--personal-memories", type=_on_off, metavar="on|off")
    p.add_argument("--decay", type=_on_off, metavar="on|off")
    p.add_argument("--decay-days", type=_positive, metavar="DAYS")
    p.add_argument("--notice-verbosity", choices=["minimal", "verbose"])
    p.add_argument("--hidden-keys", type=_list, metavar="KEY,KEY")
    p.add_argument("--thought-log", metavar="CHANNEL|none")
    p.add_argument("--private-channels", type=_list, metavar="CHANNEL,CHANNEL")
    p.add_argument("--secret-guard", choices=directory.GUARD_CHOICES, help="refuse the model's memories holding secrets")

    bl = sub.add_parser("blacklist", help="personalization blacklist entries").add_subparsers(dest="action",
                                                                                          required=True)
    for name in ("add", "remove"):
        p = bl.add_parser(name, help=f"{name} an entry (standalone only: an adopted bot keeps its own)")
        p.add_argument("workspace_id")
        p.add_argument("user_id")
    p = bl.add_parser("list", help="the users blacklisted in a workspace")
    p.add_argument("workspace_id")
    json_option(p)

    px = sub.add_parser("proxy", help="message-proxy identities and their hosts").add_subparsers(dest="action",
                                                                                              required=True)
    p = px.add_parser("link", help="register an identity (pk:<uuid>, pb:<digits>, or a custom instance's"
                                   " <prefix>i:<length>:<instance>:<key>) under a host")
    p.add_argument("identity_id")
    p.add_argument("--namespace", required=True)
    p.add_argument("--host", required=True, help="the hosting Discord user id")
    p = px.add_parser("unlink", help="remove a host from a namespace")
    p.add_argument("--namespace", required=True)
    p.add_argument("--host", required=True)
    p = px.add_parser("show", help="an identity's namespace and hosts, as the worker reads them")
    p.add_argument("identity_id")
    json_option(p)

    mem = sub.add_parser("memories", help="inspect memories").add_subparsers(dest="action", required=True)
    p = mem.add_parser("list", help="an owner's memories with protection and dormancy")
    owner = p.add_mutually_exclusive_group(required=True)
    owner.add_argument("--workspace", help="server memories of this workspace")
    owner.add_argument("--user", help="personal memories of this user")
    p.add_argument("--lineage", type=_lineage, metavar="N",
                   help="only this persona lineage (0: a user's global memories, shared by every persona)")
    p.add_argument("--decay-days", type=_positive, default=30,
                   help="dormancy threshold shown for personal memories (default 30)")
    json_option(p)


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
