"""structlog set-up: readable lines on a terminal, JSON lines elsewhere."""

from __future__ import annotations

import logging
import sys

import msgspec
import structlog

_json = msgspec.json.Encoder(enc_hook=str)


def _dumps(obj: object, default: object = None, **_: object) -> bytes:
    # structlog's JSONRenderer hands us `default=`; msgspec spells it enc_hook (set above).
    # Bytes, written as they are (BytesLoggerFactory): no decoding and encoding again per line.
    return _json.encode(obj)


def _dumps_text(obj: object, default: object = None, **_: object) -> str:
    return _dumps(obj).decode()


def configure(log_format: str = "console", level: str = "info") -> None:
    json_lines = log_format == "json"
    as_bytes = json_lines and hasattr(sys.stderr, "buffer")  # a replaced stderr (a test's) takes text
    renderer = (
        structlog.processors.JSONRenderer(serializer=_dumps if as_bytes else _dumps_text)
        if json_lines
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=(structlog.BytesLoggerFactory(file=sys.stderr.buffer) if as_bytes
                        else structlog.PrintLoggerFactory(file=sys.stderr)),
        cache_logger_on_first_use=True,
    )
    # nats-py and asyncio log through the standard library; keep theirs quiet but visible.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
