"""Compaction of the raw store: rewrite both data files with the live segments only.

Eviction and superseded records leave dead lines in ``segments.jsonl`` (and dead rows in
``vectors.bin``). Once they pass ~10% of the live ones the files are rewritten: about 0.1 s
at 20,000 segments, so it must never run per add. By default an add that crosses the
threshold compacts at once; an owner with a background thread (the runtime) sets
:attr:`CompactingStore.auto_compact` off and calls :meth:`CompactingStore.maybe_compact`
there instead, so that the context hook never pays for a rewrite.
"""

from __future__ import annotations

import logging
import os
from typing import Final

from memctx.errors import StoreError, VmemError

from .attach import AttachingStore
from .base import gc_paused
from .io import read_runs, rewrite_file

__all__ = ["CompactingStore"]

logger = logging.getLogger("memctx")

_COMPACT_RATIO: Final = 0.10  # compact when dead lines pass 10% of live ones...
_COMPACT_MIN_DEAD: Final = 64  # ...and this many (a tiny store would rewrite on every add)


class CompactingStore(AttachingStore):
    """:class:`AttachingStore` with compaction; see :class:`memctx.store.raw.store.RawStore`.

    Attributes:
        auto_compact: Whether an add compacts when due (the default). Off, dead lines pile
            up until :meth:`maybe_compact` or :meth:`compact` runs; reads are unaffected.
    """

    auto_compact: bool = True

    def compaction_due(self) -> bool:
        """Whether dead lines passed the threshold (one comparison, no file access)."""
        with self._lock:
            return self._opened and self._compaction_due()

    def _compaction_due(self) -> bool:
        dead = self._file_lines - len(self._idx)
        live_share = int(len(self._idx) * _COMPACT_RATIO)
        return dead > max(_COMPACT_MIN_DEAD, live_share, self._compact_backoff)

    def _maybe_compact(self) -> bool:
        """Compact once dead lines pass ~10% of live ones: amortised, never per add."""
        if not self._compaction_due():
            return False
        try:
            self._compact()
        except StoreError as exc:  # the add itself succeeded; retry much later
            logger.warning("%s", exc)
            self._compact_backoff = 2 * (self._file_lines - len(self._idx))
            return False
        return True

    def maybe_compact(self) -> bool:
        """Compact now if due, as an add does with :attr:`auto_compact`; ``True`` if it did.

        Never raises for a failed rewrite: it is logged and the next try waits until twice
        as many lines are dead.

        Raises:
            StoreError: The store's lock cannot be taken.
        """
        with self._lock:
            self._ensure_open()
            if self._ident is None or not self._compaction_due():
                return False
            try:
                with self._file_locked(create=False):
                    self.refresh()
                    return self._maybe_compact()
            except OSError as exc:
                raise StoreError(f"cannot compact {self._seg_path}: {exc}") from exc

    def compact(self) -> None:
        """Rewrite ``segments.jsonl`` and ``vectors.bin`` with the live segments only.

        Raises:
            StoreError: The new files cannot be written (the old ones stay as they were).
        """
        with self._lock:
            self._ensure_open()
            if self._ident is None:
                return
            try:
                with self._file_locked(create=False):
                    self.refresh()
                    self._compact()
            except OSError as exc:
                raise StoreError(f"cannot compact {self._seg_path}: {exc}") from exc

    def _compact(self) -> None:
        # Every live segment's offsets and heap entry are rebuilt: tens of thousands of
        # tuples that all stay alive, so the collector would scan the heap for nothing.
        with gc_paused():
            self._rewrite()
        self._compactions += 1
        self._compact_backoff = 0
        # A long-lived writer may never close: refresh the term cache now and then, but
        # rarely (half the store missing), as the adds pay for it (~0.3 s at 20,000).
        self._save_terms(stale_share=0.5)

    def _rewrite(self) -> None:
        rfd, idx = self._rfd, self._idx
        assert rfd is not None
        order = sorted(idx.info, key=idx.loc.__getitem__)
        new_loc: dict[int, tuple[int, int]] = {}
        size = 0
        for key in order:
            new_loc[key] = (size, idx.loc[key][1])
            size += idx.loc[key][1] + 1
        lines = read_runs(rfd, [idx.loc[k] for k in order])
        try:
            # Vectors first: a crash in between leaves dead lines (re-evicted), not lost vectors.
            self._vfile.rewrite(*idx.snapshot_vectors())
            rewrite_file(self._seg_path, lines)
        except (OSError, VmemError, ValueError) as exc:
            raise StoreError(f"cannot compact {self._seg_path}: {exc}; it is unchanged") from exc
        for fd in (self._rfd, self._wfd):
            if fd is not None:
                os.close(fd)
        self._rfd = self._wfd = None
        self._open_read()
        idx.relocate(new_loc)
        self._file_lines = len(order)
        self._finish_scan(size, 0)
