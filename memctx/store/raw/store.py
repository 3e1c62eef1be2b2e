"""The raw store (the seed's WarmStore): every archived message, redacted, searchable.

Files in ``store_dir`` (nothing is created before the first add; reading never creates):

- ``segments.jsonl``: one JSON record per segment, each sealed with a checksum (format:
  :mod:`memctx.store.raw.records`).
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
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from memctx.errors import StoreError
from memctx.retrieval import BM25Index, Embedder, EpisodeIndex, VectorIndex

from .append import AppendingStore, NewSegment
from .io import Segment, SegmentInfo, file_size, validate_session_id

__all__ = ["NewSegment", "RawStore", "Segment", "SegmentInfo", "validate_session_id"]

logger = logging.getLogger("memctx")


class RawStore(AppendingStore):
    """Archived segments of every session: ``segments.jsonl`` + ``vectors.bin`` + indexes.

    Args:
        store_dir: The store's directory (:func:`memctx.store.files.resolve_store_dir`:
            ``~`` expanded, absolute; created on the first add).
        embedder: Embeds segments (and, in searches, queries): ``name``, ``dim``, ``embed``.
        session_id: Default session of :meth:`visible_keys` and :meth:`allowed`.
        max_segments: Capacity; beyond it the oldest segments (by timestamp) of the largest
            session are evicted (:meth:`memctx.store.raw.index.SegmentIndex.evict`), and one
            message keeps at most ``max(1,000, 5 %)`` of it (:mod:`memctx.store.raw.quota`).
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

    def keys_of(self, segment_ids: Iterable[str]) -> list[int]:
        """The keys of those of ``segment_ids`` that are live segments (one lock for all)."""
        with self._lock:
            self._ensure_open()
            return [key for key in map(self._idx.key_of, segment_ids) if key is not None]

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
            size = file_size(self._vfile.path) or 0
            return {
                "segments": len(self._idx),
                "sessions": len(self._idx.by_session),
                "torn_lines": self._torn,
                "skipped_lines": self._skipped,
                "checksum_mismatches": self._crc_bad,
                "superseded_lines": self._idx.superseded,
                "dead_lines": self._file_lines - len(self._idx),
                "vectors_rebuilt": self._vectors_rebuilt,
                "bad_vectors": self._bad_vectors,
                "evicted": self._evicted_before + self._idx.evicted,
                "message_chunks_dropped": self._unwritten + self._idx.capped,
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
