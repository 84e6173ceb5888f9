"""memoryctl: run the worker, set up or adopt its database, play the demo, operator commands."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog

from db.migrate import NotAdopted
from worker.cli import admin, reach
from worker.cli import adopt as adopt_cli
from worker.cli import commands as commands_cli
from worker.cli import dlq as dlq_cli
from worker.cli import provision as provision_cli
from worker.cli import shadow as shadow_cli
from worker.cli.servers import DataDirInUse, EmbeddedUnavailable, NoDatabase, endpoints_for_clients, local_servers, recorded
from worker.shared import logging as worker_logging
from worker.shared.settings import Settings, SettingsError
from worker.shared.version import DISTRIBUTION, version

log = structlog.get_logger("memoryctl")

def _run(settings: Settings) -> int:
    from worker.consuming.administration.streams import ConsumerProvisionError, ProvisionNeeded, StreamProvisionError
    from worker.consuming.app import serve
    from worker.consuming.connection import NatsConnectionClosed
    from worker.consuming.replication_check import SyncStandbyRequired

    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass

    async def run(stop: asyncio.Event) -> None:
        with local_servers(settings) as endpoints:
            try:
                await serve(settings, endpoints, stop)
            except Exception as exc:
                if found := reach.unreachable(exc, nats_url=endpoints.nats_url, database_url=endpoints.database_url):
                    raise found from None
                raise

    try:
        return _until_signalled(run)
    except NatsConnectionClosed as exc:
        log.error("worker_exiting", reason=str(exc), exit_code=3)
        return 3
    except (NotAdopted, StreamProvisionError, ConsumerProvisionError, ProvisionNeeded, DataDirInUse,
            EmbeddedUnavailable, SyncStandbyRequired) as exc:
        print(f"memoryctl run: refusing to start: {exc}", file=sys.stderr)
        return 2


def _database_command(settings: Settings, command: Callable[[str], int], *, create: bool = False) -> int:
    """Run `command(database_url)` on DATABASE_URL, else on the database of a running `make run`,
    else on the embedded PostgreSQL of the data directory, started for the command: one an
    earlier `make run` made, or a new one when `create` (migrate --embedded)."""
    if settings.database_url:
        return command(settings.database_url)
    if running := recorded(settings):
        return command(running["database_url"])
    try:
        with local_servers(settings, need_nats=False, create=create) as endpoints:
            return command(endpoints.database_url)
    except (DataDirInUse, EmbeddedUnavailable, NoDatabase) as exc:
        print(f"memoryctl: {exc}", file=sys.stderr)
        return 2


def _demo(settings: Settings) -> int:
    from worker.cli.demo import DemoRefused, play

    try:
        asyncio.run(play(endpoints_for_clients(settings)))
    except DemoRefused as exc:
        print(f"memoryctl demo: {exc}", file=sys.stderr)
        return 2
    return 0


def _hung_up(then: Callable[[], None]) -> None:
    """SIGHUP (a closed terminal, a dropped SSH session): stop in order, as on SIGTERM. Writes to a
    terminal that is gone fail, so the shutdown's output goes nowhere instead of raising."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        if os.isatty(fd):
            os.dup2(devnull, fd)
    os.close(devnull)
    then()


# After a second SIGINT or SIGTERM, how long the cancelled shutdown may still take before the
# process exits regardless.
FORCED_EXIT_S = 10.0
FORCED_EXIT_CODE = 130
# A signal this soon after the first is the same request delivered twice, not a second request.
REPEAT_WINDOW_S = 1.0


def _awaiting() -> list[str]:
    """Where each task is suspended (task name, then its innermost frame): what a stop that
    did not finish was still waiting for."""
    found = []
    for task in asyncio.all_tasks():
        stack = task.get_stack()
        if stack:
            frame = stack[-1]
            found.append(f"{task.get_name()}: {frame.f_code.co_filename.rsplit('/', 2)[-1]}:{frame.f_lineno}"
                         f" {frame.f_code.co_name}")
    return sorted(found)


