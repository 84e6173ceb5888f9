"""Where memoryctl's servers come from: the environment, a running `make run`, or embedded ones.

One place for every subcommand: `run` starts embedded servers for what NATS_URL and
DATABASE_URL leave unset and records them (worker/cli/runs.py: in the data directory and in the
user's state directory); the other subcommands use what a live run recorded, from any
directory; `migrate` and `adopt` start an embedded PostgreSQL only when nothing runs, and create
one only when asked (`migrate --embedded`). A data directory is never served twice.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from worker.cli import runs
from worker.shared.settings import Settings

if TYPE_CHECKING:  # imported where used: the `local` extra and the worker load only when needed
    from worker.consuming.app import Endpoints
    from worker.local.embedded import NatsServer, PostgresServer

_Server = TypeVar("_Server", "NatsServer", "PostgresServer")

log = structlog.get_logger("memoryctl")

DEFAULT_NATS_PORT = 4222
DEFAULT_PG_PORT = 55432


def _port_or_free(preferred: int) -> int:
    import socket

    from worker.local.embedded import LOOPBACK, free_port

    with socket.socket() as s:
        try:
            s.bind((LOOPBACK, preferred))
            return preferred
        except OSError:
            return free_port()


class DataDirInUse(RuntimeError):
    """Another memoryctl process runs the embedded servers of this data directory."""


class EmbeddedUnavailable(RuntimeError):
    """An embedded server could not be started (or a leftover one stopped): said, not a traceback."""


def recorded(settings: Settings) -> dict[str, Any] | None:
    """What a live `memoryctl run` (or migrate, adopt) recorded of the servers it runs: on this
    data directory, else, unless MEMORY_DATA_DIR names one, the one `make run` of this user
    wherever it was started. Several of them: which one is for the operator to say."""
    if found := runs.in_data_dir(settings.data_dir):
        return found
    if os.environ.get("MEMORY_DATA_DIR"):
        return None
    elsewhere = runs.for_user()
    if len(elsewhere) > 1:
        dirs = ", ".join(str(r.get("data_dir", "?")) for r in elsewhere)
        raise SystemExit(f"memoryctl: {len(elsewhere)} `make run`s are running ({dirs}): set MEMORY_DATA_DIR to the"
                         " data directory of the one to use, or NATS_URL and DATABASE_URL")
    return elsewhere[0] if elsewhere else None


class NoDatabase(RuntimeError):
    """No database was named and none runs: memoryctl does not create one it was not asked for."""


def _stop_leftover(server: NatsServer | PostgresServer, what: str, sig: int) -> None:
    """A server an earlier run left running on this data directory: stop it, and say so."""
    from worker.local.processes import stop_pid

    pid = server.leftover_pid()
    if pid is None:
        return
    print(f"memoryctl: stopping {what} (pid {pid}) left running on {server.data_dir} by an earlier run",
          file=sys.stderr)
    try:
        stop_pid(pid, sig, what, timeout=30)
    except PermissionError as exc:
        raise EmbeddedUnavailable(str(exc)) from exc
    log.warning("embedded_leftover_stopped", server=what, pid=pid, data=str(server.data_dir))


def _start(server: _Server) -> _Server:
    from worker.local.embedded import EmbeddedServerError

    try:
        return server.start()
    except EmbeddedServerError as exc:
        server.kill()
        raise EmbeddedUnavailable(f"the embedded {type(server).__name__} on {server.data_dir} did not start: {exc}"
                                  ) from exc


@contextlib.contextmanager
def local_servers(settings: Settings, *, need_nats: bool = True, create: bool = True) -> Iterator[Endpoints]:
    """Embedded NATS and PostgreSQL under the data dir for whatever URL is not configured.

    `create` False: an embedded PostgreSQL is started only where one was made before (an
    earlier `make run`'s); none there is NoDatabase, naming what to set.

    They die with this process whatever ends it (the kernel signals them when it dies, even by
    SIGKILL); servers an earlier run left on the same data directory are stopped first; and a
    data directory another live memoryctl uses is refused (DataDirInUse), never started twice.
    """
    from worker.consuming.app import Endpoints
    from worker.local.embedded import NatsServer, PostgresServer

    started: list[NatsServer | PostgresServer] = []
    data = settings.data_dir.resolve()
    if (not settings.nats_url and need_nats or not settings.database_url) and (other := runs.in_data_dir(data)):
        raise DataDirInUse(f"memoryctl (pid {other['pid']}) is already running the servers of {data}: stop it"
                           " first, or use them (the other memoryctl commands find them by themselves)")
    try:
        nats_url = settings.nats_url
        if not nats_url and need_nats:
            nats = NatsServer(data / "nats", port=_port_or_free(DEFAULT_NATS_PORT), die_with_parent=True)
            _stop_leftover(nats, "nats-server", signal.SIGTERM)
            started.append(_start(nats))
            nats_url = nats.url
            log.info("embedded_nats_started", url=nats_url, pid=nats.pid, data=str(nats.data_dir))
        database_url = settings.database_url
        if not database_url:
            pg = PostgresServer(data / "pg", port=_port_or_free(DEFAULT_PG_PORT), die_with_parent=True)
            if not create and not pg.initialized():
                raise NoDatabase(f"no database to use: DATABASE_URL is unset, no `make run` is running and {data}"
                                 " holds no embedded one. Set DATABASE_URL, start `make run`, or give --embedded to"
                                 f" create an embedded PostgreSQL under {data}")
            _stop_leftover(pg, "postgres", signal.SIGINT)  # SIGINT: PostgreSQL's fast shutdown
            started.append(_start(pg))
            database_url = pg.dsn()
            log.info("embedded_postgres_started", url=database_url, pid=pg.pid, data=str(pg.data_dir))
        endpoints = Endpoints(nats_url or "", database_url)
        with runs.recording(data, nats_url, database_url) if started else contextlib.nullcontext():
            yield endpoints
    finally:
        for server in reversed(started):
            server.stop()
        for server in reversed(started):
            with contextlib.suppress(OSError):  # a closed terminal: the servers are stopped anyway
                log.info("embedded_server_stopped", server=type(server).__name__, pid=server.pid)


def endpoints_for_clients(settings: Settings, *, need_nats: bool = True, need_database: bool = True) -> Endpoints:
    """Where a running worker's servers are: the environment, else what `make run` recorded."""
    from worker.consuming.app import Endpoints

    found = recorded(settings) or {}
    nats_url = settings.nats_url or found.get("nats_url") or ("" if not need_nats else None)
    database_url = settings.database_url or found.get("database_url") or ("" if not need_database else None)
    if nats_url is None or database_url is None:
        needed = " and ".join(name for name, url in (("NATS_URL", nats_url), ("DATABASE_URL", database_url))
                              if url is None)
        raise SystemExit(f"no running worker found: start one with `make run` (found from any directory), or set"
                         f" {needed}")
    return Endpoints(nats_url, database_url)
