"""The progress line of a run and its time-left estimate.

The estimate is worker-seconds left divided by workers. Worker-seconds come from what the
finished jobs really took per unit of weight (messages replayed), learnt per configuration
(strategy × embedding: ``full`` costs nothing per message, memory-context with the
transformer the most), then per kind (transformer or not) for a configuration with no
finished job yet, then from the other kind times 30 (the measured prior). One rate per
configuration, so the estimate does not swing when a long bundle lands after many quick
jobs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["EtaEstimator", "format_progress"]

TRANSFORMER_PRIOR = 30.0  # seconds per weight, transformer over the others, before data


@dataclass
class EtaEstimator:
    """Seconds per weight unit, learnt from finished jobs (see the module docs)."""

    seconds: dict[object, float] = field(default_factory=dict)
    weights: dict[object, float] = field(default_factory=dict)

    def add(self, weight: float, heavy: bool, seconds: float, group: str = "") -> None:
        """A job of ``weight`` in configuration ``group`` (``heavy``: it embeds with the
        transformer) took ``seconds``."""
        for key in (heavy, (group, heavy)):
            self.weights[key] = self.weights.get(key, 0.0) + weight
            self.seconds[key] = self.seconds.get(key, 0.0) + seconds

    def _measured(self, key: object) -> float | None:
        weight = self.weights.get(key, 0.0)
        return self.seconds[key] / weight if weight > 0 else None

    def rate(self, heavy: bool, group: str = "") -> float | None:
        """Seconds per weight unit for a job of ``group`` (``None`` before any data)."""
        for key in ((group, heavy), heavy):
            measured = self._measured(key)
            if measured is not None:
                return measured
        other = self._measured(not heavy)
        if other is None:
            return None
        return other * (TRANSFORMER_PRIOR if heavy else 1 / TRANSFORMER_PRIOR)

    def seconds_left(
        self, pending: Iterable[tuple[float, bool, str]], workers: int
    ) -> float | None:
        """Wall seconds for the ``(weight, heavy, group)`` jobs still to finish on
        ``workers``; ``None`` before any job has finished."""
        items = list(pending)
        if not items:
            return 0.0
        total = 0.0
        for weight, heavy, group in items:
            rate = self.rate(heavy, group)
            if rate is None:
                return None
            total += weight * rate
        return total / max(1, min(workers, len(items)))


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}:{secs:02d}"


def format_progress(
    done: int, total: int, label: str, job_seconds: float, elapsed: float, left: float | None
) -> str:
    """``[  12/380] needle-000 memory-context/hash  job 3.2 s  elapsed 1:05  ~4.2 min left``."""
    if done >= total:
        eta = "done"
    elif left is None:
        eta = "estimating"
    else:
        eta = f"~{left / 60:.1f} min left"
    width = len(str(total))
    return (
        f"[{done:>{width}}/{total}] {label}  job {job_seconds:.1f} s  "
        f"elapsed {_clock(elapsed)}  {eta}"
    )
