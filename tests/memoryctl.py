"""`memoryctl` in-process: the console script's entry point (worker.cli.memoryctl:main) with its own
environment and captured output, in a thread (each command calls asyncio.run). About a second
cheaper per call than a new interpreter; commands that wait for signals (run, sinks,
cache-node) need a real process instead."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import subprocess

import structlog

from worker.cli import memoryctl as cli


def _main(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    # memoryctl configures structlog for its process (caching each logger on first use, writing
    # to the stderr it found: this call's): put the suite's back, or a logger first used by a
    # later test would write into this call's buffer and slip past that test's capture_logs().
    logging_config = structlog.get_config()
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        structlog.configure(**logging_config)
    return subprocess.CompletedProcess(["memoryctl", *argv], code, out.getvalue(), err.getvalue())


async def memoryctl(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return await asyncio.to_thread(_main, argv, env)


def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every subcommand path of a parser (("user", "show"), ...)."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        return [path]
    return [leaf for name, sub in subparsers[0].choices.items() for leaf in leaves(sub, (*path, name))]
