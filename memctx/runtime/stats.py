"""Hook latency bookkeeping for :meth:`memctx.MemoryContext.stats`."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

__all__ = ["HookTimer"]

_KEEP = 2_000  # latest calls per hook: enough for stable p95, bounded memory


class HookTimer:
    """Wall time of the latest calls of each hook, in milliseconds."""

    def __init__(self) -> None:
        self._samples: dict[str, deque[float]] = {}
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

    def samples(self, hook: str) -> list[float]:
        """The recorded latencies of ``hook`` (ms), oldest first."""
        with self._lock:
            return list(self._samples.get(hook, ()))

    def summary(self) -> dict[str, dict[str, float]]:
        """``{hook: {calls, p50, p95, max}}`` over the recorded calls."""
        out = {}
        with self._lock:
            items = [(k, np.array(v)) for k, v in self._samples.items() if v]
        for hook, arr in items:
            out[hook] = {
                "calls": float(len(arr)),
                "p50": float(np.percentile(arr, 50)),
                "p95": float(np.percentile(arr, 95)),
                "max": float(arr.max()),
            }
        return out
