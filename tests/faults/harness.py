"""The system under test, each part on a host of its own (tests/faults/netns.py): three
nats-server nodes running deploy/nats/cluster.conf, PostgreSQL, two workers (`memoryctl
run`) and a bot host for the client side (the bot and the checker).

With `replication` ('sync' or 'async') PostgreSQL runs as a primary on host `pg` and a
streaming standby (pg_basebackup) on host `pg-b`, and the workers reach the primary on a
service address of its own (SERVICE_ADDRESS) that a failover moves to the promoted node, as
a Kubernetes service or a cloud's writer endpoint does: the address is the fence. With
'sync', `synchronous_standby_names` names the standby once it is connected.

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
import time
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from db.migrate import migrate_dsn
from tests.cluster.nats_deploy import PASSWORDS, NatsNode, copy_config, password_env, wait_for_meta_leader
from tests.conftest import WorkerProcess, worker_env
from tests.faults.netns import SUBNET, Network, ip
from tests.support.directory import register_triggerer
from worker.local import replication as pg_replication
from worker.local.embedded import PostgresServer

NODES = ("nats-a", "nats-b", "nats-c")
WORKERS = ("worker-1", "worker-2")
HOSTS = (*NODES, "pg", *WORKERS, "bot")
STANDBY = "pg-b"
DATABASE_HOSTS = ("pg", STANDBY)
# Where the workers reach the primary when PostgreSQL is replicated: moved on failover.
SERVICE_ADDRESS = f"{SUBNET}.100"
REPLICATION_TIMEOUT_S = 60.0
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
    replication: str | None = None  # None: one PostgreSQL; 'sync' or 'async': primary and standby
    pgs: dict[str, PostgresServer] = field(default_factory=dict)
    primary: str = "pg"  # the database host holding SERVICE_ADDRESS

    # ------------------------------------------------------------------ addresses

    def nats_url(self, node: str) -> str:
        return f"nats://{self.net.address[node]}:{CLIENT_PORT}"

    @property
    def nats_urls(self) -> list[str]:
        return [self.nats_url(n) for n in NODES]

    @property
    def database_url(self) -> str:
        host = SERVICE_ADDRESS if self.replication else self.net.address["pg"]
        return f"postgresql://postgres@{host}:{PG_PORT}/{DATABASE}"

    def node_url(self, host: str, database: str = DATABASE) -> str:
        """One database host's own address, for what must reach that node and no other."""
        return f"postgresql://postgres@{self.net.address[host]}:{PG_PORT}/{database}"

    @property
    def standby(self) -> str:
        return next(h for h in DATABASE_HOSTS if h != self.primary)

    def store_dir(self, node: str) -> Path:
        return self.root / node / "js"

    # ------------------------------------------------------------------ start

    @classmethod
    def create(cls, worker_settings: dict[str, str] | None = None, replication: str | None = None) -> FaultCluster:
        root = Path(tempfile.mkdtemp(prefix="memory-faults-"))
        hosts = (*HOSTS, STANDBY) if replication else HOSTS
        return cls(root, Network(hosts), worker_settings=dict(worker_settings or {}), replication=replication)

    def start(self) -> FaultCluster:
        self.net.create()
        self._start_postgres()
        if self.replication:
            # In the configuration file, not on the command line: pg_rewind's crash recovery of a
            # killed primary runs the server without our -c settings, and would recycle the WAL
            # it needs back to the last checkpoint before the timelines diverged.
            self._on_primary("pg", "ALTER SYSTEM SET wal_keep_size = '256MB'")
            self.net.run_on("pg", asyncio.run, self._create_database())
            self._start_standby()
            self.move_service_address("pg")
        for name in NODES:
            self._make_node(name)
        for name in NODES:
            self.start_node(name)
        self.wait_for_meta_leader()
        if not self.replication:
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

    def _database_server(self, host: str) -> PostgresServer:
        data = self.root / host
        self._mount_tmpfs(data, PG_DISK_MB)
        hba = self.root / f"{host}-hba.conf"  # outside the data directory: pg_rewind leaves it alone
        # Reached from the workers' and the bot's hosts: trust inside this private network.
        hba.write_text("local all all trust\nhost all all 0.0.0.0/0 trust\nhost replication all 0.0.0.0/0 trust\n")
        settings = {"listen_addresses": "*", "hba_file": str(hba)}
        if self.replication:
            # fsync stays off (tmpfs; nothing here survives the machine), but a commit is
            # reported only as synchronous_commit says: the thing under test.
            settings.update(synchronous_commit="on", full_page_writes="on", wal_log_hints="on")  # pg_rewind needs both
        server = PostgresServer(data, port=PG_PORT, durable=False, settings=settings)
        self.pgs[host] = server
        return server

    def _start_postgres(self) -> None:
        self.pg = self._database_server("pg")
        self.net.run_on("pg", self.pg.start)

    def _start_standby(self) -> None:
        standby = self._database_server(STANDBY)
        self.net.run_on(STANDBY, pg_replication.base_backup, standby, self.net.address["pg"], PG_PORT)
        self.net.run_on(STANDBY, standby.start)
        self.wait_streaming("pg", STANDBY)
        if self.replication == "sync":
            self.require_sync("pg", STANDBY)

    # ------------------------------------------------------------------ replication

    def _on_primary(self, host: str, sql: str, *args, database: str = "postgres") -> object:
        async def query() -> object:
            conn = await asyncpg.connect(self.node_url(host, database), timeout=5)
            try:
                return await conn.fetchval(sql, *args)
            finally:
                await conn.close()

        return self.net.run_on(host, asyncio.run, query())

    def commits(self, host: str) -> int:
        """Commands whose results `host` holds."""
        count = self._on_primary(host, "SELECT count(*) FROM memory_worker.processed_commands", database=DATABASE)
        assert isinstance(count, int)
        return count

    def stop_receiving(self, standby: str) -> None:
        """`standby` receives no more WAL, for certain: its primary_conninfo emptied, and its WAL
        receiver gone. (A network cut was seen to leave a stream already open flowing.)"""
        self._on_primary(standby, "ALTER SYSTEM SET primary_conninfo = ''")
        self._on_primary(standby, "SELECT pg_reload_conf()")
        deadline = time.monotonic() + REPLICATION_TIMEOUT_S
        while self._on_primary(standby, "SELECT count(*) FROM pg_stat_wal_receiver"):
            if time.monotonic() > deadline:
                raise AssertionError(f"{standby} still receives WAL {REPLICATION_TIMEOUT_S}s after its conninfo was emptied")
            time.sleep(0.1)

    def wait_streaming(self, primary: str, standby: str, *, state: str | None = None) -> None:
        """Until `standby` streams from `primary` (and, given, is in that sync_state)."""
        name = pg_replication.application_name(self.pgs[standby])
        deadline = time.monotonic() + REPLICATION_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                if self._on_primary(primary, "SELECT count(*) FROM pg_stat_replication WHERE application_name = $1"
                                    " AND state = 'streaming' AND ($2::text IS NULL OR sync_state = $2)", name, state):
                    return
            except (OSError, asyncpg.PostgresError, TimeoutError):
                pass
            time.sleep(0.2)
        raise AssertionError(f"{standby} does not stream from {primary} (sync_state {state}) "
                             f"within {REPLICATION_TIMEOUT_S}s")

    def require_sync(self, primary: str, standby: str) -> None:
        """Commits on `primary` wait for `standby`: set only now it is connected (before, every
        commit, CREATE DATABASE included, would wait for it)."""
        name = pg_replication.application_name(self.pgs[standby])
        self._on_primary(primary, f"ALTER SYSTEM SET synchronous_standby_names = '{name}'")
        self._on_primary(primary, "SELECT pg_reload_conf()")
        self.wait_streaming(primary, standby, state="sync")

    def move_service_address(self, to: str) -> None:
        """SERVICE_ADDRESS onto `to` and off every other database host; every host forgets the
        old hardware address, as a gratuitous ARP of the new holder makes it."""
        for host in DATABASE_HOSTS:
            if host in self.net.namespace and host != to:
                subprocess.run(["ip", "-n", self.net.namespace[host], "addr", "del", f"{SERVICE_ADDRESS}/24",
                                "dev", "eth0"], capture_output=True)
        ip("-n", self.net.namespace[to], "addr", "add", f"{SERVICE_ADDRESS}/24", "dev", "eth0")
        for ns in self.net.namespace.values():
            subprocess.run(["ip", "-n", ns, "neigh", "flush", "to", SERVICE_ADDRESS], capture_output=True)
        self.primary = to

    def promote(self, host: str) -> None:
        self.net.run_on(host, pg_replication.promote, self.pgs[host])

    def rejoin_as_standby(self, old: str) -> str:
        """The former primary, stopped, rewound to the new primary's timeline and started as
        its standby; with synchronous replication the new primary then waits for it."""
        server = self.pgs[old]
        if server.running:
            server.stop()
        out = self.net.run_on(old, pg_replication.rewind, server, self.net.address[self.primary], PG_PORT)
        self.net.run_on(old, server.start)
        self.wait_streaming(self.primary, old)
        if self.replication == "sync":
            self.require_sync(self.primary, old)
        return out.strip().splitlines()[-1] if out.strip() else ""

    def set_link(self, host: str, up: bool) -> None:
        """The host's only link down (a machine lost: packets to it vanish) or up again."""
        ip("-n", self.net.namespace[host], "link", "set", "eth0", "up" if up else "down")

    async def _create_database(self) -> None:
        conn = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres")
        try:
            await conn.execute(f"CREATE DATABASE {DATABASE}")
        finally:
            await conn.close()
        await migrate_dsn(f"postgresql://postgres@127.0.0.1:{PG_PORT}/{DATABASE}")
        await register_triggerer(f"postgresql://postgres@127.0.0.1:{PG_PORT}/{DATABASE}")

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
            self.pgs[host].proc if host in self.pgs else self.workers[host].proc)
        assert proc is not None and proc.poll() is None, f"{host} is not running"
        return proc.pid

    def _pids(self, host: str) -> list[int]:
        """The host's process, and for PostgreSQL also every backend and helper the
        postmaster forked (they leave its process group with setsid, so killpg misses them)."""
        pid = self.pid_of(host)
        if host not in self.pgs:
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
        (self.nodes.get(host) or self.workers.get(host) or self.pgs[host]).kill()

    def kill_database(self, host: str) -> int:
        """SIGKILL the postmaster and every process it forked at once, as the end of its
        machine or container would; returns how many."""
        pids = self._pids(host)
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        proc = self.pgs[host].proc
        assert proc is not None
        proc.wait(timeout=10)
        return len(pids)

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
        for host, server in self.pgs.items():
            server.terminate(signal.SIGQUIT, 10)  # immediate: nothing here to keep
            server.kill()
            pg_log = self.root / host / "postgres.log"
            if pg_log.exists():  # it lives on the tmpfs about to go
                shutil.copy(pg_log, self.root / f"{'postgres' if host == 'pg' else host}.log")
        for mount in reversed(self.mounts):
            done = subprocess.run(["umount", "-l", str(mount)], capture_output=True, text=True)
            if done.returncode != 0:
                problems.append(f"umount {mount}: {done.stderr.strip()}")
        self.mounts.clear()
        problems += self.net.destroy()
        return problems
