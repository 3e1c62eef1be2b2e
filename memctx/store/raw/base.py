"""Engine of the raw store: the in-memory state kept in step with the files.

:class:`RawStoreBase` loads ``segments.jsonl`` by streaming it, takes ``vectors.bin`` or
rebuilds it, follows appends of other processes (:meth:`RawStoreBase.refresh`) and reads
contents back by offset. :class:`memctx.store.raw.store.RawStore` adds writing, compaction and the
public accessors; the module docstring there describes the files and the protocol.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Final

from memctx.errors import StoreError
from memctx.retrieval import Embedder
from memctx.text import Redactor

from ..files import O_CLOEXEC, open_regular, os_error, resolve_store_dir
from .counts import TermCounter
from .index import SegmentIndex, age_cutoff
from .io import (
    LOCK_FILE,
    SEGMENTS_FILE,
    ChecksumError,
    SegmentInfo,
    check_inside,
    child_path,
    decode_info,
    decode_record,
    dedup_digest,
    fd_ident,
    iter_lines,
    path_ident,
    validate_session_id,
)
from .lock import LockTimeout, StoreLock
from .quota import message_quota
from .records import search_text
from .terms import STALE_MIN, TERMS_FILE, TermCache, read_term_cache, write_term_cache
from .vectors import VectorFile

__all__ = ["DEFAULT_REDACTOR", "O_CLOEXEC", "RawStoreBase", "gc_paused"]

logger = logging.getLogger("memctx")

DEFAULT_REDACTOR: Final = Redactor()
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


class RawStoreBase:
    """The raw store's state and reading side; see :class:`memctx.store.raw.store.RawStore`."""

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        *,
        embedder: Embedder,
        session_id: str | None = None,
        max_segments: int = 20_000,
        eviction_days: float | None = 90,
        redactor: Redactor | None = DEFAULT_REDACTOR,
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
        being tokenized (see :mod:`memctx.store.raw.terms`); the others are counted in bulk
        (:mod:`memctx.store.raw.counts`). A read error is a StoreError (nothing else here
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
        with gc_paused():
            self._load_files()

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

    # -- vectors (memctx.store.raw.attach) -------------------------------------------------

    def _attach_all_vectors(self, keys: list[int], *, can_write: bool) -> None:
        raise NotImplementedError  # AttachingStore

    def _attach_new_vectors(self, keys: list[int]) -> None:
        raise NotImplementedError  # AttachingStore

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


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
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
