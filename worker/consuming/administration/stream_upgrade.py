"""Moving a work-queue MEMORY_COMMANDS (deployments before limits retention) to limits.

nats-server refuses to change a stream's retention to or from work queue (error 10052), so
the stream is rebuilt, without losing or reordering a command:

1. every command still in the old stream is copied, in stream order, into a backup stream;
2. the old stream is deleted, and the new one created with staging subjects only: bots'
   publishes are refused meanwhile (no stream takes `memory.>`), so none can be stored
   before an older command of its workspace;
3. the backup is published into it in order, through the same partition mapping;
4. the new stream takes `memory.>`, and the backup is deleted.

Each step is safe to repeat: a worker that dies half-way finds the backup at its next start
and carries on from it (copies and republishes are deduplicated by message id). The new
stream continues the old stream's sequence numbers, which dead letters and lookups refer to.
A command the old stream kept under a subject the partition mapping cannot file (a literal
wildcard as workspace token) is dead-lettered, as its consumer would have done.
"""

from __future__ import annotations

import dataclasses

import structlog
from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType, StreamConfig, StreamInfo, SubjectTransform
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.registry import COMMAND_KINDS
from worker.consuming import dead_letters
from worker.shared import jetstream
from worker.shared.jetstream import stored_subject

log = structlog.get_logger("worker")

BACKUP_STREAM = "MEMORY_COMMANDS_UPGRADE"
BACKUP_SUBJECT = "_memory_upgrade.backup"
# The new stream's subjects until the backup is in: nothing a bot publishes matches them.
STAGING_PREFIX = "_memory_upgrade."
# Where a backed-up command was: its stored subject and stream sequence in the old stream.
SUBJECT_HEADER = "Memory-Upgrade-Subject"
SEQ_HEADER = "Memory-Upgrade-Seq"
BOT_MSG_ID_HEADER = "Memory-Upgrade-Msg-Id"  # the bot's Nats-Msg-Id, if it set one
# The backup stream's note of where the old stream's sequence numbers ended.
NEXT_SEQ_KEY = "memory_commands_next_seq"


async def _info(js: JetStreamContext, name: str) -> StreamInfo | None:
    try:
        return await js.stream_info(name)
    except NotFoundError:
        return None


async def pending(js: JetStreamContext, target: StreamConfig) -> bool:
    """Whether to_limits() has work to do: a work-queue stream, or an interrupted rebuild's backup."""
    current = await _info(js, jetstream.config_name(target.name, "stream"))
    if current is not None and current.config.retention == RetentionPolicy.WORK_QUEUE:
        return True
    return await _info(js, BACKUP_STREAM) is not None


async def to_limits(js: JetStreamContext, target: StreamConfig, *, max_payload: int) -> bool:
    """Bring MEMORY_COMMANDS to `target` (limits retention) if it is a work queue or an upgrade
    was interrupted; True when an upgrade ran. A fresh or current stream is left to ensure_stream."""
    name = jetstream.config_name(target.name, "stream")
    current = await _info(js, name)
    backup = await _info(js, BACKUP_STREAM)
    if current is not None and current.config.retention == RetentionPolicy.WORK_QUEUE:
        log.warning("command_stream_upgrade", step="backing up", stream=name, commands=current.state.messages,
                    note="work-queue retention cannot be changed in place; bots' publishes are refused until it is done")
        await _back_up(js, target, current)
        backup = await _info(js, BACKUP_STREAM)
        current = None
    if backup is None:
        return False
    first_seq = int(backup.config.metadata.get(NEXT_SEQ_KEY, "1")) if backup.config.metadata else 1
    if current is None:
        await js.add_stream(staging(target, first_seq))
    if current is None or current.config.subjects != target.subjects:
        await _restore(js, name, max_payload)
        await js.update_stream(target)  # now it takes memory.> again
    await js.delete_stream(BACKUP_STREAM)
    log.warning("command_stream_upgrade", step="done", stream=name, retention="limits")
    return True


