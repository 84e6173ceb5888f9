"""memoryctl dlq: list, show, replay and drop dead-lettered commands."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from contracts import subjects
from worker.cli import deletion, reach, terminal
from worker.cli.arguments import json_option, stream_sequence
from worker.consuming import dead_letters

ERROR_WIDTH = 80  # `dlq show SEQ` has the whole error
SUBJECT_WIDTH = 40
REASON_WIDTH = 22


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dlq = sub.add_parser("dlq", help="dead-lettered commands").add_subparsers(dest="action", required=True)
    p = dlq.add_parser("list", help="a table of dead letters")
    p.add_argument("--reason", help="only this Dlq-Reason (e.g. invalid_command, max_deliver_exhausted)")
    json_option(p)
    dlq.add_parser("show", help="headers and payload of one dead letter").add_argument("seq", type=stream_sequence)
    p = dlq.add_parser("replay", help="republish to the original subject (a new Nats-Msg-Id)",
                       description="Republish dead letters to their original subjects, each with a new Nats-Msg-Id."
                                   " For each one it says the command it became (command id, subject, new"
                                   " MEMORY_COMMANDS sequence), whether it left the dead-letter queue, and the"
                                   " memory.result.<workspace>.<command_id> lookup that answers its result.")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("seqs", nargs="*", type=stream_sequence, default=[], metavar="SEQ")
    which.add_argument("--all", action="store_true")
    p.add_argument("--reason", help="with --all: only this Dlq-Reason")
    p.add_argument("--dry-run", action="store_true", help="say what would be replayed, change nothing")
    p.add_argument("--include-invalid", action="store_true",
                   help="also replay invalid_command and unsupported_command letters, refused otherwise: only once"
                        " what refused them changed (REPLY_SUBJECT_PREFIXES, MAX_COMMAND_BYTES, a newer worker)")
    p = dlq.add_parser("drop", help="delete dead letters (the only copy a replay has): asks first, or --yes",
                       description="Delete dead letters. Lists how many and which, then asks on the terminal;"
                                   " without a terminal it refuses unless --yes.")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("seqs", nargs="*", type=stream_sequence, default=[], metavar="SEQ")
    which.add_argument("--all", action="store_true")
    p.add_argument("--reason", help="with --all: only this Dlq-Reason")
    deletion.add_arguments(p, "dead letters")


async def run(args: argparse.Namespace, nats_url: str, out: Callable[[str], None] = terminal.say,
              progress: Callable[[int, int], None] | None = None, connect_options: dict[str, Any] | None = None,
              ask: Callable[[str], bool | None] = terminal.ask) -> int:
    nc = await reach.nats_connection(nats_url, connect_options)
    try:
        js = nc.jetstream()
        if args.action == "list":
            return await _list(js, args, out)
        if args.action == "show":
            return await _show(js, args, out)
        return await _replay_or_drop(js, args, out, progress or _progress_bar, ask)
    finally:
        await nc.close()


def _age(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "?"
    seconds = int((now - at).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _time(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if at else "?"


async def _list(js: JetStreamContext, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    now = datetime.now(UTC)
    rows = [letter async for letter in dead_letters.entries(js, args.reason)]
    if getattr(args, "json", False):
        out(terminal.json_text([_letter_json(r) for r in rows]))
        return 0
    if not rows:
        out("no dead letters" + (f" with reason {args.reason}" if args.reason else ""))
        return 0
    out(f"{'seq':>6}  {'original subject':<{SUBJECT_WIDTH}} {'reason':<{REASON_WIDTH}} {'dlv':>3}  "
        f"{'first failure':<19}  {'last failure':<19}  {'age':>4}  error")
    for r in rows:
        error = terminal.cell(" ".join(r.error.split()), ERROR_WIDTH)  # one line: an error may hold newlines
        out(f"{r.seq:>6}  {terminal.cell(r.original_subject, SUBJECT_WIDTH):<{SUBJECT_WIDTH}} "
            f"{terminal.cell(r.reason, REASON_WIDTH):<{REASON_WIDTH}} {r.deliveries:>3}  "
            f"{_time(r.first_failed_at):<19}  {_time(r.dead_lettered_at):<19}  {_age(r.dead_lettered_at, now):>4}"
            f"  {error or '-'}")
    out(f"{len(rows)} dead letter(s)")
    return 0


def _letter_json(letter: dead_letters.DeadLetter) -> dict[str, Any]:
    return {"seq": letter.seq, "original_subject": letter.original_subject, "reason": letter.reason,
            "deliveries": letter.deliveries, "command_id": letter.command_id,
            "first_failed_at": letter.first_failed_at.isoformat() if letter.first_failed_at else None,
            "dead_lettered_at": letter.dead_lettered_at.isoformat() if letter.dead_lettered_at else None,
            "error": letter.error, "kept_by_reference": letter.by_reference}


async def _show(js: JetStreamContext, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    try:
        letter = await dead_letters.get(js, args.seq)
    except NotFoundError:
        out(f"no dead letter with sequence {args.seq}")
        return 1
    out(f"seq {letter.seq}")
    for key in sorted(letter.headers):
        out(f"  {key}: {letter.headers[key]}")
    if letter.by_reference:
        h = letter.headers
        out(f"kept by reference: the original ({h.get('Dlq-Original-Size')} bytes, sha256 "
            f"{h.get('Dlq-Original-Sha256')}, {h.get('Dlq-Original-Stream')}) was too large to dead-letter whole; "
            f"below are its first {len(letter.payload)} bytes. It cannot be replayed.")
    try:
        pretty = msgspec.json.format(letter.payload, indent=2).decode("utf-8", errors="replace")
    except msgspec.DecodeError:
        pretty = f"(not JSON, {len(letter.payload)} bytes) {letter.payload[:2000]!r}"
    out(pretty)
    return 0


async def _replay_or_drop(js: JetStreamContext, args: argparse.Namespace, out: Callable[[str], None],
                          progress: Callable[[int, int], None], ask: Callable[[str], bool | None]) -> int:
    if args.reason and not args.all:
        out("--reason selects among --all; with sequence numbers, name exactly the letters to act on")
        return 2
    if args.all:
        targets = [letter async for letter in dead_letters.entries(js, args.reason)]
    else:
        targets, missing = [], []
        for seq in args.seqs:
            try:
                targets.append(await dead_letters.get(js, seq))
            except NotFoundError:
                missing.append(seq)
        if missing:
            out(f"no dead letter with sequence {', '.join(map(str, missing))}: nothing done")
            return 1
    if args.action == "drop":
        return await _drop(js, args, targets, out, progress, ask)
    include_invalid = getattr(args, "include_invalid", False)
    refused = [(letter, why) for letter in targets
               if (why := dead_letters.replay_refusal(letter, include_invalid=include_invalid))]
    for letter, why in refused:
        out(f"cannot replay {letter.seq}: {why}")
    targets = [letter for letter in targets if all(letter is not r for r, _ in refused)]
    if args.dry_run:
        for letter in targets:
            out(f"would replay {_named(letter)}")
        out(f"dry run: {len(targets)} dead letter(s) would be replayed")
        return 1 if refused else 0
    done: Counter[str] = Counter()
    replayed = []
    for i, letter in enumerate(targets, 1):
        replayed.append(await dead_letters.replay(js, letter, include_invalid=include_invalid))
        done[letter.reason] += 1
        progress(i, len(targets))
    for one in replayed:
        out(_became(one))
    out(f"replayed {len(targets)} dead letter(s): {_by_reason(done)}")
    return 1 if refused else 0


def _became(one: dead_letters.Replayed) -> str:
    """One replayed letter: the command it is now, whether it left the queue, where its answer is."""
    letter = one.letter
    command = letter.command_id
    named = f"command {command}" if command else "a command without a readable command_id"
    left = ("left the dead-letter queue" if one.left_queue
            else "its dead letter was already gone (dropped or replayed meanwhile)")
    if command:
        _, token = subjects.split_workspace_token(letter.original_subject)
        answer = (f"its result: the bot's reply subject, or a lookup request on "
                  f"{subjects.result_subject(subjects.decode_token(token), command)}")
    else:
        answer = "no result lookup without a command_id"
    return (f"replayed {letter.seq}: republished to {letter.original_subject} as {named}"
            f" ({subjects.COMMANDS_STREAM} seq {one.command_seq}, Nats-Msg-Id {one.msg_id}); {left}; {answer}")


async def _drop(js: JetStreamContext, args: argparse.Namespace, targets: list[dead_letters.DeadLetter],
                out: Callable[[str], None], progress: Callable[[int, int], None],
                ask: Callable[[str], bool | None]) -> int:
    refusal = deletion.confirm([_named(letter) for letter in targets], "dead letter(s)", yes=args.yes,
                               dry_run=args.dry_run, out=out, ask=ask)
    if refusal is not None:
        return refusal
    done: Counter[str] = Counter()
    for i, letter in enumerate(targets, 1):
        await dead_letters.drop(js, letter.seq)
        done[letter.reason] += 1
        progress(i, len(targets))
    out(f"dropped {len(targets)} dead letter(s): {_by_reason(done)}")
    return 0


def _named(letter: dead_letters.DeadLetter) -> str:
    return f"{letter.seq}: {letter.original_subject} ({letter.reason})"


def _by_reason(done: Counter[str]) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in sorted(done.items())) or "nothing"


def _progress_bar(done: int, total: int, width: int = 30) -> None:
    if total < 2:
        return
    filled = width * done // total
    end = "\n" if done == total else ""
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end=end, file=sys.stderr, flush=True)
