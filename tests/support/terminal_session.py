"""memoryctl on a pseudo-terminal, as an operator types at it: read until a prompt shows, answer,
read to the end. Each read waits on the terminal itself (select), never on a clock."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from dataclasses import dataclass

from tests.conftest import ROOT


@dataclass
class Session:
    proc: subprocess.Popen[bytes]
    master: int
    shown: bytes = b""

    @property
    def seen(self) -> str:
        return self.shown.decode("utf-8", errors="replace")  # whole: a character may span two reads

    def read_until(self, text: str, timeout: float = 60.0) -> str:
        """What the terminal showed up to and including `text`; fails naming what it showed."""
        while text not in self.seen:
            chunk = self._read(timeout)
            if not chunk:
                raise AssertionError(f"the terminal never showed {text!r}; it showed:\n{self.seen}")
            self.shown += chunk
        return self.seen

    def _read(self, timeout: float) -> bytes:
        """The next output; b"" once the child has closed the terminal (EIO) or said nothing for
        `timeout` seconds."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        try:
            return os.read(self.master, 4096) if ready else b""
        except OSError:
            return b""

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def finish(self, timeout: float = 60.0) -> tuple[int, str]:
        """The exit code and everything the terminal showed."""
        while chunk := self._read(timeout):
            self.shown += chunk
        code = self.proc.wait(timeout=timeout)
        os.close(self.master)
        return code, self.seen


def on_terminal(argv: list[str], env: dict[str, str]) -> Session:
    """`memoryctl argv` with a pseudo-terminal as its stdin, stdout and stderr."""
    master, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "worker.cli.memoryctl", *argv], cwd=ROOT, env=env,
                            stdin=child, stdout=child, stderr=child, start_new_session=True)
    os.close(child)
    return Session(proc, master)
