"""The raw store's in-memory state: metadata, offsets, dedup, sessions, eviction, indexes.

Per live segment: its :class:`~memctx.store.raw.io.SegmentInfo` (no content), where its line
is in ``segments.jsonl``, its dedup digest, its BM25 document, its vector and its episode
links. Contents stay on disk and are read back by offset, so memory grows with the number of
segments and their vocabulary, not with the bytes of the file.

Keys are ints (what :class:`~memctx.retrieval.bm25.BM25Index` and
:class:`~memctx.retrieval.VectorIndex` take), handed out in file order, never reused, and
kept for a segment id across reloads so that keys a caller holds stay valid.

Not thread-safe: :class:`~memctx.store.raw.store.RawStore` serialises access with its lock.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from memctx.retrieval import BM25Index, EpisodeIndex, TermCounts, VectorIndex

from .io import SegmentInfo
from .quota import MessageRun
from .term_counter import TermCounter

__all__ = ["SegmentIndex", "age_cutoff"]


class SegmentIndex:
    """Live segments of a store and the indexes over them.

    Args:
        dim: Vector dimension.
        capacity: Vector rows to preallocate (``max_segments`` plus slack: the rows cost no
            memory until used, and a full store then never grows its matrix).
        quota: Segments one message may keep (:mod:`memctx.store.raw.quota`).
        previous: The index this one replaces on a reload: its keys are reused by segment id.
    """

    def __init__(
        self, dim: int, capacity: int, quota: int, previous: SegmentIndex | None = None
    ) -> None:
        self.info: dict[int, SegmentInfo] = {}
        self.loc: dict[int, tuple[int, int]] = {}  # key -> (offset, length without newline)
        self.bm25 = BM25Index()
        self.vectors = VectorIndex(dim, capacity=capacity)
        self.episodes = EpisodeIndex()
        self.by_session: dict[str, set[int]] = {}
        self.speakers: Counter[str] = Counter()  # live segments per speaker (SegmentInfo)
        self.superseded = 0
        self.evicted = 0
        self.capped = 0  # records set aside by their message's quota
        self.run = MessageRun(quota)
        self._digest_of: dict[int, bytes] = {}
        self._key_of_digest: dict[bytes, int] = {}
        self._key_of_id: dict[str, int] = {} if previous is None else previous._key_of_id
        self._next_key: int = 0 if previous is None else previous._next_key
        self._heap: list[tuple[float, int]] = []  # (timestamp, key): the age order
        # Built at the first capacity eviction and kept from then on (see _evict_fair): the
        # age order per session, and each session's standing (-size, its oldest segment),
        # pushed again whenever it changes, stale entries skipped when popped.
        self._session_heaps: dict[str, list[tuple[float, int]]] | None = None
        self._standings: list[tuple[int, float, int, str]] | None = None

    def __len__(self) -> int:
        return len(self.info)

    def has_digest(self, digest: bytes) -> bool:
        """Whether a live segment has this dedup digest."""
        return digest in self._key_of_digest

    def key_of(self, segment_id: str) -> int | None:
        """The key of a live segment by id."""
        key = self._key_of_id.get(segment_id)
        return key if key in self.info else None

    def key_for(self, segment_id: str) -> int | None:
        """The key ``segment_id`` has, live or not (``None``: never indexed)."""
        return self._key_of_id.get(segment_id)

    def keys_of(self, segment_ids: Iterable[str]) -> list[int]:
        """:meth:`key_of` of many ids, those that are live (a recall excludes ~900 a turn:
        the look-ups run in C, without a method call per id)."""
        live = self.info
        return [k for k in map(self._key_of_id.get, segment_ids) if k is not None and k in live]

    def ids(self, keys: Sequence[int]) -> list[str]:
        """Segment ids of ``keys``."""
        return [self.info[k].id for k in keys]

    def add(self, info: SegmentInfo, loc: tuple[int, int], digest: bytes, tokens: list[str]) -> int:
        """Index one segment (its vector is added by the caller, in batches); return its key.

        A segment with the digest or id of a live one replaces it: dedup runs under the file
        lock, so a repeat is only ever written after the first copy was evicted, and the later
        line is the live one.
        """
        key = self._add_meta(info, loc, digest)
        self.bm25.add(key, tokens)
        return key

    def add_many(
        self,
        records: Sequence[tuple[SegmentInfo, tuple[int, int], bytes, str | int]],
        counts: TermCounts | None = None,
        counter: TermCounter | None = None,
    ) -> list[int]:
        """:meth:`add` for each ``(info, loc, digest, doc)`` in turn, with BM25 in batches.

        ``doc`` is the segment's content, whose terms ``counter`` counts (a new one if not
        given), or its row in ``counts`` (saved term counts of the same content, see
        :mod:`memctx.store.raw.term_cache`).
        """
        keys = []
        text_of: dict[int, str] = {}
        row_of: dict[int, int] = {}
        counter = counter if counter is not None else TermCounter()
        for info, loc, digest, doc in records:
            key = self._add_meta(info, loc, digest)
            keys.append(key)
            # A key reused within the batch (same id again) keeps its later document; one
            # superseded within the batch is not live any more and is left out. The two
            # kinds are flushed in runs so that BM25 sees the documents in file order.
            if isinstance(doc, int):
                if text_of:
                    self._flush_texts(text_of, counter)
                row_of[key] = doc
            else:
                if row_of:
                    self._flush_rows(row_of, counts)
                text_of[key] = doc
        self._flush_texts(text_of, counter)
        self._flush_rows(row_of, counts)
        return keys

    def _flush_texts(self, text_of: dict[int, str], counter: TermCounter) -> None:
        live = [k for k in text_of if k in self.info]
        if live:
            self.bm25.add_counts(live, counter.counts([text_of[k] for k in live]))
        text_of.clear()

    def _flush_rows(self, row_of: dict[int, int], counts: TermCounts | None) -> None:
        live = [k for k in row_of if k in self.info]
        if live:
            assert counts is not None
            self.bm25.add_counts(live, counts.take([row_of[k] for k in live]))
        row_of.clear()

    def digests(self, keys: Sequence[int]) -> list[bytes]:
        """Dedup digests of live ``keys``."""
        return [self._digest_of[k] for k in keys]

    def _add_meta(self, info: SegmentInfo, loc: tuple[int, int], digest: bytes) -> int:
        """Everything :meth:`add` does but BM25."""
        for old in (self._key_of_digest.get(digest), self._key_of_id.get(info.id)):
            if old is not None and old in self.info:
                self.drop(old)
                self.superseded += 1
        key = self._key_of_id.get(info.id)
        if key is None or key in self.info:
            key = self._next_key
            self._next_key += 1
        self.info[key] = info
        self.loc[key] = loc
        self._digest_of[key] = digest
        self._key_of_digest[digest] = key
        self._key_of_id[info.id] = key
        self.by_session.setdefault(info.session_id, set()).add(key)
        if info.speaker is not None:
            self.speakers[info.speaker] += 1
        entry = (info.timestamp, key)
        heapq.heappush(self._heap, entry)
        if self._session_heaps is not None:
            heapq.heappush(self._session_heaps.setdefault(info.session_id, []), entry)
            self._stand(info.session_id)
        self.episodes.add(key, info.session_id, info.timestamp)
        over = self.run.add(info, key)
        if over is not None and over in self.info:
            self.drop(over)  # past its message's quota: the tail slides on
            self.capped += 1
        return key

    def drop(self, key: int, *, evicted: bool = False) -> None:
        """Remove a live segment from every structure."""
        info = self.info.pop(key)
        del self.loc[key]
        if info.speaker is not None:
            self.speakers[info.speaker] -= 1
            if not self.speakers[info.speaker]:
                del self.speakers[info.speaker]
        digest = self._digest_of.pop(key)
        if self._key_of_digest.get(digest) == key:
            del self._key_of_digest[digest]
        keys = self.by_session[info.session_id]
        keys.discard(key)
        if not keys:
            del self.by_session[info.session_id]
            if self._session_heaps is not None:
                self._session_heaps.pop(info.session_id, None)
        elif self._session_heaps is not None:
            self._stand(info.session_id)
        self.bm25.remove(key)
        self.vectors.discard(key)
        self.episodes.remove(key)
        self.evicted += evicted

    def evict(self, cutoff: float, max_segments: int) -> list[int]:
        """Evict segments older than ``cutoff``, then, beyond ``max_segments``, the oldest
        segments of the largest session.

        Age applies to every session alike (oldest first). Capacity is shared fairly: each
        segment over it is taken from the session with the most segments (ties: the one
        whose oldest segment is oldest), its oldest segment first, so a session's burst
        evicts its own past before anyone else's and a small session keeps its segments
        while a larger one exists. With one session this is plain oldest-first. Ties on the
        timestamp go by key (file order). Cheap when nothing is due: one look at the top of
        a heap and a length. Returns the evicted keys.
        """
        out = []
        heap = self._heap
        while heap:
            stamp, key = heap[0]
            info = self.info.get(key)
            if info is None or info.timestamp != stamp:
                heapq.heappop(heap)  # the entry of a key dropped meanwhile
            elif stamp < cutoff:
                heapq.heappop(heap)
                self.drop(key, evicted=True)
                out.append(key)
            else:
                break
        excess = len(self.info) - max_segments
        if excess > 0:
            out += self._evict_fair(excess)
        return out

    def _build_shares(self) -> None:
        """Build the per-session heaps and standings (at the first capacity eviction, and
        again when stale standings pile up)."""
        if self._session_heaps is None:
            heaps: dict[str, list[tuple[float, int]]] = {}
            for key, info in self.info.items():
                heaps.setdefault(info.session_id, []).append((info.timestamp, key))
            for heap in heaps.values():
                heapq.heapify(heap)
            self._session_heaps = heaps
        self._standings = []
        for sid in self.by_session:
            self._stand(sid)

    def _stand(self, session_id: str) -> None:
        """Record a live session's standing now: its size and its oldest segment."""
        assert self._standings is not None
        stamp, key = self._oldest(session_id)
        size = len(self.by_session[session_id])
        heapq.heappush(self._standings, (-size, stamp, key, session_id))

    def _oldest(self, session_id: str) -> tuple[float, int]:
        """``(timestamp, key)`` of a live session's oldest segment (stale entries popped)."""
        assert self._session_heaps is not None
        heap = self._session_heaps[session_id]
        while True:
            stamp, key = heap[0]
            info = self.info.get(key)
            if info is not None and info.timestamp == stamp and info.session_id == session_id:
                return stamp, key
            heapq.heappop(heap)

    def _evict_fair(self, excess: int) -> list[int]:
        """Evict ``excess`` segments, each the oldest of the then largest session.

        A few microseconds each: the standings are a heap kept up to date as segments come
        and go, so no eviction looks at every session.
        """
        standings = self._standings
        if standings is None or len(standings) > 2 * len(self.by_session) + 4096:
            self._build_shares()
        assert self._standings is not None and self._session_heaps is not None
        out = []
        while excess > 0 and self._standings:
            size, stamp, key, sid = heapq.heappop(self._standings)
            keys = self.by_session.get(sid)
            if not keys or len(keys) != -size or self._oldest(sid) != (stamp, key):
                continue  # a standing that changed since
            heapq.heappop(self._session_heaps[sid])  # its top is this key (see _oldest)
            self.drop(key, evicted=True)  # records the session's new standing
            out.append(key)
            excess -= 1
        return out

    def relocate(self, new_loc: dict[int, tuple[int, int]]) -> None:
        """Adopt the offsets of a compacted file (and drop stale heap entries)."""
        self.loc = new_loc
        self._heap = [(self.info[k].timestamp, k) for k in new_loc]
        heapq.heapify(self._heap)
        self._session_heaps = self._standings = None  # rebuilt, clean, when next needed

    def snapshot_vectors(self) -> tuple[list[str], np.ndarray]:
        """Ids and vectors of every live segment, in index row order (for a rewrite).

        The vectors are a read-only view, valid until the index changes: a rewrite writes
        them out at once, and a 30 MB copy would only raise the peak memory.
        """
        keys = self.vectors.keys().tolist()
        return self.ids(keys), self.vectors.vectors()


def age_cutoff(now: float, max_age: float | None) -> float:
    """The oldest timestamp kept at ``now`` (``-inf`` without an age limit)."""
    return -math.inf if max_age is None else now - max_age
