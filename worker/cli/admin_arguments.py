"""memoryctl's directory and memories subcommands: their arguments, each checked where it is
parsed (a bound of the tables or of the contract is an argparse error naming the argument, not
the database driver's traceback)."""

from __future__ import annotations

import argparse

from db import directory
from worker.cli.arguments import json_option

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
    for add in (_user, _workspace, _blacklist, _proxy, _memories):
        add(sub)


def _user(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def _workspace(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def _blacklist(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bl = sub.add_parser("blacklist", help="personalization blacklist entries").add_subparsers(dest="action",
                                                                                          required=True)
    for name in ("add", "remove"):
        p = bl.add_parser(name, help=f"{name} an entry (standalone only: an adopted bot keeps its own)")
        p.add_argument("workspace_id")
        p.add_argument("user_id")
    p = bl.add_parser("list", help="the users blacklisted in a workspace")
    p.add_argument("workspace_id")
    json_option(p)


def _proxy(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def _memories(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
