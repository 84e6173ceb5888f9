"""Processes the embedded servers run as: children acted on by PID, tied to their parent's life.

`die_with_parent` is how `make run`'s servers never outlive it (a closed terminal, a SIGKILL);
`process_alive` and `stop_pid` deal with servers an earlier run left behind, known only by
the pid files they wrote.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int) -> Callable[[], None] | None:
    """A preexec_fn: the kernel sends `sig` to the child when the thread that forked it dies.

    Linux clears this on a change of user id, so it must run after Popen's setuid (it does:
    preexec_fn is called last before exec). Elsewhere it does nothing.
    """

    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here, in the parent, not between fork and exec
    parent = os.getpid()

    def arm() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: nobody would stop this child
            os.kill(os.getpid(), sig)

    return arm


def process_alive(pid: int, name: str) -> bool:
    """Whether `pid` runs a program whose command line contains `name` (a pid file may be stale)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True  # no /proc: alive, of unknown program
    return name.encode() in cmdline


def stop_pid(pid: int, sig: int, name: str, timeout: float) -> bool:
    """Signal a process that is not our child and wait for it to exit; SIGKILL after `timeout`."""
    if not process_alive(pid, name):
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return True
    except PermissionError as exc:
        raise PermissionError(f"{name} (pid {pid}) runs as another user and cannot be stopped from here: stop it"
                              f" as that user ({exc})") from exc
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process_alive(pid, name):
            return True
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    while process_alive(pid, name):
        time.sleep(0.05)
    return True


class ChildProcess:
    """A child process we started, acted on by its PID only (`self.proc`)."""

    proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc is not None and self.running:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def terminate(self, sig: int, timeout: float) -> None:
        """Signal, wait up to `timeout`, then SIGKILL."""
        if self.proc is None or not self.running:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
