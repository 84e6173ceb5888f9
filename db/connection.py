"""Where the worker's objects live, and the one way its connections find them and notice a
vanished server.

The worker's own objects (inbox, outbox, ledger, functions, bio seeds, worker-only settings)
are in the schema `memory_worker`, so none can clash with a bot's names (docs/design.md, section 7.1). The
memory and directory tables are in `public`: the standalone layout's, or the bot's own. Every
connection the worker opens names both, the worker's schema first.

A database host that vanishes (a lost machine, a failover) answers nothing: no refusal, no
reset. Without timeouts a connection attempt waits asyncpg's default minute and a statement
on an open connection waits for the kernel to give up on the peer (about 15 minutes of TCP
retransmissions). `Timeouts` bound both, and set TCP keepalives and TCP_USER_TIMEOUT on
both ends: the server's side (its settings, per session) drops a backend whose worker
vanished, with its locks; the worker's side notices a dead peer on an idle pooled connection.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

import asyncpg

WORKER_SCHEMA = "memory_worker"
BOT_SCHEMA = "public"
SEARCH_PATH = f"{WORKER_SCHEMA}, {BOT_SCHEMA}"
SERVER_SETTINGS = {"search_path": SEARCH_PATH}
KEEPALIVE_IDLE_S = 5
KEEPALIVE_INTERVAL_S = 2
KEEPALIVE_COUNT = 3


@dataclass(frozen=True, slots=True)
class Timeouts:
    """`command_s` None: no bound on a statement (migrations, adoption and operator commands
    run as long as they need; a connection attempt is still bounded)."""

    connect_s: float = 10.0
    command_s: float | None = None

    @property
    def user_timeout_ms(self) -> int:
        """Unacknowledged data for this long closes the connection (TCP_USER_TIMEOUT; 0: the kernel's)."""
        return 0 if self.command_s is None else int(self.command_s * 1000)

    def server_settings(self) -> dict[str, str]:
        return {"tcp_keepalives_idle": str(KEEPALIVE_IDLE_S), "tcp_keepalives_interval": str(KEEPALIVE_INTERVAL_S),
                "tcp_keepalives_count": str(KEEPALIVE_COUNT), "tcp_user_timeout": str(self.user_timeout_ms)}

    def arm(self, conn: asyncpg.Connection) -> None:
        """The worker's end of the connection: keepalives and TCP_USER_TIMEOUT on its socket."""
        sock = conn._transport.get_extra_info("socket") if conn._transport is not None else None  # noqa: SLF001
        if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for option, value in (("TCP_KEEPIDLE", KEEPALIVE_IDLE_S), ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL_S),
                              ("TCP_KEEPCNT", KEEPALIVE_COUNT), ("TCP_USER_TIMEOUT", self.user_timeout_ms)):
            if hasattr(socket, option) and value:  # Linux names; elsewhere the command timeout still bounds a call
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


DEFAULT_TIMEOUTS = Timeouts()


async def connect(dsn: str, timeouts: Timeouts = DEFAULT_TIMEOUTS, **settings: str) -> asyncpg.Connection:
    conn = await asyncpg.connect(dsn, timeout=timeouts.connect_s, command_timeout=timeouts.command_s,
                                 server_settings={**SERVER_SETTINGS, **timeouts.server_settings(), **settings})
    timeouts.arm(conn)
    return conn
