"""The worker's Prometheus metrics, and the tiny HTTP server for /metrics and /healthz."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import get_args

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from contracts.kinds.shadow import ShadowedKind, ShadowOutcome
from worker.domain.scope import SCOPE_OF
from worker.domain.secret_guard import CredentialKind
from worker.services.base import Answer
from worker.shared.version import DISTRIBUTION, version

log = structlog.get_logger("metrics")

REGISTRY = CollectorRegistry(auto_describe=True)

COMMANDS = Counter("memory_commands", "Commands handled, by kind and result status.", ["kind", "status"],
                   registry=REGISTRY)
DURATION = Histogram("memory_command_duration_seconds", "From delivery to acknowledgement.", ["kind"],
                     buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
                     registry=REGISTRY)
EVICTIONS = Counter("memory_evictions", "Memories forgotten to make room, by scope.", ["scope"], registry=REGISTRY)
DEAD_LETTERS = Counter("memory_dead_letters", "Commands sent to MEMORY_DLQ, by reason.", ["reason"],
                       registry=REGISTRY)
REDELIVERIES = Counter("memory_redeliveries", "Deliveries after the first, by kind.", ["kind"], registry=REGISTRY)
RETRIES = Counter("memory_retries", "Failed attempts sent back for a retry, by kind.", ["kind"], registry=REGISTRY)
EVENTS_NOT_STORED = Counter("memory_events_not_stored",
                            "Applied commands whose events MEMORY_EVENTS did not store after commit: each was handed"
                            " back unacknowledged, and its redelivery publishes them.", registry=REGISTRY)
CREATE_BATCH = Histogram("memory_create_batch_size", "Creates saved per database transaction.",
                         buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256), registry=REGISTRY)
COMMANDS_UNCONSUMED = Gauge("memory_commands_unconsumed", "Commands in MEMORY_COMMANDS not yet acknowledged.",
                            registry=REGISTRY)
COMMANDS_OLDEST_AGE = Gauge("memory_commands_oldest_unconsumed_age_seconds",
                            "Age of the oldest command in MEMORY_COMMANDS not yet acknowledged (0 with none).",
                            registry=REGISTRY)
COMMANDS_MAX_AGE = Gauge("memory_commands_max_age_seconds",
                         "MEMORY_COMMANDS drops commands older than this, consumed or not (COMMAND_MAX_AGE_HOURS).",
                         registry=REGISTRY)
COMMANDS_STREAM_BYTES = Gauge("memory_commands_stream_bytes", "Bytes MEMORY_COMMANDS holds.", registry=REGISTRY)
COMMANDS_MAX_BYTES = Gauge("memory_commands_max_bytes",
                           "MEMORY_COMMANDS refuses publishes beyond this size (COMMAND_MAX_MIB).", registry=REGISTRY)
DATABASE_SYNC_STANDBYS = Gauge("memory_database_sync_standbys",
                               "Synchronous standbys in sync with the database the worker writes to"
                               " (-1: its role may not see them).", registry=REGISTRY)
DATABASE_COMMITS_PROTECTED = Gauge("memory_database_commits_protected",
                                   "1 when the worker's commits wait for a synchronous standby in sync, 0 when a"
                                   " failover can lose acknowledged saves, -1 when it cannot be told.",
                                   registry=REGISTRY)
LOOKUPS_REFUSED = Counter("memory_lookups_refused",
                          "Result lookups dropped unanswered: their reply subject is outside REPLY_SUBJECT_PREFIXES"
                          " (a bot asking the worker to publish where it may not, issue 35).", registry=REGISTRY)
LOOKUPS_DROPPED = Counter("memory_lookups_dropped",
                          "Result lookups dropped unanswered because too many were waiting (worker/consuming/lookup/"
                          "scheduling.py): a bot asking faster than lookups are answered.", registry=REGISTRY)
SECRETS_REFUSED = Counter("memory_secrets_refused",
                          "Model memories the secret guard refused, by the kind of credential they held (never"
                          " anything of the credential itself).", ["kind"], registry=REGISTRY)
# Every kind is exported from the start, at 0: the first refusal of a kind then shows in
# increase() and rate(), which a series born at 1 would hide.
for _kind in get_args(CredentialKind):
    SECRETS_REFUSED.labels(_kind)
DRY_RUNS = Counter("memory_dry_runs", "Dry runs answered (shadow mode: decided, nothing written), by kind and the"
                   " status they would have had.", ["kind", "status"], registry=REGISTRY)
SHADOW_PAIRS = Counter("memory_shadow_pairs", "Shadow reports paired with their dry run, by the shadowed kind, the"
                       " outcome (agreed, differed, concurrent, timed_out, unpaired) and whether the worker differs"
                       " there on purpose (intended: the secret guard).", ["kind", "outcome", "intended"],
                       registry=REGISTRY)
for _kind in get_args(ShadowedKind):  # from 0, as the credential kinds above
    for _outcome in get_args(ShadowOutcome):
        SHADOW_PAIRS.labels(_kind, _outcome, "false")
READY = Gauge("memory_worker_ready", "1 when connected and consuming.", registry=REGISTRY)


# The labelled series of the per-command metrics, looked up once per label set (prometheus_client
# takes a lock and builds a key on every labels() call).
_commands = functools.cache(COMMANDS.labels)
_duration = functools.cache(DURATION.labels)


def observe(kind: str, status: str, seconds: float, deliveries: int, duplicate: bool,
            answer: Answer | None = None, *, dry: bool = False) -> None:
    """One command handled. A dry run is counted apart (it changed nothing: no save, eviction
    or refusal of it belongs with the real ones'); a shadow report counts its pair's outcome."""
    _duration(kind).observe(seconds)
    if deliveries > 1:
        REDELIVERIES.labels(kind).inc()
    if dry:
        DRY_RUNS.labels(kind, status).inc()
        return
    _commands(kind, status).inc()
    if answer is None or duplicate:
        return
    if answer.evicted_scope:
        EVICTIONS.labels(SCOPE_OF.get(answer.evicted_scope, answer.evicted_scope)).inc()
    if answer.refused_credential:
        SECRETS_REFUSED.labels(answer.refused_credential).inc()
    if answer.shadowed:
        shadowed_kind, outcome, intended = answer.shadowed
        SHADOW_PAIRS.labels(shadowed_kind, outcome, "true" if intended else "false").inc()


async def serve_http(host: str, port: int, healthy: Callable[[], bool]) -> asyncio.Server:
    """GET /metrics (Prometheus text format) and GET /healthz (200 ready, 503 not; the body's first
    line says which, its second the release: `memory-worker 0.2.0`).

    Loopback by default; a container sets METRICS_HOST=0.0.0.0 for its probes and scraper."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request.decode("latin-1").split()
            path = parts[1] if len(parts) >= 2 else ""
            if path == "/metrics":
                status, body, ctype = "200 OK", generate_latest(REGISTRY), CONTENT_TYPE_LATEST
            elif path == "/healthz":
                ok = healthy()
                status = "200 OK" if ok else "503 Service Unavailable"
                body = f"{'ok' if ok else 'not ready'}\n{DISTRIBUTION} {version()}\n".encode()
                ctype = "text/plain; charset=utf-8"
            else:
                status, body, ctype = "404 Not Found", b"not found\n", "text/plain; charset=utf-8"
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                         f"Connection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, host=host, port=port)
    log.info("metrics_listening", port=server.sockets[0].getsockname()[1])
    return server