def _until_signalled(run: Callable[[asyncio.Event], Awaitable[object]]) -> int:
    """Run `run(stop)` until SIGINT, SIGTERM or SIGHUP. The first signal asks for a clean stop; a
    second one, REPEAT_WINDOW_S or more later, cancels whatever the stop still waits for, and the
    process exits at most FORCED_EXIT_S later in any case (a supervisor's repeated signal always
    works)."""

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()

        first_at: list[float] = []

        def signalled() -> None:
            if not stop.is_set():
                stop.set()
                first_at.append(loop.time())
                return
            if loop.time() - first_at[0] < REPEAT_WINDOW_S:
                # The same request arriving twice: `kill -TERM -PGID` reaches memoryctl, and GNU
                # make, in the same group, passes its own SIGTERM on to its child as well.
                log.info("stop_signal_repeated", note=f"a repeat within {REPEAT_WINDOW_S:.0f}s asks for the same "
                         "clean stop; a later one forces it")
                return
            log.warning("stop_forced", waiting_on=_awaiting(), note=f"second signal: cancelling the shutdown, "
                        f"exiting within {FORCED_EXIT_S:.0f}s")
            loop.call_later(FORCED_EXIT_S, os._exit, FORCED_EXIT_CODE)
            if task is not None:
                task.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, signalled)
        loop.add_signal_handler(signal.SIGHUP, _hung_up, signalled)
        await run(stop)

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        return FORCED_EXIT_CODE
    return 0


def _sinks(settings: Settings, args: argparse.Namespace) -> int:
    from worker.sinks.process import run_sinks

    endpoints = endpoints_for_clients(settings, need_database=not args.no_postgres)
    if args.no_postgres and args.jsonl is None:
        print("memoryctl sinks: nothing to run: give --jsonl PATH or leave PostgreSQL on", file=sys.stderr)
        return 2
    database_url = None if args.no_postgres else endpoints.database_url
    return _naming_unreachable(endpoints.nats_url, database_url, lambda: _until_signalled(
        lambda stop: run_sinks(endpoints.nats_url, database_url, args.jsonl, settings.metric_sample_retention_days, stop,
                               consumer_prefix=args.consumer_prefix, connect_options=settings.nats_auth.connect_options(),
                               metrics_host=settings.metrics_host, metrics_port=args.metrics_port)))


def _naming_unreachable(nats_url: str | None, database_url: str | None, run: Callable[[], int]) -> int:
    """`run()`, a failed connection to one of these servers raised as reach.Unreachable."""
    try:
        return run()
    except Exception as exc:
        if found := reach.unreachable(exc, nats_url=nats_url, database_url=database_url):
            raise found from None
        raise


def _cache_node(settings: Settings, args: argparse.Namespace) -> int:
    from worker.client.cache_node import run_cache_node

    endpoints = endpoints_for_clients(settings, need_database=False)
    return _naming_unreachable(endpoints.nats_url, None, lambda: _until_signalled(lambda stop: run_cache_node(
        endpoints.nats_url, args.name, stop, connect_options=settings.nats_auth.connect_options())))


