"""nats-server processes running the configuration of deploy/nats/, on loopback, owned by PID.

`NatsCluster` runs deploy/nats/cluster.conf three times (its environment variables set per
node: free loopback ports, a store directory each); `single_node` runs one server with
deploy/nats/accounts.conf copied verbatim next to a minimal node configuration. Passwords are
random per test session and given to nats-server through its environment, as in production.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats

from worker.local.embedded import LOOPBACK, _nats_server_binary, _wait_for_port, free_port
from worker.local.processes import ChildProcess

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_NATS = ROOT / "deploy" / "nats"

# user -> the environment variable accounts.conf reads its password from
PASSWORD_VARS = {
    "memory-worker": "NATS_WORKER_PASSWORD",
    "bot-tomori": "NATS_BOT_TOMORI_PASSWORD",
    "bot-kaede": "NATS_BOT_KAEDE_PASSWORD",
    "cache-node-a": "NATS_CACHE_NODE_A_PASSWORD",
    "metrics-sink": "NATS_METRICS_SINK_PASSWORD",
    "memory-operator": "NATS_OPERATOR_PASSWORD",
    "memory-admin": "NATS_ADMIN_PASSWORD",
    # Kaede's account (deploy/nats/tenant-kaede.conf)
    "memory-worker-kaede": "NATS_WORKER_KAEDE_PASSWORD",
    "cache-node-kaede-a": "NATS_CACHE_NODE_KAEDE_A_PASSWORD",
    "metrics-sink-kaede": "NATS_METRICS_SINK_KAEDE_PASSWORD",
    "memory-operator-kaede": "NATS_OPERATOR_KAEDE_PASSWORD",
    "memory-admin-kaede": "NATS_ADMIN_KAEDE_PASSWORD",
    "sys-admin": "NATS_SYS_PASSWORD",
}
# user -> the inbox prefix it connects with (accounts.conf lets it subscribe under it only)
INBOX_PREFIXES = {
    "memory-worker": None,  # the default _INBOX
    "bot-tomori": "_INBOX.bot.tomori",
    "bot-kaede": "_INBOX.bot.kaede",
    "cache-node-a": "_INBOX.cache.a",
    "metrics-sink": "_INBOX.sink",
    "memory-operator": "_INBOX.ops",
    "memory-admin": "_INBOX.admin",
    "memory-worker-kaede": None,
    "cache-node-kaede-a": "_INBOX.cache.a",
    "metrics-sink-kaede": "_INBOX.sink",
    "memory-operator-kaede": "_INBOX.ops",
    "memory-admin-kaede": "_INBOX.admin",
    "sys-admin": None,
}
PASSWORDS = {user: secrets.token_hex(12) for user in PASSWORD_VARS}


def copy_config(root: Path, *names: str) -> None:
    """`names` and every file accounts.conf includes (the permissions and the further bots'
    accounts, all next to it in deploy/nats/), copied verbatim into `root`."""
    for path in DEPLOY_NATS.glob("*.conf"):
        if path.name in names or path.name == "accounts.conf" or path.name.startswith(("permissions-", "tenant-")):
            shutil.copy(path, root / path.name)


def password_env() -> dict[str, str]:
    return {var: PASSWORDS[user] for user, var in PASSWORD_VARS.items()}


def connect_options(user: str) -> dict[str, Any]:
    """What a client of this role passes to nats.connect (besides the servers)."""
    options: dict[str, Any] = {"user": user, "password": PASSWORDS[user]}
    if INBOX_PREFIXES[user]:
        options["inbox_prefix"] = INBOX_PREFIXES[user]
    return options


async def connect_as(servers: str | list[str], user: str, *, errors: list[Exception] | None = None,
                     **extra: Any) -> nats.NATS:
    """A nats-py client logged in as `user`; asynchronous errors (permission violations) are
    appended to `errors`."""

    async def error_cb(exc: Exception) -> None:
        if errors is not None:
            errors.append(exc)

    options: dict[str, Any] = {"connect_timeout": 2, "max_reconnect_attempts": 5, "reconnect_time_wait": 0.2,
                               "error_cb": error_cb, **connect_options(user), **extra}
    return await nats.connect(servers, **options)




@dataclass
class NatsNode(ChildProcess):
    """One nats-server child process; stop() and kill() act on its PID only."""

    name: str
    conf: Path
    env: dict[str, str]
    port: int
    log: Path
    http_port: int | None = None
    proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"nats://{LOOPBACK}:{self.port}"

    def start(self) -> NatsNode:
        self.proc = subprocess.Popen([_nats_server_binary(), "-c", str(self.conf), "-l", str(self.log)],
                                     env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        _wait_for_port(self.port, self.proc, "nats-server", self.log, timeout=20.0)
        return self

    def stop(self, timeout: float = 15.0) -> None:
        self.terminate(signal.SIGTERM, timeout)

    def monitor(self, path: str) -> dict:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.http_port}{path}", timeout=2) as resp:
            return json.loads(resp.read())


class NatsCluster:
    """deploy/nats/cluster.conf three times: a real JetStream cluster on loopback."""

    def __init__(self, root: Path, size: int = 3) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        # The config files as deployed; include "accounts.conf" resolves next to cluster.conf.
        copy_config(root, "cluster.conf")
        names = [f"nats-{chr(ord('a') + i)}" for i in range(size)]
        ports = {n: (free_port(), free_port(), free_port()) for n in names}
        routes = "[" + ", ".join(f'"nats://{LOOPBACK}:{ports[n][1]}"' for n in names) + "]"
        self.nodes: list[NatsNode] = []
        for n in names:
            client, route, http = ports[n]
            env = dict(os.environ, **password_env(),
                       NATS_SERVER_NAME=n, NATS_LISTEN=f"{LOOPBACK}:{client}",
                       NATS_HTTP_LISTEN=f"{LOOPBACK}:{http}", NATS_CLUSTER_LISTEN=f"{LOOPBACK}:{route}",
                       NATS_ROUTES=routes, NATS_STORE_DIR=str(root / n / "js"))
            (root / n).mkdir(exist_ok=True)
            self.nodes.append(NatsNode(n, root / "cluster.conf", env, client, root / n / "nats.log", http))

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    @property
    def url(self) -> str:
        """NATS_URL for the worker: every node, comma-separated."""
        return ",".join(self.urls)

    def node(self, name: str) -> NatsNode:
        return next(n for n in self.nodes if n.name == name)

    def start(self, timeout: float = 30.0) -> NatsCluster:
        for node in self.nodes:
            node.start()
        self.wait_for_meta_leader(timeout)
        return self

    def wait_for_meta_leader(self, timeout: float = 30.0) -> str:
        return wait_for_meta_leader(lambda: [node.monitor("/jsz") for node in self.nodes if node.running],
                                    len(self.nodes), timeout)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
            node.kill()


def wait_for_meta_leader(jsz_of_running_nodes: Callable[[], list[dict]], size: int, timeout: float) -> str:
    """Every running node knows the same JetStream meta leader and the full cluster size."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            views = [jsz.get("meta_cluster", {}) for jsz in jsz_of_running_nodes()]
            leaders = {v.get("leader") for v in views}
            if len(leaders) == 1 and None not in leaders and "" not in leaders \
                    and all(v.get("cluster_size") == size for v in views):
                return leaders.pop()
            last = views
        except OSError as exc:
            last = exc
        time.sleep(0.1)
    raise RuntimeError(f"no JetStream meta leader within {timeout}s: {last}")


def single_node(root: Path) -> NatsNode:
    """One server with deploy/nats/accounts.conf (copied verbatim) on a free port."""
    root.mkdir(parents=True, exist_ok=True)
    copy_config(root)
    port = free_port()
    conf = root / "node.conf"
    conf.write_text(
        f'listen: "{LOOPBACK}:{port}"\n'
        "max_payload: 1MB\n"
        f'jetstream {{\n  store_dir: "{root / "js"}"\n  sync_interval: always\n}}\n'
        'include "accounts.conf"\n'
    )
    return NatsNode("single", conf, dict(os.environ, **password_env()), port, root / "nats.log").start()


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float, what: str, step: float = 0.05) -> None:
    """Poll `check` until it is true; fail naming `what` after `timeout` seconds."""
    import asyncio

    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(step)
