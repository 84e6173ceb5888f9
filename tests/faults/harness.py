"""The system under test, each part on a host of its own (tests/faults/netns.py): three
nats-server nodes running deploy/nats/cluster.conf, PostgreSQL, two workers (`memoryctl
run`) and a bot host for the client side (the bot and the checker).

Every process is started by this object from a thread inside its host's namespace and is
acted on by its PID only: stop, SIGKILL, SIGSTOP / SIGCONT (PostgreSQL: the postmaster and
every process it forked, all ours, found by their parent PID). Each NATS node's
store and PostgreSQL's data directory are small tmpfs mounts of their own, so a schedule
can fill them; teardown unmounts exactly
the mounts made here and deletes exactly the namespaces made here, also after a failure.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from db.migrate import migrate_dsn
from tests.cluster.nats_deploy import PASSWORDS, NatsNode, copy_config, password_env, wait_for_meta_leader
from tests.conftest import WorkerProcess, worker_env
from tests.faults.netns import Network
from worker.local.embedded import PostgresServer

NODES = ("nats-a", "nats-b", "nats-c")
WORKERS = ("worker-1", "worker-2")
HOSTS = (*NODES, "pg", *WORKERS, "bot")
CLIENT_PORT, ROUTE_PORT, HTTP_PORT, PG_PORT = 4222, 6222, 8222, 5432
DATABASE = "faults"
STORE_MB = 256
PG_DISK_MB = 384
ACK_WAIT_S = 20
# Each workspace gets this many saves; further commands to it are refused (limit_exceeded),
# so the checker sees the cap hold under every fault.
CAP = 12


@dataclass
class FaultCluster:
    root: Path
    net: Network
    nodes: dict[str, NatsNode] = field(default_factory=dict)
    pg: PostgresServer | None = None
    workers: dict[str, WorkerProcess] = field(default_factory=dict)
    mounts: list[Path] = field(default_factory=list)
    paused: set[int] = field(default_factory=set)
    worker_settings: dict[str, str] = field(default_factory=dict)  # a schedule's own

    # ------------------------------------------------------------------ addresses

    def nats_url(self, node: str) -> str:
        return f"nats://{self.net.address[node]}:{CLIENT_PORT}"

    @property
    def nats_urls(self) -> list[str]:
        return [self.nats_url(n) for n in NODES]

    @property
    def database_url(self) -> str:
        return f"postgresql://postgres@{self.net.address['pg']}:{PG_PORT}/{DATABASE}"

    def store_dir(self, node: str) -> Path:
        return self.root / node / "js"

    # ------------------------------------------------------------------ start

    @classmethod
    def create(cls, worker_settings: dict[str, str] | None = None) -> FaultCluster:
        root = Path(tempfile.mkdtemp(prefix="memory-faults-"))
        return cls(root, Network(HOSTS), worker_settings=dict(worker_settings or {}))

    def start(self) -> FaultCluster:
        self.net.create()
        self._start_postgres()
        for name in NODES:
            self._make_node(name)
        for name in NODES:
            self.start_node(name)
        self.wait_for_meta_leader()
        self.net.run_on("pg", asyncio.run, self._create_database())
        for name in WORKERS:  # one after the other: the first creates the R3 streams
            self._make_worker(name)
            self.start_worker(name)
        return self

    def _mount_tmpfs(self, path: Path, size_mb: int) -> None:
        path.mkdir(parents=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0700", "tmpfs", str(path)],
                       check=True, capture_output=True)
        self.mounts.append(path)

    def _start_postgres(self) -> None:
        data = self.root / "pg"
        self._mount_tmpfs(data, PG_DISK_MB)
        # Reached from the workers' and the bot's hosts: trust inside this private network.
        (data / "hba.conf").write_text("local all all trust\nhost all all 0.0.0.0/0 trust\n")
        self.pg = PostgresServer(data, port=PG_PORT, durable=False,
                                 settings={"listen_addresses": "*", "hba_file": str(data / "hba.conf")})
        self.net.run_on("pg", self.pg.start)

    async def _create_database(self) -> None:
        conn = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres")
        try:
            await conn.execute(f"CREATE DATABASE {DATABASE}")
        finally:
            await conn.close()
        await migrate_dsn(f"postgresql://postgres@127.0.0.1:{PG_PORT}/{DATABASE}")

    def _make_node(self, name: str) -> None:
        if not (self.root / "cluster.conf").exists():
            copy_config(self.root, "cluster.conf")
        store = self.store_dir(name)
        self._mount_tmpfs(store, STORE_MB)
        routes = "[" + ", ".join(f'"nats://{self.net.address[n]}:{ROUTE_PORT}"' for n in NODES) + "]"
        env = dict(os.environ, **password_env(), NATS_SERVER_NAME=name,
                   NATS_LISTEN=f"0.0.0.0:{CLIENT_PORT}", NATS_HTTP_LISTEN=f"0.0.0.0:{HTTP_PORT}",
                   NATS_CLUSTER_LISTEN=f"0.0.0.0:{ROUTE_PORT}", NATS_ROUTES=routes, NATS_STORE_DIR=str(store))
        self.nodes[name] = NatsNode(name, self.root / "cluster.conf", env, CLIENT_PORT,
                                    self.root / name / "nats.log", HTTP_PORT)

    def _make_worker(self, name: str) -> None:
        settings = dict(
            NATS_USER="memory-worker", NATS_PASSWORD=PASSWORDS["memory-worker"],
            STREAM_REPLICAS="3", MEMORY_PARTITIONS="8", ACK_WAIT_SECONDS=str(ACK_WAIT_S), MAX_DELIVER="10",
            MAX_SERVER_MEMORIES=str(CAP), MAX_PERSONAL_MEMORIES=str(CAP), REPLY_SUBJECT_PREFIXES="_INBOX.bot.",
            # JetStream reserves the command stream's size limit on each node's store (a tmpfs of STORE_MB).
            COMMAND_MAX_MIB=str(STORE_MB // 4),
        )
        settings.update(self.worker_settings)
        env = worker_env(",".join(self.nats_urls), self.database_url, **settings)
        self.workers[name] = WorkerProcess(env, self.root / f"{name}.log")

    # ------------------------------------------------------------------ processes

    def start_node(self, name: str) -> None:
        self.net.run_on(name, self.nodes[name].start)

    def start_worker(self, name: str) -> None:
        self.net.run_on(name, self.workers[name].start)

    def monitor(self, node: str, path: str) -> dict:
        return self.net.run_on(node, self.nodes[node].monitor, path)

    def wait_for_meta_leader(self, timeout: float = 60.0) -> str:
        return wait_for_meta_leader(lambda: [self.monitor(n, "/jsz") for n, node in self.nodes.items() if node.running],
                                    len(NODES), timeout)

    def jetstream_enabled(self, node: str) -> bool:
        try:
            return self.monitor(node, "/healthz?js-enabled-only=true").get("status") == "ok"
        except OSError:  # 503 when JetStream is off: urllib raises HTTPError, an OSError
            return False

    def stream_state(self, node: str, stream: str) -> dict | None:
        """(messages, first_seq, last_seq) of the node's own replica of the stream."""
        try:
            jsz = self.monitor(node, "/jsz?accounts=true&streams=true")
        except OSError:
            return None
        for account in jsz.get("account_details") or []:
            for detail in account.get("stream_detail") or []:
                if detail.get("name") == stream:
                    st = detail.get("state", {})
                    return {k: st.get(k) for k in ("messages", "first_seq", "last_seq")}
        return None

    def connected_to(self) -> dict[str, list[str]]:
        """host -> the NATS nodes its client connections are on (from each node's /connz)."""
        by_address = {a: h for h, a in self.net.address.items()}
        out: dict[str, list[str]] = {}
        for node in NODES:
            if not self.nodes[node].running:
                continue
            try:
                conns = self.monitor(node, "/connz?limit=1024").get("connections") or []
            except OSError:
                continue
            for conn in conns:
                host = by_address.get(conn.get("ip"))
                if host:
                    out.setdefault(host, []).append(node)
        return out

    def restart_node(self, name: str) -> None:
        self.nodes[name].stop(timeout=15)
        self.start_node(name)

    def pid_of(self, host: str) -> int:
        proc = self.nodes[host].proc if host in self.nodes else (
            self.pg.proc if host == "pg" else self.workers[host].proc)
        assert proc is not None and proc.poll() is None, f"{host} is not running"
        return proc.pid

    def _pids(self, host: str) -> list[int]:
        """The host's process, and for PostgreSQL also every backend and helper the
        postmaster forked (they leave its process group with setsid, so killpg misses them)."""
        pid = self.pid_of(host)
        if host != "pg":
            return [pid]
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:  # the parent's pid
                children.append(int(stat.parent.name))
        return [pid, *children]

    def pause(self, host: str) -> list[int]:
        pids = self._pids(host)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
            self.paused.add(pid)
        return pids

    def resume(self, host: str) -> None:
        pids = set(self._pids(host)) | (self.paused if host == "pg" else set())
        for pid in pids & self.paused:
            os.kill(pid, signal.SIGCONT)
            self.paused.discard(pid)

    def kill(self, host: str) -> None:
        (self.nodes.get(host) or self.workers.get(host) or self.pg).kill()

    # ------------------------------------------------------------------ disks

    def disk_of(self, host: str) -> Path:
        """The tmpfs under a NATS node's store or PostgreSQL's data directory."""
        return self.root / "pg" if host == "pg" else self.store_dir(host)

    def fill_disk(self, host: str) -> Path:
        """Fill the host's disk to the last byte; returns the filler to remove."""
        filler = self.disk_of(host) / "filler"
        with open(filler, "wb") as out:
            chunk = b"\0" * (1 << 20)
            try:
                while True:
                    out.write(chunk)
                    out.flush()
            except OSError:
                pass
        try:  # the last partial chunk
            with open(filler, "ab") as out:
                while True:
                    out.write(b"\0" * 4096)
                    out.flush()
        except OSError:
            pass
        return filler

    def block_files(self, node: str, *, raft_too: bool = False) -> list[Path]:
        """The message blocks of the command and event streams on this node, and with
        raft_too those of every Raft group's log as well (the meta group's included)."""
        store = self.store_dir(node)
        files = [p for stream in ("MEMORY_COMMANDS", "MEMORY_EVENTS")
                 for p in store.glob(f"jetstream/*/streams/{stream}/msgs/*.blk")]
        if raft_too:
            files += store.glob("jetstream/*/_js_/*/msgs/*.blk")
        return sorted(files)

    # ------------------------------------------------------------------ teardown

    def stop(self) -> list[str]:
        """Stop everything started here, by PID; unmount, delete the namespaces. Returns
        what could not be undone (the caller reports it), never raises."""
        problems: list[str] = []
        for pid in list(self.paused):  # a stopped process ignores SIGTERM until continued
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        for worker in self.workers.values():
            if worker.running:
                worker.stop(signal.SIGTERM, timeout=15)
                worker.kill()
        for node in self.nodes.values():
            node.stop(timeout=10)
            node.kill()
        if self.pg is not None:
            self.pg.terminate(signal.SIGQUIT, 10)  # immediate: nothing here to keep
            self.pg.kill()
        pg_log = self.root / "pg" / "postgres.log"
        if pg_log.exists():  # it lives on the tmpfs about to go
            shutil.copy(pg_log, self.root / "postgres.log")
        for mount in reversed(self.mounts):
            done = subprocess.run(["umount", "-l", str(mount)], capture_output=True, text=True)
            if done.returncode != 0:
                problems.append(f"umount {mount}: {done.stderr.strip()}")
        self.mounts.clear()
        problems += self.net.destroy()
        return problems
