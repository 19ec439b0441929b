"""The one registry of built programs (and pipelines): every kernel family keeps its programs in a named
:class:`ProgramCache` made by :func:`register` (or a :func:`memoized` builder function), each an LRU of
its own capacity, all counted here. ``vyre.array.fusion_stats()`` reports the totals (``kernels_built``:
misses, each a build; ``program_cache_hits``), :func:`stats` the breakdown by family.

A build runs outside the lock (two threads missing the same key may both build it; the second result is
kept, the same program). Keys are the families' own: structural keys of fused trees
(:func:`vyre.array._kernels.nodes.collect`), shapes and dtypes -- never data or identities.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")

_lock = threading.Lock()


class ProgramCache(Generic[T]):
    """An LRU of built objects by key (thread-safe), registered under ``family`` with its hit and build
    counts. Make one with :func:`register`."""

    def __init__(self, family: str, capacity: int):
        self.family, self.capacity = family, capacity
        self._items: OrderedDict[Hashable, T] = OrderedDict()
        self.hits = self.built = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The object under ``key``, built by ``build()`` on a miss (the least recently used one beyond
        the capacity is dropped)."""
        with _lock:
            got = self._items.get(key)
            if got is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return got
        made = build()
        with _lock:
            self._items[key] = made
            self.built += 1
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return made

    def clear(self) -> None:
        """Drop every cached object (the counts stay)."""
        with _lock:
            self._items.clear()


_families: dict[str, ProgramCache[Any]] = {}


def register(family: str, capacity: int, kind: type[T]) -> ProgramCache[T]:
    """A new cache registered as ``family`` (one name per family: a module reloaded replaces its own),
    holding ``kind`` objects (a Program, a Pipeline), at most ``capacity`` of them."""
    cache: ProgramCache[T] = ProgramCache(family, capacity)
    with _lock:
        _families[family] = cache
    return cache


def memoized(family: str, capacity: int, kind: type[T]) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """A decorator caching a builder function's results by its (hashable) arguments in the registered
    cache ``family``: the registry's replacement of ``functools.lru_cache``."""
    def deco(fn: Callable[P, T]) -> Callable[P, T]:
        cache = register(family, capacity, kind)

        @functools.wraps(fn)
        def cached(*args: P.args, **kwargs: P.kwargs) -> T:
            return cache.get((args, tuple(sorted(kwargs.items()))), lambda: fn(*args, **kwargs))
        return cached
    return deco


def stats() -> dict[str, dict[str, int]]:
    """Per family: ``size`` (cached now), ``capacity``, ``hits`` and ``built`` (misses) since start or
    :func:`reset_stats`."""
    with _lock:
        return {name: {"size": len(c._items), "capacity": c.capacity, "hits": c.hits, "built": c.built}
                for name, c in sorted(_families.items())}


def totals() -> tuple[int, int]:
    """(built, hits) over every family."""
    with _lock:
        return sum(c.built for c in _families.values()), sum(c.hits for c in _families.values())


def reset_stats() -> None:
    """Zero every family's counts (the cached objects stay)."""
    with _lock:
        for c in _families.values():
            c.hits = c.built = 0


__all__ = ["ProgramCache", "register", "memoized", "stats", "totals", "reset_stats"]
