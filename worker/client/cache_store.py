"""The cache node's store: a bounded TTL cache, least recently used out first, with one
loader call for concurrent misses of a key. It knows nothing of NATS: worker/client/cache_node.py
feeds it invalidations from its consumer and says whether it is live (stores only then)."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar, cast

T = TypeVar("T")
Key = tuple[str, str]


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0  # every get_or_load that did not return a cached value
    loads: int = 0  # loader calls (single-flight: concurrent misses share one)
    invalidations: int = 0  # invalidations applied (events and direct calls)
    flushes: int = 0
    evictions: int = 0  # dropped by the size bound (least recently used first)
    expirations: int = 0  # dropped by the TTL
    bypasses: int = 0  # misses served while not live: loaded, not stored
    gaps: int = 0  # consumer sequence gaps seen

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class _Entry:
    __slots__ = ("value", "expires_at")

    def __init__(self, value: Any, expires_at: float) -> None:
        self.value = value
        self.expires_at = expires_at


class _Flight:
    """One loader call shared by concurrent callers of one key: the key's current generation.

    invalidate() and flush() end the generation: the flight is detached from the key and
    marked stale, and a stale flight stores nothing. A flight started while the node is not
    live is stale from the start.
    """

    __slots__ = ("task", "stale")

    def __init__(self, stale: bool) -> None:
        self.task: asyncio.Future[Any] | None = None
        self.stale = stale



class CacheStore:
    def __init__(self, *, max_entries: int, ttl_seconds: float, clock: Callable[[], float],
                 live: Callable[[], bool], log: Any) -> None:
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self.stats = CacheStats()
        self._clock = clock
        self._live = live
        self._log = log
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._flights: dict[Key, _Flight] = {}

    def holds_anything(self) -> bool:
        return bool(self._entries or self._flights)

    def __len__(self) -> int:
        return len(self._entries)

    def contains(self, cache: str, key: str) -> bool:
        """Whether an unexpired value is held (no stats, no LRU touch)."""
        entry = self._entries.get((cache, key))
        return entry is not None and entry.expires_at > self._clock()

    async def get_or_load(self, cache: str, key: str, loader: Callable[[], Awaitable[T]]) -> T:
        k = (cache, key)
        if self._live():
            entry = self._entries.get(k)
            if entry is not None:
                if entry.expires_at > self._clock():
                    self._entries.move_to_end(k)
                    self.stats.hits += 1
                    return cast(T, entry.value)
                del self._entries[k]
                self.stats.expirations += 1
        self.stats.misses += 1
        if not self._live():
            self.stats.bypasses += 1
        flight = self._flights.get(k)
        if flight is None:
            flight = _Flight(stale=not self._live())
            self._flights[k] = flight
            task = asyncio.ensure_future(self._load(k, flight, loader))
            flight.task = task
            task.add_done_callback(_consume_exception)
            # Shielded: a caller giving up does not cancel the load the others wait for.
            return await asyncio.shield(task)
        if flight.task is None:  # set with the flight, before any caller can find it
            raise RuntimeError("a cache flight without its load")
        return await asyncio.shield(flight.task)

    async def _load(self, k: Key, flight: _Flight, loader: Callable[[], Awaitable[T]]) -> T:
        self.stats.loads += 1
        loaded_at = self._clock()  # the TTL counts from before the read: conservative
        try:
            value = await loader()
        finally:
            if self._flights.get(k) is flight:
                del self._flights[k]
        if not flight.stale and self._live():
            self._store(k, value, loaded_at)
        return value

    def _store(self, k: Key, value: Any, loaded_at: float) -> None:
        self._entries[k] = _Entry(value, loaded_at + self.ttl_seconds)
        self._entries.move_to_end(k)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
            self.stats.evictions += 1

    def invalidate(self, cache: str, key: str, *, reason: str = "manual", **fields: Any) -> bool:
        """Drop one key, and keep a load already in flight for it from storing. True if held."""
        k = (cache, key)
        held = self._entries.pop(k, None) is not None
        flight = self._flights.pop(k, None)
        if flight is not None:
            flight.stale = True
        self.stats.invalidations += 1
        self._log.info("cache_invalidated", cache=cache, key=key, reason=reason, held=held,
                       load_in_flight=flight is not None, **fields)
        return held

    def flush(self, reason: str = "manual", **fields: Any) -> int:
        """Drop everything, and keep every load in flight from storing. Returns entries dropped."""
        dropped = len(self._entries)
        self._entries.clear()
        in_flight = len(self._flights)
        for flight in self._flights.values():
            flight.stale = True
        self._flights.clear()
        self.stats.flushes += 1
        level = self._log.info if reason == "manual" else self._log.warning
        level("cache_flushed", reason=reason, entries=dropped, loads_in_flight=in_flight, **fields)
        return dropped


def _consume_exception(task: asyncio.Future[Any]) -> None:
    # Every waiter may have given up; the load's failure is still theirs, not the loop's.
    if not task.cancelled():
        task.exception()
