"""Where the CPU went during a measured interval: per process (from /proc) and machine-wide,
with the machine's context switches.

On a small machine every part of the path (the bot, NATS, the worker, PostgreSQL) shares the
same cores, so a rate is only explained together with what each part spent per command, and
with what other processes on the machine took meanwhile ("other"; steal on a VM).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the command name (which may contain spaces): state is index 0.
    return text.rsplit(")", 1)[1].split()


def _own(fields: list[str]) -> int:
    return int(fields[11]) + int(fields[12])  # utime + stime


def _reaped(fields: list[str]) -> int:
    return int(fields[13]) + int(fields[14])  # cutime + cstime: children waited for


def tree_seconds(pid: int) -> float:
    """A process, its live children and every child it has reaped (a postmaster and its backends)."""
    fields = _stat(pid)
    if fields is None:
        return 0.0
    ticks = _own(fields) + _reaped(fields)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        child = _stat(int(entry.name))
        if child is not None and int(child[1]) == pid:
            ticks += _own(child)
    return ticks / _TICK


def self_seconds() -> float:
    """This process and the children it reaped (pgbench), not the servers it still runs."""
    fields = _stat(os.getpid())
    return (_own(fields) + _reaped(fields)) / _TICK if fields else 0.0


def process_seconds(pid: int) -> float:
    fields = _stat(pid)
    return _own(fields) / _TICK if fields else 0.0


def machine() -> tuple[float, float, float, int]:
    """Machine-wide (busy, steal, total) CPU seconds and context switches since boot."""
    lines = Path("/proc/stat").read_text().splitlines()
    values = [int(v) for v in lines[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (values + [0] * 8)[:8]
    busy = user + nice + system + irq + softirq
    total = busy + idle + iowait + steal
    switches = next((int(line.split()[1]) for line in lines if line.startswith("ctxt ")), 0)
    return busy / _TICK, steal / _TICK, total / _TICK, switches


@dataclass
class Probe:
    """Snapshot at start(); figures(n) gives CPU ms per command for each part over the interval."""

    processes: dict[str, int] = field(default_factory=dict)  # name -> pid (process only)
    trees: dict[str, int] = field(default_factory=dict)  # name -> pid (with its children)
    _start: dict[str, float] = field(default_factory=dict)
    _machine: tuple[float, float, float, int] = (0.0, 0.0, 0.0, 0)
    _wall: float = 0.0

    def _sample(self) -> dict[str, float]:
        out = {"client": self_seconds()}
        out.update({name: process_seconds(pid) for name, pid in self.processes.items()})
        out.update({name: tree_seconds(pid) for name, pid in self.trees.items()})
        return out

    def start(self) -> Probe:
        self._start = self._sample()
        self._machine = machine()
        self._wall = time.perf_counter()
        return self

    def figures(self, commands: int) -> dict[str, float]:
        end = self._sample()
        busy1, steal1, total1, switches1 = machine()
        busy0, steal0, total0, switches0 = self._machine
        wall = time.perf_counter() - self._wall
        per = max(1, commands)
        spent = {name: end[name] - self._start.get(name, 0.0) for name in end}
        out = {f"{name}_cpu_ms_per_command": round(seconds * 1000 / per, 3) for name, seconds in spent.items()}
        busy = busy1 - busy0
        out["other_cpu_ms_per_command"] = round(max(0.0, busy - sum(spent.values())) * 1000 / per, 3)
        cores = os.cpu_count() or 1
        out["machine_busy_share"] = round(busy / max(1e-9, total1 - total0), 3)
        out["machine_steal_share"] = round((steal1 - steal0) / max(1e-9, total1 - total0), 3)
        # Every hand-off between the processes wakes one; on a small VM each costs tens of
        # microseconds of CPU, which is what a create costs more of when creates do not meet.
        out["context_switches_per_command"] = round((switches1 - switches0) / per, 1)
        out["wall_s"] = round(wall, 3)
        out["cores"] = cores
        return out
