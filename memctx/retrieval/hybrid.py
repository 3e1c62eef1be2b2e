"""Hybrid search: vector + BM25 fusion, context smoothing and decay; the one fusion in memctx.

Both searches of memctx rank with :func:`hybrid_search` and differ only in what they pass:

- **Archived segments** (:func:`memctx.store.search_store`, recall and ``memory_search``):
  :data:`DEFAULT_PARAMS`: 0.7 vector + 0.3 BM25 over the best 500 of each ranking, neighbour
  smoothing and the episode boost through the store's :class:`EpisodeIndex`, decay by each
  segment's timestamp (off by default, see below).
- **Memory files** (:class:`memctx.store.MemoryFiles`, seed 003): the weights of
  ``memorySearch.query.hybrid`` (vector only when ``enabled`` is false), every chunk a
  candidate (``candidates=None``: a workspace holds hundreds of chunks, not 20,000), no
  episodes (chunks of a file are not a conversation), and with ``temporalDecay`` a half-life
  on the date in a daily log's name, evergreen files (``MEMORY.md``, undated topic files)
  never decayed.

The seed's score is ``0.7 * cosine + 0.3 * bm25`` times a time decay. Measured on LoCoMo
(see the README and ``make bench``), two additions recover far more evidence than any
re-weighting of those two channels, for hash and transformer embeddings alike and in every
conversation, so they are on by default for archived segments:

- **Neighbour smoothing.** A message is often only understandable with the one before it (a
  question and its answer, a tool call and its output). Each candidate gains
  ``neighbour_weight`` times the better base score of its two neighbours in the same episode.
- **Episode boost.** Facts cluster: the messages of one working episode answer the same
  question. Each candidate gains ``episode_weight`` times the best base score in its episode.

An *episode* is a run of consecutive segments of one session whose timestamps are at most
``episode_gap_seconds`` apart (one LoCoMo session; one stretch of work in a coding session).

Scores: BM25 is max-normalised per query (the best match scores 1, documents without a
query term 0); cosine is clipped at 0 (a negative cosine carries no evidence).
``base = vector_weight * cos + text_weight * bm25``,
``score = (base + a * neighbours + b * episode) / (1 + a + b)``, so scores stay in [0, 1],
then multiplied by the decay (:func:`decay_factor`): ``decay ** (age / decay_unit_seconds)``
and, if set, ``0.5 ** (age / half_life)``, the age being ``now`` minus the document's
timestamp. Documents whose timestamp is ``None`` (evergreen) never decay.

Decay is off by default for archived segments, a measured decision: on LoCoMo, whose
questions are about any point of a months-long past, the seed's 0.995 per hour drops evidence
recall at 2,000 tokens from 78% to 14% (a week-old message weighs 0.43, a month-old one
0.03), and even 0.995 per day costs 14 points. Superseded facts are the knowledge store's job
(``supersededBy``), not the clock's. :data:`SEED_PRESET` keeps the seed's values, and
``decay`` / ``decay_unit_seconds`` turn it back on.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from itertools import repeat
from typing import cast

import numpy as np

from memctx.text import tokenize

from .bm25 import BM25Index
from .embeddings import Embedder, embed_query
from .keys import DenseKeys, key_array
from .vector_index import VectorIndex

__all__ = [
    "DEFAULT_PARAMS",
    "SEED_PRESET",
    "EpisodeIndex",
    "ScoredKey",
    "SearchParams",
    "hybrid_search",
]


@dataclass(frozen=True)
class SearchParams:
    """Knobs of :func:`hybrid_search`; the defaults are the measured ones (README)."""

    vector_weight: float = 0.7
    text_weight: float = 0.3
    neighbour_weight: float = 0.5
    episode_weight: float = 0.5
    decay: float = 1.0
    decay_unit_seconds: float = 86_400.0
    half_life_days: float | None = None
    min_score: float = 0.0
    # How many of each ranking (vector, BM25) are fused; None: every document. 500: measured
    # on LoCoMo through on_context, 200 -> 500 lifts hash evidence recall 80.0 -> 82.2 %;
    # 1,000 adds nothing.
    candidates: int | None = 500


DEFAULT_PARAMS = SearchParams()
# The seed's values, kept for comparison: no smoothing, no episode boost, 0.995 per hour.
SEED_PRESET = SearchParams(
    neighbour_weight=0.0, episode_weight=0.0, decay=0.995, decay_unit_seconds=3600.0
)


@dataclass(frozen=True, slots=True)
class ScoredKey:
    key: int
    score: float
    vector: float  # clipped cosine
    text: float  # max-normalised BM25


class EpisodeIndex:
    """Which segments are neighbours: insertion order within a session, split at time gaps."""

    def __init__(self, episode_gap_seconds: float = 3600.0) -> None:
        self.gap = episode_gap_seconds
        self._prev: dict[int, int] = {}
        self._next: dict[int, int] = {}
        self._episode: dict[int, int] = {}
        self._last: dict[str, tuple[int, float]] = {}  # session -> (last key, its timestamp)
        self._count = 0
        # The same links as arrays indexed by key (-1: none) for the bulk look-ups of a
        # search: after a 30 MB matrix product, hundreds of dict look-ups miss the cache.
        self._dense_prev, self._dense_next, self._dense_episode = (
            DenseKeys(),
            DenseKeys(),
            DenseKeys(),
        )

    def add(self, key: int, session_id: str, timestamp: float) -> None:
        last = self._last.get(session_id)
        if last is not None and last[0] in self._episode and abs(timestamp - last[1]) <= self.gap:
            self._prev[key] = last[0]
            self._next[last[0]] = key
            self._episode[key] = self._episode[last[0]]
        else:
            self._count += 1
            self._episode[key] = self._count
        self._last[session_id] = (key, timestamp)
        live = len(self._episode)
        self._dense_prev.set_one(key, self._prev.get(key, -1), live)
        self._dense_episode.set_one(key, self._episode[key], live)
        if key in self._prev:
            self._dense_next.set_one(self._prev[key], key, live)

    def remove(self, key: int) -> None:
        before, after = self._prev.pop(key, None), self._next.pop(key, None)
        if before is not None:
            if after is not None:
                self._next[before] = after
            else:
                self._next.pop(before, None)
        if after is not None:
            if before is not None:
                self._prev[after] = before
            else:
                self._prev.pop(after, None)
        self._episode.pop(key, None)
        live = len(self._episode)
        for dense in (self._dense_prev, self._dense_next, self._dense_episode):
            dense.set_one(key, -1, live)
        if before is not None:
            self._dense_next.set_one(before, -1 if after is None else after, live)
        if after is not None:
            self._dense_prev.set_one(after, -1 if before is None else before, live)

    def neighbours(self, key: int) -> tuple[int | None, int | None]:
        return self._prev.get(key), self._next.get(key)

    def neighbours_of(self, keys: Iterable[int]) -> tuple[list[int | None], list[int | None]]:
        """:meth:`neighbours` of many keys at once: (all previous, all next), in ``keys`` order."""
        keys = list(keys)
        arr = key_array(keys)
        before, after = self._dense_prev.find(arr), self._dense_next.find(arr)
        if before is None or after is None:
            return list(map(self._prev.get, keys)), list(map(self._next.get, keys))
        return _none_for_negative(before), _none_for_negative(after)

    def episodes_of(self, keys: Iterable[int]) -> list[int]:
        """:meth:`episode` of many keys at once, with -1 for "none"."""
        keys = list(keys)
        found = self._dense_episode.find(key_array(keys))
        if found is None:
            return list(map(self._episode.get, keys, repeat(-1)))
        out: list[int] = found.tolist()
        return out

    def episode(self, key: int) -> int | None:
        return self._episode.get(key)


def _none_for_negative(values: np.ndarray) -> list[int | None]:
    return [None if v < 0 else v for v in values.tolist()]


def decay_factor(age: float, params: SearchParams) -> float:
    """The score multiplier of a document ``age`` seconds old (a negative age counts as 0)."""
    factor = 1.0
    if params.decay < 1.0:
        factor *= params.decay ** (max(age, 0.0) / params.decay_unit_seconds)
    if params.half_life_days:
        factor *= 0.5 ** (max(age, 0.0) / (params.half_life_days * 86_400.0))
    return factor


def hybrid_search(
    query: str,
    *,
    bm25: BM25Index,
    vectors: VectorIndex,
    embedder: Embedder,
    episodes: EpisodeIndex | None = None,
    timestamp_of: Callable[[int], float | None] = lambda _key: None,
    now: float | None = None,
    allowed: Collection[int] | None = None,
    params: SearchParams = DEFAULT_PARAMS,
    limit: int = 10,
) -> list[ScoredKey]:
    """Rank archived segments for ``query``; best first, at most ``limit``.

    Args:
        query: The search text (a question, the last user messages).
        bm25: Keyword index over the segments' tokens.
        vectors: Embedding index over the same keys.
        embedder: Embeds the query (the same model that embedded the segments).
        episodes: Neighbour structure; ``None`` disables smoothing and the episode boost.
        timestamp_of: A document's timestamp (epoch seconds) or ``None`` for evergreen:
            with ``now`` and the rates in ``params``, the decay (:func:`decay_factor`).
        now: Reference time for decay; ``None`` disables decay.
        allowed: Keys the caller may see (e.g. its own session); ``None`` for all.
        params: Weights, candidate pool and decay rates (:class:`SearchParams`).
        limit: Results wanted.
    """
    if not query.strip() or limit <= 0 or len(vectors) == 0:
        return []
    q_tokens = tokenize(query)
    # Scored once, read three ways (best, top pool, candidates) without a dict over every
    # matching document: a common word matches most of a 20,000-segment store.
    text = bm25.query(q_tokens) if params.text_weight > 0 else None
    q_vec = embed_query(embedder, query)
    pool = len(vectors) if params.candidates is None else params.candidates
    similarity = vectors.query(q_vec, allowed)  # one product, read twice (top, candidates)
    candidates = {k for k, _ in similarity.top(pool)}
    if text is not None:
        candidates.update(k for k, _ in text.top(pool, allowed))
    smoothing = episodes is not None and bool(params.neighbour_weight or params.episode_weight)
    # Keys to score: the candidates first (position i = cand_list[i]), then the neighbours
    # that are not candidates themselves (smoothing needs their base scores). Order does not
    # change any result: the final order is by (score, key).
    cand_list = list(candidates)
    before: list[int | None] = []
    after: list[int | None] = []
    extra: list[int] = []
    if smoothing and episodes is not None:
        before, after = episodes.neighbours_of(cand_list)
        near: set[int | None] = set(before)
        near.update(after)
        near.discard(None)
        near.difference_update(candidates)
        extra = [k for k in near if k is not None and (allowed is None or k in allowed)]
    keys = cand_list + extra
    if not keys:
        return []
    vec = np.maximum(similarity.of(keys).astype(np.float64), 0.0)
    txt = text.normalized(keys) if text is not None else np.zeros(len(keys))
    base = params.vector_weight * vec + params.text_weight * txt
    value = base[: len(cand_list)]
    if smoothing and episodes is not None:
        a, b = params.neighbour_weight, params.episode_weight
        pos = dict(zip(keys, range(len(keys)), strict=True))
        value = value + (
            a * _best_neighbour(before, after, pos, base)
            + b * _episode_best(episodes, keys, base)[: len(cand_list)]
        )
        scale = 1.0 + (a + b)  # in this order: the rounding of the formula as documented
    else:
        scale = 1.0
    scores = value / scale
    if now is not None:
        stamps = map(timestamp_of, cand_list)
        factors = [1.0 if t is None else decay_factor(now - t, params) for t in stamps]
        scores = scores * np.array(factors)
    ok = np.flatnonzero((scores >= params.min_score) & ~np.isnan(scores))
    key_arr = np.array(cand_list, dtype=np.int64)[ok]
    order = ok[np.lexsort((key_arr, -scores[ok]))[:limit]]
    return [ScoredKey(cand_list[i], float(scores[i]), float(vec[i]), float(txt[i])) for i in order]


def _best_neighbour(
    before: list[int | None], after: list[int | None], pos: dict[int, int], base: np.ndarray
) -> np.ndarray:
    """Per candidate, the better base score of its two neighbours (``before[i]``,
    ``after[i]``) among the scored keys (``pos``); 0.0 without any."""
    # -inf marks "no neighbour", so that a lone neighbour's score is taken as it is.
    padded = np.append(base, -np.inf)
    none = len(base)
    # None (no neighbour) is not a key, so it falls through to ``none`` too.
    find = cast(Callable[[int | None, int], int], pos.get)
    prev = np.fromiter(map(find, before, repeat(none)), np.intp, len(before))
    nxt = np.fromiter(map(find, after, repeat(none)), np.intp, len(after))
    near: np.ndarray = np.maximum(padded[prev], padded[nxt])
    near[np.isneginf(near)] = 0.0
    return near


def _episode_best(episodes: EpisodeIndex, keys: list[int], base: np.ndarray) -> np.ndarray:
    """Per key, the best base score among ``keys`` of its episode (floored at 0.0)."""
    ep = np.array(episodes.episodes_of(keys), dtype=np.int64)
    # Group by sorting: a maximum per run of equal episode ids, spread back over the run.
    order = np.argsort(ep, kind="stable")
    sorted_ep = ep[order]
    starts = np.flatnonzero(np.r_[True, sorted_ep[1:] != sorted_ep[:-1]])
    best = np.maximum(np.maximum.reduceat(base[order], starts), 0.0)
    out = np.empty(len(keys))
    out[order] = np.repeat(best, np.diff(np.r_[starts, len(keys)]))
    out[ep < 0] = 0.0  # no episode: no boost
    return out
