"""memoryctl commands: what waits in MEMORY_COMMANDS, by partition; one command; dropping one.

The stream keeps a command after its acknowledgement until the worker purges it (a few
seconds): `list` shows each consumer's commands from the first it has not acknowledged.

For the day something is stuck anyway: the worker dead-letters whatever it cannot apply, so a
command that stays is a bug or an outage, and the operator needs to see it and, as a last
resort, remove it. A dropped command is never applied and never answered (its result lookup
says unknown); `dlq` is the way for commands that should be kept.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec
from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError

from contracts import subjects
from worker.cli import deletion, reach, terminal
from worker.cli.arguments import json_option, not_negative, stream_sequence
from worker.consuming.administration import retention, streams
from worker.shared.jetstream import stored_headers, stored_seq

SHOW_BYTES = 4000
SUBJECT_WIDTH = 60
COMMAND_ID_WIDTH = 80


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    commands = sub.add_parser("commands", help="commands waiting in MEMORY_COMMANDS").add_subparsers(
        dest="action", required=True)
    p = commands.add_parser("list", help="pending commands by partition consumer")
    p.add_argument("--limit", type=not_negative, default=10,
                   help="commands listed per partition (default 10; 0: the counts only)")
    json_option(p)
    commands.add_parser("show", help="subject, headers and payload of one command").add_argument("seq", type=stream_sequence)
    p = commands.add_parser("drop", help="delete commands from the stream: never applied, never answered; asks"
                            " first, or --yes", description="Delete commands from MEMORY_COMMANDS. Lists which, then"
                            " asks on the terminal; without a terminal it refuses unless --yes.")
    p.add_argument("seqs", nargs="+", type=stream_sequence, metavar="SEQ")
    deletion.add_arguments(p, "commands")


async def run(args: argparse.Namespace, nats_url: str, out: Callable[[str], None] = terminal.say,
              connect_options: dict[str, Any] | None = None, ask: Callable[[str], bool | None] = terminal.ask) -> int:
    nc = await reach.nats_connection(nats_url, connect_options)
    try:
        js = nc.jetstream()
        if args.action == "list":
            return await _list(js, args.limit, out, as_json=args.json)
        if args.action == "show":
            return await _show(js, args.seq, out)
        return await _drop(js, args, out, ask)
    finally:
        await nc.close()


def _partition_count(transform_dest: str | None) -> int:
    # cmd.{{partition(P,2)}}.{{wildcard(1)}}.{{wildcard(2)}}: P is the stream's own setting.
    try:
        return int((transform_dest or "").split("partition(", 1)[1].split(",", 1)[0])
    except (IndexError, ValueError):
        return 0


def _command_id(raw: RawStreamMsg) -> str | None:
    try:
        command_id = msgspec.json.decode(raw.data or b"{}").get("command_id")
    except (msgspec.DecodeError, AttributeError):
        return None
    return command_id if isinstance(command_id, str) else None


def _describe(raw: RawStreamMsg, now: datetime) -> str:
    age = f"{int((now - raw.time).total_seconds())}s" if raw.time else "?"
    command_id = _command_id(raw)
    shown_id = terminal.cell(command_id, COMMAND_ID_WIDTH) if command_id is not None else "(unreadable)"
    return (f"{raw.seq:>8}  {terminal.cell(raw.subject or '', SUBJECT_WIDTH):<{SUBJECT_WIDTH}} "
            f"{len(raw.data or b''):>8}  {age:>7}  {shown_id}")


def _nowhere(_: str) -> None:
    return None


def _command_json(raw: RawStreamMsg) -> dict[str, Any]:
    return {"seq": raw.seq, "subject": raw.subject, "bytes": len(raw.data or b""), "command_id": _command_id(raw),
            "stored_at": raw.time.isoformat() if raw.time else None}


async def _list(js: JetStreamContext, limit: int, out: Callable[[str], None], *, as_json: bool = False) -> int:
    info = await js.stream_info(subjects.COMMANDS_STREAM)
    transform = info.config.subject_transform
    partitions = _partition_count(transform.dest if transform else None)
    now = datetime.now(UTC)
    table = _nowhere if as_json else out  # with --json, the document at the end says it all, once
    table(f"{'consumer':<24} {'waiting':>8} {'in hand':>8} {'redelivered':>11}")
    listed: list[tuple[str, list[RawStreamMsg]]] = []
    consumers: list[dict[str, Any]] = []
    for consumer, filter_subject in streams.command_consumers(partitions):
        # Acknowledged commands stay in the stream until the worker's next purge: list from
        # the first one the consumer has not acknowledged.
        seq = info.state.first_seq or 1
        try:
            c = await js.consumer_info(subjects.COMMANDS_STREAM, consumer)
            waiting, in_hand, redelivered = c.num_pending, c.num_ack_pending, c.num_redelivered
            seq = max(seq, retention.consumed_below(c))
        except NotFoundError:
            waiting = in_hand = redelivered = "-"
        table(f"{consumer:<24} {waiting:>8} {in_hand:>8} {redelivered:>11}")
        found: list[RawStreamMsg] = []
        while len(found) < limit:
            try:
                raw = await js.get_msg(subjects.COMMANDS_STREAM, seq, subject=filter_subject, next=True)
            except NotFoundError:
                break
            found.append(raw)
            seq = stored_seq(raw) + 1
        if found:
            listed.append((consumer, found))
        consumers.append({"consumer": consumer, "filter_subject": filter_subject,
                          **{key: None if value == "-" else value for key, value in
                             (("waiting", waiting), ("in_hand", in_hand), ("redelivered", redelivered))},
                          "commands": [_command_json(raw) for raw in found]})
    if as_json:
        out(terminal.json_text({"stream": subjects.COMMANDS_STREAM, "messages": info.state.messages,
                                "bytes": info.state.bytes, "max_age_s": info.config.max_age or None,
                                "max_bytes": info.config.max_bytes if (info.config.max_bytes or 0) > 0 else None,
                                "consumers": consumers}))
        return 0
    for consumer, found in listed:
        out(f"\n{consumer} (first {len(found)}):")
        out(f"{'seq':>8}  {'subject':<60} {'bytes':>8}  {'age':>7}  command_id")
        for raw in found:
            out(_describe(raw, now))
    limits = f"kept up to {info.config.max_age / 3600:.0f} h" if info.config.max_age else "no age limit"
    if info.config.max_bytes and info.config.max_bytes > 0:
        limits += f" and {info.config.max_bytes // (1024 * 1024)} MiB"
    out(f"\n{info.state.messages} command(s) in {subjects.COMMANDS_STREAM}, {info.state.bytes} bytes "
        f"(acknowledged ones until the next purge; {limits})")
    return 0


async def _show(js: JetStreamContext, seq: int, out: Callable[[str], None]) -> int:
    try:
        raw = await js.get_msg(subjects.COMMANDS_STREAM, seq)
    except NotFoundError:
        out(f"no command with sequence {seq}")
        return 1
    data = raw.data or b""
    out(f"seq {raw.seq}  subject {raw.subject}  {len(data)} bytes  stored {raw.time}")
    for key, value in sorted(stored_headers(raw).items()):
        out(f"  {key}: {value}")
    try:
        out(msgspec.json.format(data, indent=2).decode("utf-8", errors="replace")[:SHOW_BYTES])
    except msgspec.DecodeError:
        out(f"(not JSON) {data[:SHOW_BYTES]!r}")
    if len(data) > SHOW_BYTES:
        out(f"... ({len(data) - SHOW_BYTES} more bytes)")
    return 0


async def _drop(js: JetStreamContext, args: argparse.Namespace, out: Callable[[str], None],
                ask: Callable[[str], bool | None]) -> int:
    now = datetime.now(UTC)
    found, missing = [], []
    for seq in args.seqs:
        try:
            found.append(await js.get_msg(subjects.COMMANDS_STREAM, seq))
        except NotFoundError:
            missing.append(seq)
    if missing:
        out(f"no command with sequence {', '.join(map(str, missing))}: nothing done")
        return 1
    refusal = deletion.confirm([_describe(raw, now).strip() for raw in found], "command(s)", yes=args.yes,
                               dry_run=args.dry_run, out=out, ask=ask)
    if refusal is not None:
        return refusal
    for raw in found:
        await js.delete_msg(subjects.COMMANDS_STREAM, stored_seq(raw))
    out(f"dropped {len(found)} command(s): never applied, never answered (their lookups say unknown)")
    return 0
