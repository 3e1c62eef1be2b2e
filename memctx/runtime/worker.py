"""One background thread per engine: archiving embeds and knowledge extraction run here.

Why a single thread and not a pool: the jobs of one session must apply in order (a fact
extracted from compaction 2 may supersede one from compaction 1), the stores serialise writes
anyway, and the machine this targets has two cores. A failing job is logged and counted,
never re-raised into the hooks; the next job still runs.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Final, cast

__all__ = ["BackgroundWorker"]

logger = logging.getLogger("memctx")

_STOP: Final = object()


class BackgroundWorker:
    """A FIFO of jobs run by one daemon thread, started on the first :meth:`submit`.

    Args:
        name: Thread name (shows in debuggers and logs).
    """

    def __init__(self, name: str = "memctx-worker") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._cond = threading.Condition()
        self._pending = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        self.done: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()

    def submit(self, job: Callable[[], object], kind: str) -> bool:
        """Queue ``job``; ``False`` (job not queued) once the worker is closed."""
        with self._cond:
            if self._closed:
                return False
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self._queue.put((kind, job))
        return True

    @property
    def pending(self) -> int:
        """Jobs queued or running."""
        with self._cond:
            return self._pending

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every queued job has finished; ``False`` if ``timeout`` ran out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._pending:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float | None = None) -> bool:
        """Finish queued jobs, then stop the thread; ``False`` if ``timeout`` ran out."""
        with self._cond:
            if self._closed:
                thread = self._thread
            else:
                self._closed = True
                thread = self._thread
                if thread is not None:
                    self._queue.put(_STOP)
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            kind, job = cast(tuple[str, Callable[[], object]], item)
            try:
                job()
                self.done[kind] += 1
            except Exception:  # a failing job must not kill the worker (module docstring)
                self.failed[kind] += 1
                logger.exception("memctx background job %r failed", kind)
            finally:
                with self._cond:
                    self._pending -= 1
                    self._cond.notify_all()
