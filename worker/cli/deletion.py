"""The rule of every memoryctl command that deletes what cannot be made again (a dead letter is
the only copy a replay has; a dropped command is never applied): say how many and which would
go, then delete only once the operator said yes at the terminal, or gave --yes. Without a
terminal and without --yes, refuse: a script that meant to list must not wipe. --dry-run says
the same and deletes nothing."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from worker.cli import terminal

SHOWN = 20  # the ones listed before asking; --dry-run lists every one
DECLINED = 1  # the operator answered no
REFUSED = 2  # no terminal to ask on, and no --yes


def add_arguments(parser: argparse.ArgumentParser, things: str) -> None:
    parser.add_argument("--dry-run", action="store_true", help=f"list the {things} that would be deleted, delete"
                        " nothing")
    parser.add_argument("--yes", action="store_true", help="delete without asking; needed where there is no terminal"
                        " to ask on (a script, a pipe)")


def confirm(listed: Sequence[str], things: str, *, yes: bool, dry_run: bool, out: Callable[[str], None],
            ask: Callable[[str], bool | None] = terminal.ask, verb: str = "drop", done: str = "dropped") -> int | None:
    """None: go ahead and delete `listed` (one line each); else the exit code, having said why
    nothing was deleted. `things` names them in the plural ("dead letter(s)"), `verb` and `done`
    what is done to them."""
    count = len(listed)
    if count == 0:
        return None
    shown = listed if dry_run else listed[:SHOWN]
    out(f"{count} {things} to {verb}:")
    for line in shown:
        out(f"  {line}")
    if len(shown) < count:
        out(f"  ... and {count - len(shown)} more (--dry-run lists every one)")
    if dry_run:
        out(f"dry run: {count} {things} would be {done}, nothing deleted")
        return 0
    if yes:
        return None
    answer = ask(f"{verb} these {count} {things}? This cannot be undone [y/N] ")
    if answer is None:
        out(f"refusing to {verb} {count} {things}: no terminal to confirm on. Add --yes to {verb} them,"
            " or --dry-run to only list them")
        return REFUSED
    if not answer:
        out(f"nothing {done}")
        return DECLINED
    return None
