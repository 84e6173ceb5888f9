"""The JSON-lines sink: one fsynced line per metric, duplicates kept out by event id."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from nats.aio.msg import Msg

from worker.sinks.consumer import _delay, _nak, _Sink
from worker.sinks.metrics import JSONL_DURABLE, InvalidMetric, _decode, _encode, _event_id, parse_metric

try:  # POSIX: one writer per JSON-lines file.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class JsonLinesSink(_Sink):
    """One JSON line per metric in `path`; see the module docstring."""

    kind = "jsonl"

    def __init__(self, path: Path | str, *, durable: str = JSONL_DURABLE, remember: int = 10_000,
                 fsync: bool = True, batch: int = 64, fetch_timeout: float = 1.0, ack_wait: float = 30.0,
                 max_ack_pending: int = 1000, logger: Any | None = None) -> None:
        super().__init__(durable=durable, batch=batch, fetch_timeout=fetch_timeout,
                         ack_wait=ack_wait, max_ack_pending=max_ack_pending, logger=logger)
        self.path = Path(path)
        self.remember = remember
        self.fsync = fsync
        self._fd: int | None = None
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._write_failing = False

    async def open(self) -> None:
        self._fd = await asyncio.to_thread(self._open_file)

    def _open_file(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise RuntimeError(f"another metrics sink is writing {self.path}") from None
            ids, end, size = _scan_tail(fd, self.remember)
            if end < size:
                os.ftruncate(fd, end)
                self.log.warning("metric_jsonl_partial_line_dropped", path=str(self.path), bytes=size - end)
        except BaseException:
            os.close(fd)
            raise
        for event_id in ids:
            self._remember(event_id)
        self.log.info("metric_jsonl_opened", path=str(self.path), remembered=len(self._seen))
        return fd

    async def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock
            self._fd = None

    def _remember(self, event_id: str) -> None:
        self._seen[event_id] = None
        self._seen.move_to_end(event_id)
        while len(self._seen) > self.remember:
            self._seen.popitem(last=False)

    async def handle(self, msgs: list[Msg]) -> None:
        fd = self._fd
        if fd is None:
            raise RuntimeError("the JSONL sink handled events before open()")
        received_at = datetime.now(UTC).isoformat()
        lines: list[bytes] = []
        new_ids: list[str] = []
        to_ack: list[Msg] = []
        written: list[Msg] = []
        for msg in msgs:
            event_id = _event_id(msg)
            try:
                name, fields = parse_metric(msg.subject, msg.data)
            except InvalidMetric as exc:
                self._reject(msg, str(exc))
                to_ack.append(msg)
                continue
            if event_id is not None and (event_id in self._seen or event_id in new_ids):
                to_ack.append(msg)  # already in the file: a redelivery after a lost ack
                continue
            lines.append(_encode({"metric": name, "fields": fields, "event_id": event_id,
                                  "received_at": received_at}) + b"\n")
            if event_id is not None:
                new_ids.append(event_id)
            written.append(msg)
        if lines:
            try:
                await asyncio.to_thread(_append_durably, fd, b"".join(lines), self.fsync)
            except OSError as exc:
                if not self._write_failing:
                    self.log.error("metric_jsonl_write_failed", path=str(self.path), error=repr(exc))
                    self._write_failing = True
                for msg in written:
                    await _nak(msg, _delay(msg, 1.0, 60.0))
                written = []
            else:
                if self._write_failing:
                    self.log.info("metric_jsonl_write_recovered", path=str(self.path))
                    self._write_failing = False
                for event_id in new_ids:
                    self._remember(event_id)
        for msg in to_ack + written:  # only after the lines are on disk
            await msg.ack()


def _scan_tail(fd: int, keep: int) -> tuple[list[str], int, int]:
    """Event ids of the last `keep` complete lines, the offset after the last newline, the size."""
    size = os.fstat(fd).st_size
    pos, buf, newlines = size, b"", 0
    while pos > 0 and newlines <= keep:
        step = min(64 * 1024, pos)
        pos -= step
        chunk = os.pread(fd, step, pos)
        newlines += chunk.count(b"\n")
        buf = chunk + buf
    last = buf.rfind(b"\n")
    end = pos + last + 1  # 0 when there is no complete line at all
    lines = buf[: last + 1].split(b"\n")[:-1]
    if pos > 0:
        lines = lines[1:]  # the first one may start before what was read
    ids = []
    for raw in lines[-keep:] if keep else []:
        try:
            obj = _decode(raw)
        except msgspec.DecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("event_id"), str):
            ids.append(obj["event_id"])
    return ids, end, size


def _append_durably(fd: int, data: bytes, fsync: bool) -> None:
    before = os.lseek(fd, 0, os.SEEK_END)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if fsync:
            os.fsync(fd)
    except OSError:
        # Leave no partial line behind: the batch is nak'ed and written again later.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, before)
        raise
