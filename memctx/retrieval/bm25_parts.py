"""Building blocks of :class:`~memctx.retrieval.bm25.BM25Index`: its vocabulary, the
per-query result (:class:`QueryScores`) and documents given as term counts
(:class:`TermCounts`).

Kept apart from the index so that ``bm25.py`` stays about the formula and the index itself.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import repeat
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from .keys import DenseKeys, key_array

__all__ = [
    "FloatArray",
    "IntArray",
    "QueryScores",
    "TermCounts",
    "Vocabulary",
    "grown",
    "ranges",
    "ranked_prefix",
    "stable_order",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class Vocabulary(dict[str, int]):
    """term -> term id; looking up a new term gives it an id (a freed one first)."""

    def __init__(self) -> None:
        super().__init__()
        self.terms: list[str | None] = []  # id -> term (None: free)
        self.free: list[int] = []

    def __missing__(self, term: str) -> int:
        # Runs only for new terms; known ones are a C-level look-up, which is what lets
        # ``map(vocab.__getitem__, tokens)`` turn a whole batch into ids quickly.
        if self.free:
            tid = self.free.pop()
            self.terms[tid] = term
        else:
            tid = len(self.terms)
            self.terms.append(term)
        self[term] = tid
        return tid

    def ids_of(self, names: list[str]) -> IntArray:
        """Ids of the distinct ``names``, as looking them up one by one would give them.

        A load brings tens of thousands of new terms at once; when no freed id waits to be
        reused, new ones get the next ids in order, without a Python call each.
        """
        ids = np.fromiter(map(self.get, names, repeat(-1)), np.int64, len(names))
        new = np.flatnonzero(ids < 0)
        if not len(new):
            return ids
        if self.free:
            ids[new] = np.fromiter(map(self.__getitem__, names), np.int64, len(names))[new]
            return ids
        start = len(self.terms)
        fresh = [names[i] for i in new.tolist()]
        self.terms.extend(fresh)
        self.update(zip(fresh, range(start, start + len(fresh)), strict=True))
        ids[new] = np.arange(start, start + len(fresh))
        return ids

    def release(self, tid: int) -> None:
        """Forget the term of ``tid`` (no live document has it) and reuse the id later."""
        term = self.terms[tid]
        if term is not None:
            del self[term]
        self.terms[tid] = None
        self.free.append(tid)


def grown(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` with room for at least ``size`` entries (doubling; new entries zero)."""
    if size <= len(array):
        return array
    out = np.zeros(max(size, 2 * len(array)), dtype=array.dtype)
    out[: len(array)] = array
    return out


def stable_order(ids: np.ndarray, bound: int) -> IntArray:
    """``np.argsort(ids, kind="stable")`` for non-negative ints below ``bound`` (< 2**32).

    numpy sorts 16-bit integers stably with a radix sort, ~5x faster than the merge sort it
    uses for wider ones, so wider ids are sorted as two 16-bit halves, low half first (an
    LSD radix sort: the second stable pass keeps the first pass's order among equals).
    """
    if bound <= 1 << 16:
        return np.argsort(ids.astype(np.uint16), kind="stable")
    if bound > 1 << 32:
        return np.argsort(ids, kind="stable")
    low = np.argsort((ids & 0xFFFF).astype(np.uint16), kind="stable")
    high = np.argsort((ids[low] >> 16).astype(np.uint16), kind="stable")
    order: IntArray = low[high]
    return order


def ranges(starts: IntArray, sizes: IntArray) -> IntArray:
    """The indices ``starts[i] .. starts[i] + sizes[i] - 1`` of every ``i``, concatenated."""
    total = int(sizes.sum())
    # Position j of range i is starts[i] + (j - where range i begins in the output).
    offsets = np.repeat(starts - np.cumsum(sizes) + sizes, sizes)
    out: IntArray = offsets + np.arange(total, dtype=np.int64)
    return out


class TermCounts(NamedTuple):
    """Documents as term counts (what :meth:`BM25Index.add_counts` takes).

    Document ``i`` has ``lengths[i]`` tokens and ``sizes[i]`` distinct terms; its
    ``(term, tf)`` pairs follow those of documents ``0 .. i-1`` in ``term`` and ``tf``, where
    ``term`` holds indices into ``terms``. The arrays hold non-negative integers of any
    integer dtype (a loaded cache keeps its uint32 columns as they are, without a copy).
    """

    terms: list[str]
    lengths: np.ndarray
    sizes: np.ndarray
    term: np.ndarray
    tf: np.ndarray

    def take(self, rows: Sequence[int] | IntArray) -> TermCounts:
        """The documents ``rows``, in that order (same ``terms``)."""
        rows = np.asarray(rows, dtype=np.int64)
        sizes = self.sizes[rows].astype(np.int64)
        starts = np.concatenate(([0], np.cumsum(self.sizes, dtype=np.int64)))[rows]
        pairs = ranges(starts, sizes)
        return TermCounts(self.terms, self.lengths[rows], sizes, self.term[pairs], self.tf[pairs])