_SERVERS = ("Servers: NATS_URL and DATABASE_URL when set, else those of a running `make run`, found from any"
            " directory (recorded in MEMORY_DATA_DIR/endpoints.json, default .data, and in"
            " ~/.local/state/memory-worker/runs/; MEMORY_DATA_DIR set: that one only).")


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand (tests/e2e/test_e2e_memoryctl.py runs each one's --help and a real invocation)."""
    parser = argparse.ArgumentParser(prog="memoryctl", description="Memory worker control.", epilog=_SERVERS
                                     + " `migrate` and `adopt` with neither start the embedded PostgreSQL an earlier"
                                     " `make run` made (`migrate --embedded` creates one). A server that cannot be"
                                     f" reached is one line naming it, exit {reach.EXIT_CODE}."
                                     " `memoryctl <command> --help` for each command.")
    parser.add_argument("--version", action="version", version=f"memoryctl ({DISTRIBUTION}) {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="run the worker (embedded NATS/PostgreSQL when NATS_URL/DATABASE_URL are unset)",
                   description="Run the worker on NATS_URL and DATABASE_URL; for each one unset, an embedded"
                               " nats-server or PostgreSQL under MEMORY_DATA_DIR (default .data), stopped with the"
                               " worker however it ends. Stops on SIGINT, SIGTERM or SIGHUP. Every other setting"
                               " is an environment variable too (README, \"Configuration\").")
    sub.add_parser("demo", help="play a short scripted conversation against a running worker",
                   description="A save, a personal save, a refusal and an eviction, through the bot-side client,"
                               " on a standalone database (it writes its own servers, users and memories rows). "
                               + _SERVERS)
    adopt_cli.add_parsers(sub)
    admin.add_parsers(sub)
    dlq_cli.add_parsers(sub)
    commands_cli.add_parsers(sub)
    provision_cli.add_parser(sub)
    shadow_cli.add_parsers(sub)
    sinks = sub.add_parser("sinks", help="run the metrics sinks (JSON lines and/or PostgreSQL metric_samples)",
                           description="The metrics sinks (a FastStream application: `faststream run"
                                       " worker.sinks.app:app` runs the same one from the environment) until SIGINT"
                                       " or SIGTERM. " + _SERVERS)
    sinks.add_argument("--jsonl", type=Path, metavar="PATH", help="append metrics to this JSON-lines file")
    sinks.add_argument("--no-postgres", action="store_true", help="do not write metric_samples")
    sinks.add_argument("--consumer-prefix", default="metrics-sink",
                       help="durable consumer name prefix (one per independent sink deployment)")
    sinks.add_argument("--metrics-port", type=int, default=0, metavar="PORT",
                       help="serve the sinks' Prometheus /metrics on METRICS_HOST:PORT (default: off)")
    node = sub.add_parser("cache-node", help="run a cache node that logs what it invalidates",
                          description="A cache node on its durable consumer of cache.invalidate.>, logging each"
                                      " invalidation, until SIGINT or SIGTERM. " + _SERVERS)
    node.add_argument("--name", default="cache-node",
                      help="this node's name (keep it across restarts): its durable consumer is cache-node-NAME")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"memoryctl: configuration error: {exc}", file=sys.stderr)
        return 2
    worker_logging.configure(settings.log_format, settings.log_level)
    try:
        return _dispatch(args, settings)
    except reach.Unreachable as exc:
        print(f"memoryctl {args.command}: {exc}", file=sys.stderr)
        return reach.EXIT_CODE


def _dispatch(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "sinks":
        return _sinks(settings, args)
    if args.command == "cache-node":
        return _cache_node(settings, args)
    if args.command == "migrate":
        return _database_command(settings, adopt_cli.migrate_command, create=args.embedded)
    if args.command == "adopt":
        from worker.consuming.limits import limits_from

        return _database_command(settings, lambda url: adopt_cli.adopt_command(args, url, limits_from(settings)))
    if args.command in ("run", "demo"):
        return {"run": _run, "demo": _demo}[args.command](settings)
    if args.command == "commands":
        return asyncio.run(commands_cli.run(args, endpoints_for_clients(settings, need_database=False).nats_url,
                                            connect_options=settings.nats_auth.connect_options()))
    if args.command == "provision":
        return asyncio.run(provision_cli.run(settings, endpoints_for_clients(settings, need_database=False).nats_url,
                                             connect_options=settings.nats_auth.connect_options()))
    if args.command == "dlq":
        return asyncio.run(dlq_cli.run(args, endpoints_for_clients(settings, need_database=False).nats_url,
                                       connect_options=settings.nats_auth.connect_options()))
    if args.command == "shadow":
        return asyncio.run(shadow_cli.run(args, endpoints_for_clients(settings, need_nats=False).database_url,
                                          settings.tenant))
    return asyncio.run(admin.run(args, endpoints_for_clients(settings, need_nats=False).database_url))


if __name__ == "__main__":
    sys.exit(main())
