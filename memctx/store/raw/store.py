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
  not tokenize them again (:mod:`memctx.store.raw.term_cache`). A pure cache: written at close,
  after a load or compaction when stale, ignored when stale or damaged.

Protocol between processes:

- Writers hold the lock. Under it a writer first reads what others appended (:meth:`refresh`),
  dedups against that, writes its batch with ONE ``os.write`` on an ``O_APPEND`` descriptor,
  then appends the vectors. Lines never interleave and dedup holds across processes.
- Readers need no lock: they stream complete lines from the last size they read. An
  unterminated tail is looked at again under the lock (writers finish before releasing it);
  if it is still unterminated it is a torn line from a crash: skipped and counted, never
  fatal. The next writer puts a newline first, so the fragment cannot swallow a record.
- Compaction writes a new file and ``os.replace``-s it (:func:`memctx.fs.atomic_write`);
  other processes see the new inode at their next refresh and reload from the new
  ``vectors.bin`` without re-embedding.

Loading streams ``segments.jsonl`` (the bulk without the lock, the rest under it), takes the
vectors from ``vectors.bin`` or embeds the segments again, and follows appends of other
processes (:meth:`RawStore.refresh`); a file replaced, truncated or rewritten in place is
loaded again from the start.

Vectors: ``vectors.bin`` is used where its vectors are usable, and the segments' text is
embedded again where they are not. What counts as a doubt, and why any doubt means
"rebuild", is in :mod:`memctx.store.raw.vectors`. An unusable vector (NaN, infinity, all
zeros, an absurd norm) is counted once in ``bad_vectors`` and only its segment is embedded
again; the file is rewritten without it at once (or, if the directory is read-only, at the
next write). A vector the embedder itself gives as unusable (say an all-zero row) is its own
output, not damage: it is neither counted nor reported.

Writing (:meth:`RawStore.add_many`): prepare (validate, redact, tag:
:func:`memctx.store.raw.io.prepare_segment`), dedup, cap one message at its quota
(:mod:`memctx.store.raw.quota`), embed outside the locks, then append and index under them.

Compaction: eviction and superseded records leave dead lines in ``segments.jsonl`` (and dead
rows in ``vectors.bin``). Once they pass ~10% of the live ones both files are rewritten with
the live segments only: about 0.1 s at 20,000 segments, so it must never run per add. By
default an add that crosses the threshold compacts at once; an owner with a background
thread (the runtime) sets :attr:`RawStore.auto_compact` off and calls
:meth:`RawStore.maybe_compact` there instead, so that the context hook never pays for a
rewrite.

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
import gc
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import numpy as np

from memctx.errors import StoreError, VmemError
from memctx.fs import atomic_write, fsync_dir
from memctx.retrieval import BM25Index, Embedder, EpisodeIndex, VectorIndex
from memctx.text import Redactor

from ..files import open_regular, os_error, resolve_store_dir
from ..vmem import bad_vector_rows
from .index import SegmentIndex, age_cutoff
from .io import (
    LOCK_FILE,
    SEGMENTS_FILE,
    ChecksumError,
    Prepared,
    Segment,
    SegmentInfo,
    append_error,
    check_inside,
    child_path,
    decode_info,
    decode_record,
    dedup_digest,
    fd_ident,
    file_size,
    iter_lines,
    path_ident,
    prepare_segment,
    read_runs,
    rollback,
    validate_session_id,
    write_all,
)
from .lock import LockTimeout, StoreLock
from .quota import message_key, message_quota, plan_batch
from .records import search_text, vector_text
from .term_cache import STALE_MIN, TERMS_FILE, TermCache, read_term_cache, write_term_cache
from .term_counter import TermCounter
from .vectors import VectorFile

__all__ = ["NewSegment", "RawStore", "Segment", "SegmentInfo", "validate_session_id"]

logger = logging.getLogger("memctx")

NewSegment = tuple[str, str, str] | dict[str, Any]
"""An item of :meth:`RawStore.add_many`: ``(session_id, role, content)`` or a mapping with
``session_id``, ``role``, ``content`` and optional ``timestamp``, ``turn`` and ``name``."""