class QueryScores:
    """BM25 scores of one query over an index, as the index stood when it was scored.

    Made by :meth:`BM25Index.query` for hybrid search, which needs the best score, the top
    matches and the scores of arbitrary candidates without building a dict over every match
    (a common word matches most of a 20,000-document store). Read it before the index changes.

    Attributes:
        best: The best raw score over all live documents (0.0 when nothing matches).
    """

    __slots__ = ("_acc", "_dense", "_hits", "_slot_key", "_slot_of", "best")

    def __init__(
        self,
        acc: FloatArray,
        hits: IntArray,
        slot_of: dict[int, int],
        slot_key: IntArray,
        dense: DenseKeys | None = None,
    ) -> None:
        self._acc, self._hits, self._slot_of, self._slot_key = acc, hits, slot_of, slot_key
        self._dense = dense
        self.best = float(acc[hits].max()) if len(hits) else 0.0

    def _slots(self, keys: Collection[int] | np.ndarray) -> IntArray:
        """Slots of ``keys``, -1 for a key not in the index."""
        found = self._dense.find(key_array(keys)) if self._dense is not None else None
        if found is not None:
            return found
        return np.fromiter(map(self._slot_of.get, keys, repeat(-1)), np.int64, len(keys))

    def __len__(self) -> int:
        """Number of matching documents."""
        return len(self._hits)

    def normalized(self, keys: Sequence[int] | IntArray) -> FloatArray:
        """Score / best of each key, as :meth:`BM25Index.normalized_scores` gives it.

        Keys that match no query term, or are not in the index, get 0.0.
        """
        out = np.zeros(len(keys), dtype=np.float64)
        if self.best > 0 and len(keys):
            slots = self._slots(keys)
            known = slots >= 0
            out[known] = self._acc[slots[known]] / self.best
        return out

    def top(self, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        """The ``k`` best matches among ``allowed`` keys as ``(key, score / best)``.

        Best first; equal scores keep index order (the order of
        :meth:`BM25Index.normalized_scores`), so the cut at ``k`` is deterministic.
        """
        slots, vals = self._ranked(k, allowed)
        keys = self._slot_key[slots].tolist()
        return list(zip(keys, (vals / self.best).tolist(), strict=True))

    def top_keys(self, k: int, allowed: Collection[int] | None = None) -> IntArray:
        """The keys of :meth:`top`, as an int64 array (no pair per key)."""
        keys: IntArray = self._slot_key[self._ranked(k, allowed)[0]]
        return keys

    def _ranked(self, k: int, allowed: Collection[int] | None) -> tuple[IntArray, FloatArray]:
        """Slots and raw scores of the ``k`` best matches among ``allowed``, in :meth:`top`
        order."""
        if k <= 0 or not len(self._hits):
            return self._hits[:0], self._acc[:0]
        if allowed is None:
            slots = self._hits
        else:
            wanted = self._slots(allowed)
            wanted = np.sort(wanted[wanted >= 0])
            slots = wanted[self._acc[wanted] > 0]  # live slots: every allowed key is live
        vals = self._acc[slots]
        if k < len(slots):
            threshold = np.partition(vals, len(vals) - k)[len(vals) - k]
            keep = np.flatnonzero(vals >= threshold)  # every tie with the k-th, for the order
            slots, vals = slots[keep], vals[keep]
        order = np.lexsort((slots, -vals))[:k]
        return slots[order], vals[order]


def ranked_prefix(keys: IntArray, vals: FloatArray, m: int) -> list[tuple[int, float]]:
    """The first ``m`` (key, score) pairs in (score desc, key asc) order."""
    if m < len(vals):
        # Keep every score tied with the m-th so the key tie-break sees all of them.
        threshold = np.partition(vals, len(vals) - m)[len(vals) - m]
        sel = np.flatnonzero(vals >= threshold)
        keys, vals = keys[sel], vals[sel]
    order = np.lexsort((keys, -vals))[:m]
    return list(zip(keys[order].tolist(), vals[order].tolist(), strict=True))
