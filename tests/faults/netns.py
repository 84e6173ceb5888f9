"""The network of one fault run: a namespace per host, each with one veth to a bridge that
lives in a switch namespace of its own, so nothing of it appears in the machine's own
namespace. Names carry a random run id (parallel runs never meet), addresses exist only
inside the run's namespaces, and `destroy()` deletes exactly the namespaces this object
created (their veths go with them).

Partitions are blackhole routes: a host cut from another drops every packet it would send
there, on both sides. That needs nothing but iproute2 (no nftables, no iptables), and
behaves as a dropped link does: open connections hang until a timeout notices, new ones
fail.

Code runs "on" a host by running in a thread that entered the host's namespace (setns is
per thread): processes it starts, and threads it creates, are on that host too.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
CLONE_NEWNET = 0x40000000
SUBNET = "10.88.0"
_libc = ctypes.CDLL(None, use_errno=True)


class NetworkError(RuntimeError):
    pass


def available() -> str | None:
    """Why this machine cannot run the fault harness, or None if it can."""
    if os.name != "posix" or os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (`ip`) is not installed"
    probe = f"mfprobe{uuid.uuid4().hex[:8]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


class Network:
    def __init__(self, hosts: Iterable[str]) -> None:
        self.run_id = uuid.uuid4().hex[:8]
        self.hosts = list(hosts)
        self.namespace = {h: f"mf{self.run_id}-{h}" for h in self.hosts}
        self.address = {h: f"{SUBNET}.{i + 1}" for i, h in enumerate(self.hosts)}
        self.switch = f"mf{self.run_id}-switch"
        self._created: list[str] = []
        self._cuts: set[tuple[str, str]] = set()
        self._throttled: set[str] = set()

    def create(self) -> Network:
        self._add_namespace(self.switch)
        ip("-n", self.switch, "link", "add", "name", "br0", "type", "bridge")
        ip("-n", self.switch, "link", "set", "br0", "up")
        for i, host in enumerate(self.hosts):
            ns = self.namespace[host]
            self._add_namespace(ns)
            port = f"port{i}"
            ip("-n", self.switch, "link", "add", "name", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
            ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "addr", "add", f"{self.address[host]}/24", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
        return self

    def _add_namespace(self, ns: str) -> None:
        ip("netns", "add", ns)
        self._created.append(ns)

    def destroy(self) -> list[str]:
        """Delete this run's namespaces; returns the errors (teardown goes on past them)."""
        errors = []
        for ns in reversed(self._created):
            done = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True)
            if done.returncode != 0:
                errors.append(f"{ns}: {done.stderr.strip()}")
        self._created.clear()
        return errors

    # ------------------------------------------------------------------ faults

    def cut(self, a: str, b: str) -> None:
        """No packet between a and b, either way."""
        for src, dst in ((a, b), (b, a)):
            if (src, dst) not in self._cuts:
                ip("-n", self.namespace[src], "route", "add", "blackhole", f"{self.address[dst]}/32")
                self._cuts.add((src, dst))

    def partition(self, *sides: Iterable[str]) -> list[tuple[str, str]]:
        """Cut every host of one side from every host of the others; hosts on no side keep
        every link (a bridge between sides, or clients everyone reaches)."""
        groups = [list(s) for s in sides]
        pairs = []
        for g1, g2 in itertools.combinations(groups, 2):
            for a in g1:
                for b in g2:
                    self.cut(a, b)
                    pairs.append((a, b))
        return pairs

    def heal(self) -> None:
        for src, dst in sorted(self._cuts):
            ip("-n", self.namespace[src], "route", "del", "blackhole", f"{self.address[dst]}/32")
        self._cuts.clear()

    def throttle(self, host: str, rate: str, limit: str) -> None:
        """A slow, lossy link out of `host`: a token bucket (tc tbf; the kernel here has no
        netem) at `rate`, whose queue holds `limit` bytes: packets queue (delay) and what
        overflows the queue is dropped (loss)."""
        done = subprocess.run(["tc", "-n", self.namespace[host], "qdisc", "add", "dev", "eth0", "root", "tbf",
                               "rate", rate, "burst", "8kb", "limit", limit], capture_output=True, text=True)
        if done.returncode != 0:
            raise NetworkError(f"tc tbf on {host}: {done.stderr.strip()}")
        self._throttled.add(host)

    def unthrottle(self) -> None:
        for host in sorted(self._throttled):
            subprocess.run(["tc", "-n", self.namespace[host], "qdisc", "del", "dev", "eth0", "root"],
                           capture_output=True)
        self._throttled.clear()

    @property
    def cuts(self) -> set[tuple[str, str]]:
        return set(self._cuts)

    # ------------------------------------------------------------------ running on a host

    def enter(self, host: str) -> None:
        """Move the calling thread into the host's namespace."""
        fd = os.open(f"/run/netns/{self.namespace[host]}", os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise NetworkError(f"setns into {self.namespace[host]}: {os.strerror(err)}")
        finally:
            os.close(fd)

    def run_on(self, host: str, fn: Callable[..., T], *args, **kwargs) -> T:
        """fn(*args, **kwargs) in a new thread on `host`; its result or its exception."""
        out: dict[str, object] = {}

        def body() -> None:
            try:
                self.enter(host)
                out["value"] = fn(*args, **kwargs)
            except BaseException as exc:  # handed to the caller
                out["error"] = exc

        thread = threading.Thread(target=body, name=f"on-{host}", daemon=True)
        thread.start()
        thread.join()
        if "error" in out:
            raise out["error"]  # type: ignore[misc]
        return out["value"]  # type: ignore[return-value]
