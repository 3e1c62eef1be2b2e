"""Compaction lanes: one compaction per session at a time, a few across all sessions.

Seed 001 §3.2 queues every compaction twice (``enqueueCommandInLane(sessionLane,
enqueueCommandInLane(globalLane, …))``): the session lane is serial, so two compactions of
one session never overlap (the second would summarise a history the first is replacing);
the global lane caps how many run at once across sessions (each holds a summariser call and
a history in memory; the offline summariser is CPU-bound on a two-core machine).

:class:`CompactionLanes` does the same with threads, on the caller's thread:
:meth:`~CompactionLanes.run` waits for the session's lane, then for a global slot, runs the
job and releases both, whatever the job raised.

- **The second compaction of a session waits; it is not coalesced.** Coalescing would hand
  the second caller the first one's result, computed from an older history and perhaps
  other instructions (a manual ``/compact`` after an overflow compaction); waiting costs
  little, since a compaction that finds nothing old enough to summarise returns at once.
- **The session lane is taken before the global slot**, as the seed nests them: a job
  waiting behind its own session holds no global slot that other sessions could use.
- **A failing job releases both**, and its exception reaches its own caller only; other
  sessions' jobs are not affected.
- **Re-entry is refused**: a job that runs another compaction of its own session on the
  same thread would wait for itself forever, so :class:`LaneError` says so instead.
- A lane with no job running or waiting is forgotten, so a long-lived process serving
  many sessions keeps no state for idle ones.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from memctx.errors import MemctxError

__all__ = ["DEFAULT_MAX_CONCURRENT_COMPACTIONS", "CompactionLanes", "LaneError", "LaneTimeoutError"]

# Two: the machine memctx targets has two cores, and a remote summariser is rate-limited
# per account anyway. Raise it for many sessions against a fast provider.
DEFAULT_MAX_CONCURRENT_COMPACTIONS = 2

T = TypeVar("T")


class LaneError(MemctxError):
    """A job cannot run in its lane (re-entry from the same session, a bad argument)."""


class LaneTimeoutError(LaneError, TimeoutError):
    """A job waited longer than its ``timeout`` for its session's lane or a global slot.

    The job did not run. The message names the session and what it waited for.
    """


@dataclass(slots=True)
class _Lane:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0  # jobs running or waiting in this lane
    owner: int | None = None  # thread ident of the job running in it


class CompactionLanes:
    """A serial lane per session and a global limit on concurrent jobs (module docstring).

    Args:
        max_concurrent: Jobs that may run at once across all sessions (>= 1).

    Attributes:
        peak: The most jobs seen running at once (for tests and stats).
        completed: Jobs that returned.
        failed: Jobs that raised.
    """

    def __init__(self, max_concurrent: int = DEFAULT_MAX_CONCURRENT_COMPACTIONS) -> None:
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int):
            raise LaneError(f"max_concurrent must be an int >= 1, got {max_concurrent!r}")
        if max_concurrent < 1:
            raise LaneError(f"max_concurrent must be >= 1, got {max_concurrent}")
        self.max_concurrent = max_concurrent
        self._cond = threading.Condition()
        self._lanes: dict[str, _Lane] = {}
        self._active = 0
        self.peak = 0
        self.completed = 0
        self.failed = 0

    @property
    def active(self) -> int:
        """Jobs running now."""
        with self._cond:
            return self._active

    @property
    def sessions(self) -> int:
        """Sessions with a job running or waiting."""
        with self._cond:
            return len(self._lanes)

    def pending(self, session_id: str) -> int:
        """Jobs of ``session_id`` running or waiting now."""
        with self._cond:
            lane = self._lanes.get(session_id)
            return 0 if lane is None else lane.users

    def run(self, session_id: str, job: Callable[[], T], *, timeout: float | None = None) -> T:
        """Run ``job`` in ``session_id``'s lane under the global limit; return its result.

        Args:
            session_id: The session the job compacts.
            job: The compaction (any callable); run on this thread.
            timeout: Seconds to wait for the lane and a slot together; ``None`` waits as long
                as it takes.

        Returns:
            What ``job`` returned.

        Raises:
            LaneTimeoutError: The wait took longer than ``timeout``; the job did not run.
            LaneError: ``job`` would run inside a job of the same session on this thread.
            Exception: Whatever ``job`` raised (both the lane and the slot are released).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        me = threading.get_ident()
        with self._cond:
            lane = self._lanes.get(session_id)
            if lane is not None and lane.owner == me:
                raise LaneError(
                    f"a compaction of session {session_id!r} is already running on this "
                    "thread: do not start one from inside another; return and run it after"
                )
            if lane is None:
                lane = self._lanes[session_id] = _Lane()
            lane.users += 1
        try:
            if not lane.lock.acquire(timeout=_left(deadline)):
                raise LaneTimeoutError(
                    f"session {session_id!r}: waited {timeout}s for its earlier compaction to "
                    "finish; the job did not run. Retry later or raise the timeout"
                )
            try:
                lane.owner = me
                self._take_slot(session_id, deadline, timeout)
                try:
                    return self._call(job)
                finally:
                    with self._cond:
                        self._active -= 1
                        self._cond.notify_all()
            finally:
                lane.owner = None
                lane.lock.release()
        finally:
            with self._cond:
                lane.users -= 1
                if lane.users == 0 and self._lanes.get(session_id) is lane:
                    del self._lanes[session_id]

    def _take_slot(self, session_id: str, deadline: float | None, timeout: float | None) -> None:
        with self._cond:
            while self._active >= self.max_concurrent:
                left = _left(deadline)
                if left == 0:
                    raise LaneTimeoutError(
                        f"session {session_id!r}: waited {timeout}s for one of the "
                        f"{self.max_concurrent} compaction slots shared by all sessions; the "
                        "job did not run. Retry later or raise max_concurrent"
                    )
                self._cond.wait(None if left < 0 else left)
            self._active += 1
            self.peak = max(self.peak, self._active)

    def _call(self, job: Callable[[], T]) -> T:
        try:
            value = job()
        except BaseException:
            with self._cond:
                self.failed += 1
            raise
        with self._cond:
            self.completed += 1
        return value


def _left(deadline: float | None) -> float:
    """Seconds to wait: -1 for no limit (``Lock.acquire``'s spelling), else >= 0."""
    if deadline is None:
        return -1
    return max(0.0, deadline - time.monotonic())