_DEFAULT_REDACTOR: Final = Redactor()
_LOCK_TIMEOUT: Final = 60.0  # seconds; writers hold the lock for milliseconds
# Contents read back by offset stay cached (least recently used out first): the context
# hook's recall reads ~32 candidates every turn, and most were candidates on recent turns
# too. Over 40 turns of make bench's 2,000-message session at 20,000 segments, 1,176 of
# 1,280 reads decoded their line with 256 entries, 190 with 4,096. Bounded in characters
# as well, for stores of large segments (~4 MB of ASCII text at most).
_CONTENT_CACHE: Final = 4096
_CONTENT_CACHE_CHARS: Final = 4_000_000
# Lines indexed per BM25 batch while loading: large enough for numpy to pay off, small
# enough that the batch's tokens and sort arrays stay a few MB (4,096 loads ~5% faster
# without bm25.cache but leaves the process ~10 MB larger for good: freed temporaries
# fragment the heap).
_INDEX_BATCH: Final = 2048
_TAIL_SIG: Final = 32  # last bytes read, compared to notice a file rewritten in place
_EMBED_BATCH: Final = 256
_COMPACT_RATIO: Final = 0.10  # compact when dead lines pass 10% of live ones...
_COMPACT_MIN_DEAD: Final = 64  # ...and this many (a tiny store would rewrite on every add)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Hold the cyclic garbage collector off while a store loads.

    A load creates a few hundred thousand containers that all stay alive, so the full
    collections their allocations trigger scan everything and free nothing: ~5% of a
    reopen. Reference counting still frees what is dropped; cycles wait until the end.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class RawStore:
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

    Attributes:
        auto_compact: Whether an add compacts when due (the default). Off, dead lines pile
            up until :meth:`maybe_compact` or :meth:`compact` runs; reads are unaffected.

    Raises:
        StoreError: An invalid argument; the message names it and what is allowed.
    """

    auto_compact: bool = True

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        *,
        embedder: Embedder,
        session_id: str | None = None,
        max_segments: int = 20_000,
        eviction_days: float | None = 90,
        redactor: Redactor | None = _DEFAULT_REDACTOR,
        durable: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(max_segments, bool) or not isinstance(max_segments, int) or max_segments < 1:
            raise StoreError(f"max_segments must be a positive integer, got {max_segments!r}")
        days = eviction_days
        if days is not None and (
            isinstance(days, bool) or not isinstance(days, int | float) or not days > 0
        ):
            raise StoreError(f"eviction_days must be a positive number or None, got {days!r}")
        self._dir = resolve_store_dir(store_dir)
        self._seg_path = child_path(self._dir, SEGMENTS_FILE)
        self._terms_path = child_path(self._dir, TERMS_FILE)
        self._flock = StoreLock(child_path(self._dir, LOCK_FILE), timeout=_LOCK_TIMEOUT)
        self._vfile = VectorFile(self._dir, embedder, durable=durable)
        self._session_id = None if session_id is None else validate_session_id(session_id)
        self._embedder = embedder
        self._max = max_segments
        self._max_age = None if days is None else float(days) * 86_400.0
        self._redactor = redactor
        self._durable = durable
        self._clock = clock
        self._lock = threading.RLock()
        self._flock_depth = 0
        self._rfd: int | None = None  # read descriptor: the inode our offsets refer to
        self._wfd: int | None = None  # O_APPEND descriptor, reopened when the inode changes
        self._vectors_rebuilt: str | None = None
        # Opening is what may switch vectors.bin to this embedder (a whole rebuild); a later
        # reload (another process compacted the store) never takes it from another one.
        self._loaded_before = False
        self._bad_vectors = 0  # unusable vectors found in vectors.bin and re-embedded
        self._compactions = 0
        self._compact_backoff = 0
        self._evicted_before = 0
        self._quota = message_quota(self._max)
        self._unwritten = 0  # chunks of over-quota messages never written (quota.plan_batch)
        self._idx = SegmentIndex(self._vfile.dim, self._max + 256, self._quota)
        self._reset()

    def _reset(self) -> None:
        """Forget the in-memory state (not the files); keys of known ids survive."""
        for fd in (self._rfd, self._wfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._rfd = self._wfd = None
        self._evicted_before += self._idx.evicted
        self._idx = SegmentIndex(self._vfile.dim, self._max + 256, self._quota, self._idx)
        self._vfile.reset()
        self._cache: OrderedDict[int, str] = OrderedDict()
        self._cached_chars = 0
        self._opened = False
        self._ident: tuple[int, int] | None = None
        self._known_size = 0
        self._tail_sig = b""
        self._file_lines = 0
        self._torn = self._skipped = self._crc_bad = 0
        self._uncached = 0  # live segments indexed since bm25.cache was last written

    def _evict(self) -> None:
        for key in self._idx.evict(age_cutoff(self._clock(), self._max_age), self._max):
            self._cached_chars -= len(self._cache.pop(key, ""))

    # -- reading the files ---------------------------------------------------------------

    @contextlib.contextmanager
    def _file_locked(self, *, create: bool) -> Iterator[None]:
        """Hold the inter-process lock (re-entrant); ``create`` makes the directory first."""
        if self._flock_depth:
            yield
            return
        if create and not os.path.isdir(self._dir):  # a stat: cheaper than mkdir's EEXIST
            try:
                self._dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise os_error(self._dir, exc, "create the store directory") from exc
        try:
            self._flock.acquire()
        except LockTimeout as exc:
            raise StoreError(f"timed out after {_LOCK_TIMEOUT:.0f}s: {exc}") from exc
        self._flock_depth = 1
        try:
            yield
        finally:
            self._flock_depth = 0
            self._flock.release()

    def _scan(self, start: int, cache: TermCache | None = None) -> tuple[int, int, list[int]]:
        """Index complete lines from ``start``: (end of the last one, tail fragment, keys).

        A line whose digest is in ``cache`` takes its term counts from there instead of
        being tokenized (see :mod:`memctx.store.raw.term_cache`); the others are counted in bulk
        (:mod:`memctx.store.raw.term_counter`). A read error is a StoreError (nothing else here
        touches a file).
        """
        try:
            return self._scan_lines(start, cache)
        except OSError as exc:
            raise os_error(self._seg_path, exc, "read") from exc

    def _scan_lines(self, start: int, cache: TermCache | None) -> tuple[int, int, list[int]]:
        assert self._rfd is not None
        keys: list[int] = []
        batch: list[tuple[SegmentInfo, tuple[int, int], bytes, str | int]] = []
        counts = cache.counts if cache is not None else None
        cached = cache.row_of if cache is not None else {}
        counter = TermCounter()  # shared by the batches: chunks repeat across the file
        pos, fragment = start, 0
        bad_before = self._crc_bad
        for offset, end, raw in iter_lines(self._rfd, start):
            if not raw.endswith(b"\n"):
                fragment = end - offset
                break
            pos = end
            if raw.isspace():
                continue  # the newline a writer puts after a torn fragment
            self._file_lines += 1
            try:
                info, content = decode_info(raw)  # JSON allows the newline: no copy
            except ChecksumError:
                self._crc_bad += 1  # changed since it was written: never served
                continue
            except ValueError:
                self._skipped += 1
                continue
            digest = dedup_digest(info.session_id, info.role, content)
            doc: str | int | None = cached.get(digest)
            if doc is None:
                # Counted in bulk by the index (TermCounter), with the date it is searched by.
                doc = search_text(content, info.timestamp, info.name)
                self._uncached += 1
            batch.append((info, (offset, end - offset - 1), digest, doc))
            if len(batch) == _INDEX_BATCH:
                keys += self._idx.add_many(batch, counts, counter)
                batch = []
        keys += self._idx.add_many(batch, counts, counter)
        if self._crc_bad > bad_before:
            logger.warning(
                "%s: %d records do not match their checksum (changed on disk since they were "
                "written); they are not served and go at the next compaction",
                self._seg_path,
                self._crc_bad - bad_before,
            )
        return pos, fragment, keys

    def _save_terms(self, stale_share: float = 0.1) -> None:
        """Rewrite ``bm25.cache`` once enough live segments are missing from it: at least
        :data:`STALE_MIN` and ``stale_share`` of them.

        Best effort: the file only makes the next open faster, so a failure is logged.
        """
        if self._uncached < max(STALE_MIN, int(len(self._idx) * stale_share)):
            return
        keys = list(self._idx.info)
        try:
            check_inside(self._dir, self._terms_path)
            write_term_cache(self._terms_path, self._idx.bm25, keys, self._idx.digests(keys))
        except (OSError, StoreError) as exc:
            logger.info(
                "cannot write %s (the next open tokenizes again): %s", self._terms_path, exc
            )
            return
        self._uncached = 0

    def _finish_scan(self, end: int, fragment: int) -> None:
        """Advance past what was read; a fragment still there under the lock is torn."""
        assert self._rfd is not None
        self._known_size = end
        if fragment and self._flock_depth:
            self._torn += 1
            self._known_size = end + fragment
        n = min(_TAIL_SIG, self._known_size)
        self._tail_sig = os.pread(self._rfd, n, self._known_size - n)

    def _open_read(self) -> bool:
        """Open ``segments.jsonl`` for reading; False if it does not exist.

        Raises:
            StoreError: It cannot be read, or it is not a regular file (a directory or a FIFO
                in its place: refused without blocking, and left as it is).
        """
        check_inside(self._dir, self._seg_path)
        try:
            fd = open_regular(self._seg_path, os.O_RDONLY, doing="read")
        except FileNotFoundError:
            return False
        self._rfd, self._ident = fd, fd_ident(fd)
        return True

    def _load(self) -> None:
        """(Re)build the in-memory state: stream the lines, then the vectors under the lock."""
        with _gc_paused():
            self._load_files()
        self._loaded_before = True

    def _load_files(self) -> None:
        for _attempt in range(3):
            self._reset()
            self._opened = True
            if not self._open_read():
                return
            cache = None
            with contextlib.suppress(StoreError):  # a symlink out of the store: not read
                check_inside(self._dir, self._terms_path)
                cache = read_term_cache(self._terms_path)
            end, fragment, keys = self._scan(0, cache)  # the bulk, without blocking writers
            with contextlib.ExitStack() as stack:
                try:
                    stack.enter_context(self._file_locked(create=False))
                    can_write = True
                except OSError as exc:  # no lock file possible (read-only): nobody writes
                    logger.debug("reading %s without the lock: %s", self._dir, exc)
                    self._flock_depth += 1  # so that a fragment counts as torn
                    stack.callback(setattr, self, "_flock_depth", 0)
                    can_write = False
                if can_write and path_ident(self._seg_path) != self._ident:
                    continue  # compacted by another process meanwhile: start over
                if fragment or os.fstat(self._rfd).st_size > end:  # type: ignore[arg-type]
                    end, fragment, more = self._scan(end, cache)
                    keys += more
                del cache  # its arrays are as large as the postings: free them now
                self._finish_scan(end, fragment)
                self._evict()  # first: evicted segments need no vector
                self._attach_all_vectors(keys, can_write=can_write)
            if can_write:
                self._save_terms()  # outside the lock: writers need not wait for a cache
            return
        raise StoreError(f"{self._seg_path} keeps being replaced while it is read; try again")

    def _ensure_open(self) -> None:
        if not self._opened:
            self._load()

    def refresh(self) -> int:
        """Index segments other processes appended since the last look.

        Returns:
            How many new segments were indexed (after one ``stat`` when nothing changed).

        Raises:
            StoreError: The file cannot be read.
        """
        with self._lock:
            if not self._opened:
                self._load()
                return 0
            try:
                st: os.stat_result | None = os.stat(self._seg_path)
            except FileNotFoundError:
                st = None
            except OSError as exc:
                raise os_error(self._seg_path, exc, "read") from exc
            if st is None and self._ident is None:
                return 0
            if (
                st is None
                or (st.st_dev, st.st_ino) != self._ident
                or st.st_size < self._known_size
                or not self._tail_matches()
            ):
                before = set(self._idx.info)
                self._load()  # replaced (compaction), truncated or rewritten: start over
                return len(set(self._idx.info) - before)
            if st.st_size == self._known_size:
                return 0
            end, fragment, keys = self._scan(self._known_size)
            self._finish_scan(end, fragment)
            self._attach_new_vectors(keys)
            self._evict()
            if fragment and not self._flock_depth:  # a write in progress, or a torn line?
                with contextlib.suppress(OSError, StoreError), self._file_locked(create=False):
                    return len(keys) + self.refresh()
            return len(keys)

    def _tail_matches(self) -> bool:
        assert self._rfd is not None
        n = len(self._tail_sig)
        return n == 0 or os.pread(self._rfd, n, self._known_size - n) == self._tail_sig

    def _content(self, key: int) -> str:
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        offset, length = self._idx.loc[key]
        assert self._rfd is not None
        try:
            seg = decode_record(os.pread(self._rfd, length, offset))
        except OSError as exc:
            raise os_error(self._seg_path, exc, "read") from exc
        except ChecksumError:
            # Changed on disk after it was loaded: never served; gone as if evicted.
            self._crc_bad += 1
            self._idx.drop(key)
            logger.warning("%s: a record no longer matches its checksum; dropped", self._seg_path)
            raise KeyError(key) from None
        except ValueError as exc:
            raise StoreError(f"{self._seg_path} changed under the store ({exc})") from exc
        if seg.id != self._idx.info[key].id:
            raise StoreError(f"{self._seg_path} changed under the store; call refresh()")
        self._cache[key] = seg.content
        self._cached_chars += len(seg.content)
        while len(self._cache) > _CONTENT_CACHE or self._cached_chars > _CONTENT_CACHE_CHARS:
            self._cached_chars -= len(self._cache.popitem(last=False)[1])
        return seg.content

    # -- vectors: from vectors.bin, or embedded again -------------------------------------

    def _embed_keys(self, keys: list[int]) -> set[int]:
        """Embed the segments ``keys`` again; return those whose fresh vector is itself
        unusable (the embedder's own output: not damage)."""
        own: set[int] = set()
        for i in range(0, len(keys), _EMBED_BATCH):
            batch = keys[i : i + _EMBED_BATCH]
            matrix = self._vfile.embed([vector_text(self._content(k)) for k in batch])
            own.update(k for k, bad in zip(batch, bad_vector_rows(matrix), strict=True) if bad)
            self._idx.vectors.add_many(batch, matrix)
        return own

    def _count_bad(self, bad: set[int], own: set[int]) -> int:
        """Count (and say once) the unusable vectors of ``bad`` that are damage."""
        damaged = len(bad - own)
        if damaged:
            self._bad_vectors += damaged
            logger.warning(
                "%s: %d vectors were not usable (NaN, infinite, all zeros or an absurd norm); "
                "their segments were embedded again and the file is rewritten without them",
                self._vfile.path,
                damaged,
            )
        return damaged

    def _attach_all_vectors(self, keys: list[int], *, can_write: bool) -> None:
        """Vectors of a fresh load from ``vectors.bin``; rebuild (and report once) if off."""
        keys = [k for k in dict.fromkeys(keys) if k in self._idx.info]  # a repeated id: once
        if not keys and not self._vfile.path.exists():
            return
        vectors = self._idx.vectors

        def sink(positions: list[int], matrix: np.ndarray) -> None:
            vectors.add_many([keys[p] for p in positions], matrix)

        state = self._vfile.load(self._idx.ids(keys), sink)
        taken = self._vfile.foreign is not None and self._loaded_before
        missing = [k for k, row in zip(keys, state.rows, strict=True) if row is None]
        if state.reason is None:
            if can_write:
                self._vfile.confirm()
            return
        own = self._embed_keys(missing)
        bad = {keys[p] for p in state.bad}
        damaged = self._count_bad(bad, own)
        if state.appendable and not damaged and set(missing) <= own:
            if can_write:  # only the embedder's own unusable rows: nothing to repair
                self._vfile.confirm()
            return
        self._vectors_rebuilt = state.reason
        logger.warning(
            "%s: %s; re-embedded %d segments", self._vfile.path, state.reason, len(missing)
        )
        if taken:
            # Another writer's embedder took the file since this store opened: ours stay
            # in memory, and appends are refused (VectorFile.check_owner) rather than mixed.
            self._vfile.dirty = True
            return
        try:
            if not can_write:
                raise OSError("the store directory is not writable")
            if state.appendable and not damaged:
                # The embedder's own unusable rows are in the file already: not appended again.
                fresh = [k for k in missing if k not in own]
                matrix = np.stack([self._idx.vectors.get(k) for k in fresh])
                self._vfile.append(self._idx.ids(fresh), matrix, self._idx.snapshot_vectors)
            else:  # opening is what may switch the file to this embedder
                self._vfile.rewrite(*self._idx.snapshot_vectors(), take_over=True)
        except (OSError, StoreError, ValueError) as exc:
            self._vfile.dirty = True  # the next add rewrites it whole
            logger.warning("cannot rewrite %s (%s); rebuilt at next open", self._vfile.path, exc)

    def _attach_new_vectors(self, keys: list[int]) -> None:
        """Vectors of segments other processes appended: from the end of ``vectors.bin``."""
        keys = [k for k in dict.fromkeys(keys) if k in self._idx.info]  # a repeated id: once
        tail, unusable = self._vfile.tail(self._idx.ids(keys))
        have = [k for k in keys if self._idx.info[k].id in tail]
        if have:
            self._idx.vectors.add_many(have, np.stack([tail[self._idx.info[k].id] for k in have]))
        missing = [k for k in keys if self._idx.info[k].id not in tail]
        own = self._embed_keys(missing)
        self._count_bad({k for k in missing if self._idx.info[k].id in unusable}, own)

    # -- writing ---------------------------------------------------------------------------

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
        matrix = self._vfile.embed([vector_text(s.content) for s in segments])
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

    # -- compaction ------------------------------------------------------------------------

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
        with _gc_paused():
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
            atomic_write(self._seg_path, lines, sync_dir=True)
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

    # -- public accessors ------------------------------------------------------------------

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

    def key_for(self, segment_id: str) -> int | None:
        """The key of segment ``segment_id`` whether it is live or not (``None``: this store
        never indexed it). A segment id keeps its key for the life of the store object,
        across reloads and compactions, and no other segment ever gets it: a caller may keep
        it (the runtime keeps the keys of what it archived, to leave them out of a search)."""
        with self._lock:
            return self._idx.key_for(segment_id)

    def keys_of(self, segment_ids: Iterable[str]) -> list[int]:
        """The keys of those of ``segment_ids`` that are live segments (one lock for all)."""
        with self._lock:
            self._ensure_open()
            return self._idx.keys_of(segment_ids)

    def speakers(self, keys: Iterable[int]) -> list[str | None]:
        """Who said each of ``keys`` (:attr:`SegmentInfo.speaker`; ``None`` for a key not
        live), one lock for all: the search's speaker prior asks for hundreds."""
        with self._lock:
            self._ensure_open()
            info = self._idx.info
            return [i.speaker if (i := info.get(k)) is not None else None for k in keys]

    def speaker_names(self) -> frozenset[str]:
        """Every speaker of a live segment (:attr:`SegmentInfo.speaker`): the names the
        search leaves out of its vector query (:func:`memctx.retrieval.hybrid_search`)."""
        with self._lock:
            self._ensure_open()
            return frozenset(self._idx.speakers)

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
