"""memoryctl provision: an account's streams and consumers, with the steps that delete.

The worker creates and updates its streams and consumers at every start, but its NATS user may
not delete a stream or a consumer, nor purge anything but acknowledged commands
(deploy/nats/permissions-worker.conf, issue 35: a bot that tricked the worker into publishing
where it asked could have used any right the worker holds). What needs those rights is done
here, as the account's provisioning user (`memory-admin`, deploy/nats/permissions-admin.conf),
before the workers: the rebuild of a work-queue MEMORY_COMMANDS of an older release
(worker/consuming/administration/stream_upgrade.py) and a bot's events consumer made push,
deleted and made again as pull. Everything else is what the worker's start does, with the same
settings, so this may run ahead of every deployment.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import nats.errors

from worker.cli import reach, terminal
from worker.consuming.administration import streams
from worker.shared.settings import Settings


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser("provision", help="create, update or rebuild the account's streams and consumers (before the workers)",
                   description="What the worker does at start-up (MEMORY_COMMANDS, MEMORY_EVENTS, MEMORY_DLQ, the"
                               " partition consumers, the bot's consumers of TENANT), with the worker's settings, and"
                               " what its NATS user may not: rebuilding a work-queue MEMORY_COMMANDS of an older"
                               " release, making a bot's consumer made push a pull consumer again. Run it as the"
                               " account's provisioning user (NATS_USER=memory-admin, NATS_INBOX_PREFIX=_INBOX.admin;"
                               " deploy/README.md, \"Who may do what\"). Servers: NATS_URL, else a running `make run`.")


async def run(settings: Settings, nats_url: str, out: Callable[[str], None] = terminal.say,
              connect_options: dict[str, Any] | None = None) -> int:
    nc = await reach.nats_connection(nats_url, connect_options)
    try:
        await streams.provision_for(nc.jetstream(), nc, settings, may_delete=True)
    except (streams.StreamProvisionError, streams.ConsumerProvisionError) as exc:
        out(f"memoryctl provision: {exc}")
        return 2
    except nats.errors.TimeoutError:
        out("memoryctl provision: the server did not answer a JetStream request: is NATS_USER the account's"
            " provisioning user (memory-admin)? The worker's user may not delete streams or consumers")
        return 1
    finally:
        await nc.close()
    out(f"provisioned: {settings.memory_partitions} partitions, {settings.stream_replicas} replica(s)"
        + (f", the consumers of bot-{settings.tenant}" if settings.tenant else ""))
    return 0
