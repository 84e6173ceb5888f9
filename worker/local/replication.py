"""Streaming replication between embedded PostgreSQL servers (worker/local/embedded.py):
a standby from a base backup, its promotion, and a former primary rewound to follow the new
one. The fault harness's failovers (tests/faults) and the replication check's tests use it;
a deployment gets the same from its operator (deploy/README.md)."""

from __future__ import annotations

from worker.local.embedded import PostgresServer


def application_name(server: PostgresServer) -> str:
    """The name a standby streams under: its data directory's, for synchronous_standby_names."""
    return server.data_dir.name.replace("-", "_")


def base_backup(server: PostgresServer, host: str, port: int, *, user: str = "postgres") -> PostgresServer:
    """Make `server` (not yet started) a streaming standby of host:port: a base backup with the
    WAL streamed alongside, standby.signal and primary_conninfo written (-R)."""
    server.prepare_data_dir()
    server.tool("pg_basebackup", "-h", host, "-p", str(port), "-U", user, "-D", str(server.pgdata),
                "-X", "stream", "-R", "--checkpoint=fast", "--no-sync")
    _name_the_stream(server)
    return server


def promote(server: PostgresServer) -> None:
    """End recovery: the standby becomes a primary (`pg_ctl promote`, waits until it is)."""
    server.tool("pg_ctl", "promote", "-D", str(server.pgdata), "-w", "-t", "60")


def rewind(server: PostgresServer, host: str, port: int, *, user: str = "postgres") -> str:
    """After a failover, make the stopped former primary a standby of the new one: pg_rewind
    takes back what it wrote that the new primary never had (after a crash it runs recovery
    first), then -R writes standby.signal and primary_conninfo. Returns pg_rewind's report."""
    out = server.tool("pg_rewind", "-D", str(server.pgdata), "-R", "--no-sync",
                      f"--source-server=host={host} port={port} user={user} dbname=postgres", timeout=300)
    _name_the_stream(server)
    return out


def _name_the_stream(server: PostgresServer) -> None:
    auto = server.pgdata / "postgresql.auto.conf"
    text = auto.read_text().splitlines()
    lines = [line for line in text if not line.startswith("primary_conninfo")]
    # The last one is the one in force: pg_rewind copies the source's file (a promoted
    # standby's keeps its old primary_conninfo) and -R appends the new one after it.
    conninfo = [line for line in text if line.startswith("primary_conninfo")][-1]
    conninfo = conninfo.rstrip()[:-1] + f" application_name={application_name(server)}'"
    auto.write_text("\n".join([*lines, conninfo]) + "\n")
