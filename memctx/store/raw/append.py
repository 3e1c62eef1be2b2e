"""Writing side of the raw store: prepare, dedup, cap, append, embed, index.

:class:`AppendingStore` holds :meth:`~AppendingStore.add` and :meth:`~AppendingStore.add_many`
(the protocol between processes is in :mod:`memctx.store.raw.store`); what one message may
keep is :mod:`memctx.store.raw.quota`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from memctx.errors import StoreError

from ..files import open_regular
from .compact import CompactingStore
from .index import age_cutoff
from .io import (
    Prepared,
    Segment,
    append_error,
    check_inside,
    fd_ident,
    fsync_dir,
    path_ident,
    prepare_segment,
    rollback,
    write_all,
)
from .quota import message_key, plan_batch
from .records import search_text

__all__ = ["AppendingStore", "NewSegment"]

NewSegment = tuple[str, str, str] | dict[str, Any]
"""An item of :meth:`RawStore.add_many`: ``(session_id, role, content)`` or a mapping with
``session_id``, ``role``, ``content`` and optional ``timestamp``, ``turn`` and ``name``."""


class AppendingStore(CompactingStore):
    """:class:`CompactingStore` with the add path; see :class:`memctx.store.raw.store.RawStore`."""

    def _fresh_items(self, prepared: list[Prepared], indexes: Iterable[int]) -> list[int]:
        """Items neither stored already, nor repeated in the batch, nor past the age limit."""
        cutoff = age_cutoff(self._clock(), self._max_age)
        seen: set[bytes] = set()
        out = []
        for i in indexes:
            item = prepared[i]
            if not self._idx.has_digest(item.digest) and item.digest not in seen:
                seen.add(item.digest)
                if item.segment.timestamp >= cutoff:
                    out.append(i)
        return out

    def add(
        self,
        session_id: str,
        role: str,
        content: str,
        *,
        timestamp: float | None = None,
        turn: int | None = None,
    ) -> Segment | None:
        """Archive one message: redact, dedup, tag, append, embed, index.

        Args:
            session_id: The session (``[A-Za-z0-9._:-]{1,128}``, not ``.`` or ``..``).
            role: The message role (``user``, ``assistant``, ``tool``...).
            content: The message text; redacted before anything else sees it.
            timestamp: Epoch seconds; ``clock()`` when omitted.
            turn: The caller's turn number.

        Returns:
            The stored segment; ``None`` for a duplicate (same session, role and redacted
            content as a live segment), a timestamp already past the age limit, or a chunk
            in the middle of a message over its quota (:mod:`memctx.store.raw.quota`).

        Raises:
            StoreError: Invalid input, or the files cannot be written; then nothing was
                stored and the in-memory indexes still match the files.
        """
        item = {"session_id": session_id, "role": role, "content": content}
        return self.add_many([{**item, "timestamp": timestamp, "turn": turn}])[0]

    def add_many(self, items: Iterable[NewSegment]) -> list[Segment | None]:
        """Archive many messages with one embedding batch and one locked write.

        Args:
            items: ``(session_id, role, content)`` tuples or mappings (:data:`NewSegment`).
                Consecutive chunks of one message (same session, role, name, timestamp and
                turn) keep at most ``max(1,000, 5 % of max_segments)`` segments, their head
                and tail (:mod:`memctx.store.raw.quota`).

        Returns:
            Per item, the stored segment or ``None`` (see :meth:`add`).

        Raises:
            StoreError: As :meth:`add`; an invalid item stores nothing of the batch.
        """
        prepared = [prepare_segment(item, self._clock, self._redactor) for item in items]
        results: list[Segment | None] = [None] * len(prepared)
        with self._lock:
            self._ensure_open()
            keep = plan_batch([message_key(p.segment.info) for p in prepared], self._idx.run)
            self._unwritten += keep.count(False)
            todo = self._fresh_items(prepared, [i for i, k in enumerate(keep) if k])
        if not todo:
            return results
        # Embedding is the slow part: outside the lock, and before anything is written.
        segments = [prepared[i].segment for i in todo]
        matrix = self._vfile.embed([search_text(s.content, s.timestamp, s.name) for s in segments])
        row_of = {i: row for row, i in enumerate(todo)}
        with self._lock, contextlib.ExitStack() as stack:
            self._ensure_open()
            try:
                stack.enter_context(self._file_locked(create=True))
            except (OSError, StoreError) as exc:
                raise append_error(self._seg_path, exc, len(todo)) from exc
            self.refresh()  # another process may have stored the same text meanwhile
            todo = self._fresh_items(prepared, todo)
            if todo:
                self._append([prepared[i] for i in todo], matrix[[row_of[i] for i in todo]])
                for i in todo:
                    results[i] = prepared[i].segment
            self._evict()
            if self.auto_compact:
                self._maybe_compact()
        return results

    def _writer(self) -> int:
        """The append descriptor, for the very file the in-memory offsets refer to."""
        ident = path_ident(self._seg_path)
        wfd = self._wfd
        if (
            ident is not None
            and ident == self._ident
            and wfd is not None
            and fd_ident(wfd) == ident
        ):
            # The file we opened, and checked, before (a symlink swapped in meanwhile would
            # name another file): the common case of an add, two stats and no realpath walk.
            return wfd
        check_inside(self._dir, self._seg_path)
        if ident != self._ident:  # under the lock only an outside hand replaces the file
            self._load()
            ident = self._ident
        if self._wfd is None or ident is None or fd_ident(self._wfd) != ident:
            if self._wfd is not None:
                os.close(self._wfd)
                self._wfd = None
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
            # 0600: conversations are private. A directory or FIFO in its place is refused.
            self._wfd = open_regular(self._seg_path, flags, 0o600, doing="append to")
            if ident is None:  # created just now
                if self._durable:
                    fsync_dir(self._dir)
                self._open_read()
        return self._wfd

    def _append(self, items: list[Prepared], matrix: np.ndarray) -> None:
        """Write the lines, then the vectors, then index in memory; undo the file on failure.

        Indexing applies the message quota: a chunk of a message already at its quota sets
        the oldest one after its head aside (no vector is kept for it).
        """
        start: int | None = None
        try:
            wfd = self._writer()
            start = os.fstat(wfd).st_size
            # A torn fragment at the end must not swallow our first line.
            prefix = b"\n" if start and os.pread(wfd, 1, start - 1) != b"\n" else b""
            write_all(wfd, prefix + b"".join(item.line for item in items))
            if self._durable:
                os.fsync(wfd)
        except (OSError, StoreError) as exc:
            if start is not None:
                rollback(wfd, start)
            raise append_error(self._seg_path, exc, len(items)) from exc
        ids = [item.segment.id for item in items]
        try:
            self._vfile.append(ids, matrix, self._idx.snapshot_vectors)
        except (OSError, StoreError, ValueError) as exc:
            rollback(wfd, start)
            raise append_error(self._vfile.path, exc, len(items)) from exc
        pos, keys = start + len(prefix), []
        for item in items:
            loc = (pos, len(item.line) - 1)
            keys.append(self._idx.add(item.segment.info, loc, item.digest, item.tokens))
            pos += len(item.line)
        live = [row for row, key in enumerate(keys) if key in self._idx.info]  # quota: see above
        self._idx.vectors.add_many([keys[row] for row in live], matrix[live])
        self._file_lines += len(items)
        self._uncached += len(items)
        self._finish_scan(pos, 0)