def staging(target: StreamConfig, first_seq: int) -> StreamConfig:
    """The new stream as it is created: the target's settings, its sequence continuing the old
    stream's, and only the staging subjects, mapped to the same partitions."""
    transform = target.subject_transform
    if transform is None or transform.src is None:
        raise ValueError("the command stream's target configuration has no partition transform")
    return dataclasses.replace(target, subjects=[STAGING_PREFIX + transform.src], first_seq=first_seq,
                               subject_transform=SubjectTransform(src=STAGING_PREFIX + transform.src,
                                                                  dest=transform.dest))


async def _back_up(js: JetStreamContext, target: StreamConfig, old: StreamInfo) -> None:
    name = jetstream.config_name(target.name, "stream")
    state = old.state
    await js.add_stream(StreamConfig(
        name=BACKUP_STREAM, subjects=[BACKUP_SUBJECT], retention=RetentionPolicy.LIMITS, storage=StorageType.FILE,
        num_replicas=old.config.num_replicas, duplicate_window=target.duplicate_window,
        max_msg_size=target.max_msg_size, metadata={NEXT_SEQ_KEY: str(state.last_seq + 1)}))
    copied = 0
    for seq in range(state.first_seq, state.last_seq + 1) if state.messages else ():
        try:
            raw = await js.get_msg(name, seq)
        except NotFoundError:
            continue  # acknowledged (deleted) while we copy
        # Nats-* headers are the server's instructions (batch, expectations): not carried over.
        headers = {k: v for k, v in (raw.headers or {}).items() if not k.startswith("Nats-")}
        headers |= {SUBJECT_HEADER: stored_subject(raw), SEQ_HEADER: str(seq), "Nats-Msg-Id": f"upgrade:{seq}"}
        if raw.headers and raw.headers.get("Nats-Msg-Id"):
            headers[BOT_MSG_ID_HEADER] = raw.headers["Nats-Msg-Id"]
        await js.publish(BACKUP_SUBJECT, raw.data or b"", stream=BACKUP_STREAM, headers=headers)
        copied += 1
    await js.delete_stream(name)
    log.warning("command_stream_upgrade", step="backed up", commands=copied)


async def _restore(js: JetStreamContext, stream: str, max_payload: int) -> None:
    info = await js.stream_info(BACKUP_STREAM)
    restored = unplaced = 0
    for seq in range(info.state.first_seq, info.state.last_seq + 1) if info.state.messages else ():
        try:
            raw = await js.get_msg(BACKUP_STREAM, seq)
        except NotFoundError:
            continue
        headers = dict(raw.headers or {})
        stored, old_seq = headers.pop(SUBJECT_HEADER), int(headers.pop(SEQ_HEADER))
        msg_id = headers.pop(BOT_MSG_ID_HEADER, None)
        headers.pop("Nats-Msg-Id", None)
        parsed = subjects.parse_stored(stored)
        original = parsed.original
        # Republished under the staging prefix only as a command subject, whatever the header says.
        if not parsed.placed or not subjects.is_command_subject(original, COMMAND_KINDS):
            await dead_letters.dead_letter(
                js, max_payload=max_payload, original_subject=stored, payload=raw.data or b"",
                reason=dead_letters.INVALID_COMMAND, deliveries=0, stream_seq=old_seq,
                error=f"the subject {stored!r} names no workspace the partition mapping can file")
            unplaced += 1
            continue
        # The bot's own message id, if it set one, so a bot retrying its publish is still recognised.
        headers["Nats-Msg-Id"] = msg_id or f"upgrade:{old_seq}"
        await js.publish(STAGING_PREFIX + original, raw.data or b"", stream=stream, headers=headers)
        restored += 1
    log.warning("command_stream_upgrade", step="restored", commands=restored, dead_lettered=unplaced)
