"""Python's garbage collector, set for a process that serves commands for hours.

A create allocates a few hundred short-lived objects (the decoded command, its context,
plan, request, result and events), which reference counting frees; the cyclic collector only
needs to run for the rare cycle. With CPython's default thresholds (a young collection every
700 net allocations, an old one every 100 young ones) it ran constantly under load and
scanned the process's long-lived objects (modules, the pool, the consumers) again and again.
Frozen once the worker is started, those objects are never scanned again, and young
collections run after more allocations (tests/bench/README.md, "Round 4", has the measured
worker CPU per create).
"""

from __future__ import annotations

import gc

# Net allocations of tracked objects between young collections, and the young (then middle)
# collections between the older ones.
YOUNG_THRESHOLD = 50_000
OLDER_EVERY = 20


def settle_after_start() -> None:
    """Freeze what start-up made and space the collections out, when the worker is ready
    (app.serve, once a process: the settings are the whole process's). Objects frozen here
    and later made part of a cycle are never collected: start-up's are the modules, the pool,
    the consumers, which live as long as the process."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, OLDER_EVERY, OLDER_EVERY)
