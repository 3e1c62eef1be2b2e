"""The raw store's inter-process lock: an exclusive ``flock`` on ``segments.jsonl.lock``.

Writers take it for every add, so it must be cheap: one ``open``, one ``flock`` and one
``fstat`` to take it, one ``flock`` and one ``close`` to give it back, about 7 us.
``filelock.FileLock`` (py-filelock) takes the very same lock, a ``flock`` on the same file,
but spends ~140 us a cycle in its own bookkeeping (fork tracking, re-entrancy, soft-lock
fallback), a tenth of an add. The two exclude each other, so a process using py-filelock on
this path (an older memctx) still cannot write at the same time.

Like py-filelock the file is opened again for every acquisition and never deleted: deleting
a lock file that others may hold or wait on would split them across two inodes. A lock
taken on a file that was unlinked meanwhile (``st_nlink == 0``) protects nothing and is
dropped and taken again. Waiting polls with a non-blocking ``flock`` (doubling sleeps up to
50 ms) so that the timeout holds.

Not re-entrant and not thread-safe: the store serialises its calls with its own lock and
counts nested uses itself.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path
from typing import Final

from memctx.fs import note_refusal

__all__ = ["LockTimeout", "StoreLock"]

_CONTENTION: Final = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES})
_FLAGS: Final = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_MAX_SLEEP: Final = 0.05


class LockTimeout(TimeoutError):
    """The lock was not free within the timeout."""


class StoreLock:
    """An exclusive inter-process lock on one file.

    Args:
        path: The lock file (created on first use, mode 0644 minus the umask).
        timeout: Seconds to wait before :meth:`acquire` raises :class:`LockTimeout`.
    """

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock, waiting up to the timeout.

        Raises:
            LockTimeout: Another holder kept it for the whole timeout.
            OSError: The file cannot be opened or locked (e.g. a read-only directory).
        """
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already locked by this object")
        deadline = time.monotonic() + self.timeout
        sleep = 0.001
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if os.fstat(fd).st_nlink:  # not unlinked between our open and our flock
                    self._fd = fd
                    return
            except OSError as exc:
                if exc.errno not in _CONTENTION:
                    os.close(fd)
                    raise
            os.close(fd)
            if time.monotonic() >= deadline:
                raise LockTimeout(f"{self.path} is still locked by another process")
            time.sleep(sleep)
            sleep = min(2 * sleep, _MAX_SLEEP)

    def _open(self) -> int:
        try:
            try:
                return os.open(self.path, _FLAGS | os.O_CREAT, 0o644)
            except PermissionError:
                # A sticky directory (/tmp) refuses O_CREAT on another user's existing file.
                if not os.path.exists(self.path):
                    raise
                return os.open(self.path, _FLAGS)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link in its place: never followed, counted
                note_refusal(self.path)
            raise

    def release(self) -> None:
        """Give the lock back (closing the descriptor releases the flock in any case)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
