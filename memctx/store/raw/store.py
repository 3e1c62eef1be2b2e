"""The raw store (the seed's WarmStore): every archived message, redacted, searchable.

Files in ``store_dir`` (nothing is created before the first add; reading never creates):

- ``segments.jsonl``: one JSON record per segment (format: :mod:`memctx.store.raw.io`).
- ``vectors.bin`` + ``vectors.meta.json``: VMEM v1 embeddings and the embedder that wrote
  them (:mod:`memctx.store.raw.vectors`).
- ``segments.jsonl.lock``: the inter-process lock, an exclusive ``flock``
  (:mod:`memctx.store.raw.lock`; the lock ``filelock.FileLock`` takes too). It guards both
  data files.
- ``bm25.cache``: the segments' BM25 term counts by content digest, so that a reopen need
  not tokenize them again (:mod:`memctx.store.raw.terms`). A pure cache: written at close,
  after a load or compaction when stale, ignored when stale or damaged.

Protocol between processes:

- Writers hold the lock. Under it a writer first reads what others appended (:meth:`refresh`),
  dedups against that, writes its batch with ONE ``os.write`` on an ``O_APPEND`` descriptor,
  then appends the vectors. Lines never interleave and dedup holds across processes.
- Readers need no lock: they stream complete lines from the last size they read. An
  unterminated tail is looked at again under the lock (writers finish before releasing it);
  if it is still unterminated it is a torn line from a crash: skipped and counted, never
  fatal. The next writer puts a newline first, so the fragment cannot swallow a record.
- Compaction writes a new file and ``os.replace``-s it; other processes see the new inode at
  their next refresh and reload from the new ``vectors.bin`` without re-embedding.

In memory (:mod:`memctx.store.raw.index`): metadata and byte offsets (contents are read back
by offset; a small LRU keeps recent ones), BM25, vectors and the episode links that
:func:`memctx.retrieval.hybrid.hybrid_search` uses. Freshness: ``__len__``, :meth:`segments`,
:meth:`keys_for_session`, :meth:`visible_keys`, :meth:`allowed`, :meth:`stats` and every add
call :meth:`refresh` first (one ``stat`` when nothing changed). Keys from those calls are then
used with :meth:`get` / :meth:`segment` / :meth:`content` and the :attr:`bm25`,
:attr:`vectors` and :attr:`episodes` indexes, which do not refresh; hold :attr:`lock` while
scoring if other threads add.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from memctx.errors import StoreError, VmemError
from memctx.retrieval import BM25Index, Embedder, EpisodeIndex, VectorIndex

from .base import O_CLOEXEC
from .compact import CompactingStore
from .index import age_cutoff
from .io import (
    Prepared,
    Segment,
    SegmentInfo,
    append_error,
    check_inside,
    fd_ident,
    fsync_dir,
    path_ident,
    prepare_segment,
    rollback,
    validate_session_id,
    write_all,
)
from .records import search_text

__all__ = ["NewSegment", "RawStore", "Segment", "SegmentInfo", "validate_session_id"]

logger = logging.getLogger("memctx")

NewSegment = tuple[str, str, str] | dict[str, Any]
"""An item of :meth:`RawStore.add_many`: ``(session_id, role, content)`` or a mapping with
``session_id``, ``role``, ``content`` and optional ``timestamp`` and ``turn``."""


class RawStore(CompactingStore):
    """Archived segments of every session: ``segments.jsonl`` + ``vectors.bin`` + indexes.

    Args:
        store_dir: The store's directory (resolved; created on the first add).
        embedder: Embeds segments (and, in searches, queries): ``name``, ``dim``, ``embed``.
        session_id: Default session of :meth:`visible_keys` and :meth:`allowed`.
        max_segments: Capacity; beyond it the oldest segments (by timestamp) are evicted.
        eviction_days: Segments older than this relative to ``clock()`` are evicted;
            ``None`` keeps them.
        redactor: Masks secrets before anything reaches disk or an index (on by default);
            ``None`` disables redaction.
        durable: ``fsync`` every append (survives power loss, not only a killed process).
            Without it appends are plain writes into the page cache, which survives the
            *process* being killed (``kill -9``): the kernel writes the pages back anyway.
        clock: Current time in epoch seconds (injectable for tests).

    Raises:
        StoreError: An invalid argument; the message names it and what is allowed.
    """

    # -- writing -------------------------------------------------------------------------

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
            content as a live segment) or a timestamp already past the age limit.

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

        Returns:
            Per item, the stored segment or ``None`` (see :meth:`add`).

        Raises:
            StoreError: As :meth:`add`; an invalid item stores nothing of the batch.
        """
        prepared = [prepare_segment(item, self._clock, self._redactor) for item in items]
        results: list[Segment | None] = [None] * len(prepared)
        with self._lock:
            self._ensure_open()
            todo = self._fresh_items(prepared, range(len(prepared)))
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
            except OSError as exc:
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
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | O_CLOEXEC
            self._wfd = os.open(self._seg_path, flags, 0o600)  # conversations are private
            if ident is None:  # created just now
                if self._durable:
                    fsync_dir(self._dir)
                self._open_read()
        return self._wfd

    def _append(self, items: list[Prepared], matrix: np.ndarray) -> None:
        """Write the lines, then the vectors, then index in memory; undo the file on failure."""
        start: int | None = None
        try:
            wfd = self._writer()
            start = os.fstat(wfd).st_size
            # A torn fragment at the end must not swallow our first line.
            prefix = b"\n" if start and os.pread(wfd, 1, start - 1) != b"\n" else b""
            write_all(wfd, prefix + b"".join(item.line for item in items))
            if self._durable:
                os.fsync(wfd)
        except OSError as exc:
            if start is not None:
                rollback(wfd, start)
            raise append_error(self._seg_path, exc, len(items)) from exc
        ids = [item.segment.id for item in items]
        try:
            self._vfile.append(ids, matrix, self._idx.snapshot_vectors)
        except (OSError, VmemError, ValueError) as exc:
            rollback(wfd, start)
            raise append_error(self._vfile.path, exc, len(items)) from exc
        pos, keys = start + len(prefix), []
        for item in items:
            loc = (pos, len(item.line) - 1)
            keys.append(self._idx.add(item.segment.info, loc, item.digest, item.tokens))
            pos += len(item.line)
        self._idx.vectors.add_many(keys, matrix)
        self._file_lines += len(items)
        self._uncached += len(items)
        self._finish_scan(pos, 0)

    # -- reading -------------------------------------------------------------------------

    def content(self, key: int) -> str:
        """The redacted content of segment ``key``, read back by offset (``KeyError``: gone)."""
        with self._lock:
            self._ensure_open()
            return self._content(key)

    def segment(self, key: int) -> SegmentInfo:
        """Metadata of segment ``key`` without file access (``KeyError`` if not live)."""
        with self._lock:
            self._ensure_open()
            return self._idx.info[key]

    def get(self, key: int) -> Segment:
        """Segment ``key`` with its content (``KeyError`` if not live)."""
        with self._lock:
            i = self.segment(key)
            content = self._content(key)
        return Segment.of(i, content)

    def key_of(self, segment_id: str) -> int | None:
        """The key of a live segment by its id, or ``None``."""
        with self._lock:
            self._ensure_open()
            return self._idx.key_of(segment_id)

    def __len__(self) -> int:
        with self._lock:
            self.refresh()
            return len(self._idx)

    def segments(self) -> Iterator[Segment]:
        """Every live segment in file order; contents are read one at a time."""
        with self._lock:
            self.refresh()
            keys = sorted(self._idx.info, key=self._idx.loc.__getitem__)
        for key in keys:
            with contextlib.suppress(KeyError):  # evicted meanwhile
                yield self.get(key)

    def keys_for_session(self, session_id: str) -> list[int]:
        """Keys of one session's live segments, in file order."""
        session_id = validate_session_id(session_id)
        with self._lock:
            self.refresh()
            return sorted(self._idx.by_session.get(session_id, ()))

    def visible_keys(
        self, session_id: str | None = None, *, cross_session: bool = False
    ) -> frozenset[int] | None:
        """The keys a search may return, after a refresh and age eviction.

        Args:
            session_id: The searching session (default: the store's ``session_id``).
            cross_session: See every session's segments.

        Returns:
            ``None`` (no filter) with ``cross_session``, else that session's keys.
        """
        with self._lock:
            self.refresh()
            self._evict()
            if cross_session:
                return None
            sid = session_id if session_id is not None else self._session_id
            if sid is None:
                raise StoreError("visible_keys needs a session_id: the store has no default one")
            return frozenset(self._idx.by_session.get(validate_session_id(sid), ()))

    def allowed(
        self, session_id: str | None = None, *, cross_session: bool = False
    ) -> Callable[[int], bool]:
        """A key predicate (for ``BM25Index.top_k``) deciding as :meth:`visible_keys` does."""
        keys = self.visible_keys(session_id, cross_session=cross_session)
        return self._idx.info.__contains__ if keys is None else keys.__contains__

    @property
    def bm25(self) -> BM25Index:
        """The keyword index over live segments (same keys as everywhere here)."""
        with self._lock:
            self._ensure_open()
            return self._idx.bm25

    @property
    def vectors(self) -> VectorIndex:
        """The vector index over live segments."""
        with self._lock:
            self._ensure_open()
            return self._idx.vectors

    @property
    def episodes(self) -> EpisodeIndex:
        """Neighbour links (per session, file order) for :func:`hybrid_search`."""
        with self._lock:
            self._ensure_open()
            return self._idx.episodes

    @property
    def embedder(self) -> Embedder:
        """The embedder of the segments; queries must use the same one."""
        return self._embedder

    @property
    def lock(self) -> threading.RLock:
        """The store's lock: hold it while scoring with the indexes if other threads add."""
        return self._lock

    @property
    def store_dir(self) -> Path:
        """The resolved store directory."""
        return self._dir

    def stats(self) -> dict[str, Any]:
        """Counts and health of the store (refreshes first)."""
        with self._lock:
            self.refresh()
            size = self._vfile.path.stat().st_size if self._vfile.path.exists() else 0
            return {
                "segments": len(self._idx),
                "sessions": len(self._idx.by_session),
                "torn_lines": self._torn,
                "skipped_lines": self._skipped,
                "superseded_lines": self._idx.superseded,
                "dead_lines": self._file_lines - len(self._idx),
                "vectors_rebuilt": self._vectors_rebuilt,
                "evicted": self._evicted_before + self._idx.evicted,
                "compactions": self._compactions,
                "embedder": self._vfile.identity[0],
                "fallback_reason": getattr(self._embedder, "fallback_reason", None),
                "file_bytes": self._known_size,
                "vector_bytes": size,
            }

    def open(self) -> RawStore:
        """Load now rather than at first use; returns the store."""
        with self._lock:
            self._ensure_open()
        return self

    def close(self) -> None:
        """Release the files and the in-memory state; a later use reopens lazily.

        First saves ``bm25.cache`` if many segments are missing from it (faster next open).
        """
        with self._lock:
            if self._opened and self._ident is not None:
                self._save_terms()
            self._reset()

    def __enter__(self) -> RawStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
