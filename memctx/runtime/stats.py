"""Bookkeeping for :meth:`memctx.MemoryContext.stats`: hook latencies and distinct counts."""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from memctx.retrieval import unique_keys

from .archive_keys import KeySet

__all__ = ["DistinctKeys", "HookTimer"]

_KEEP = 2_000  # latest calls per hook: enough for stable p95, bounded memory


class HookTimer:
    """Wall time of the latest calls of each hook, in milliseconds, and how many calls."""

    def __init__(self) -> None:
        self._samples: dict[str, deque[float]] = {}
        self._calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    @contextmanager
    def __call__(self, hook: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = (time.perf_counter() - start) * 1000.0
            with self._lock:
                self._samples.setdefault(hook, deque(maxlen=_KEEP)).append(elapsed)
                self._calls[hook] += 1

    def samples(self, hook: str) -> list[float]:
        """The recorded latencies of ``hook`` (ms), oldest first (the latest 2,000)."""
        with self._lock:
            return list(self._samples.get(hook, ()))

    def summary(self) -> dict[str, dict[str, Any]]:
        """``{hook: {calls, p50, p95, max}}``: ``calls`` (an int) every call of the hook,
        the milliseconds over the latest 2,000."""
        out: dict[str, dict[str, Any]] = {}
        with self._lock:
            items = [(k, np.array(v), self._calls[k]) for k, v in self._samples.items() if v]
        for hook, arr, calls in items:
            out[hook] = {
                "calls": int(calls),
                "p50": float(np.percentile(arr, 50)),
                "p95": float(np.percentile(arr, 95)),
                "max": float(arr.max()),
            }
        return out


class DistinctKeys:
    """Trim-cache keys (:attr:`memctx.trim.MessageFacts.key`: one per distinct message
    content) seen so far, for counts that must not grow by seeing a message again."""

    def __init__(self) -> None:
        self._seen = KeySet()

    def add_new(self, keys: np.ndarray) -> int:
        """Add ``keys``; how many distinct ones were not seen before."""
        fresh = keys[~self._seen.has(keys)]
        if not len(fresh):
            return 0
        unique: list[int] = unique_keys(fresh).tolist()
        self._seen.add(unique)
        return len(unique)
