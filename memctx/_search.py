"""Hybrid search over archived segments: vector + BM25, context smoothing, time decay.

The seed's score is ``0.7 * cosine + 0.3 * bm25`` times a time decay. Measured on LoCoMo
(see the README and ``make bench``), two additions recover far more evidence than any
re-weighting of those two channels, for hash and transformer embeddings alike and in every
conversation, so they are on by default:

- **Neighbour smoothing.** A message is often only understandable with the one before it (a
  question and its answer, a tool call and its output). Each candidate gains
  ``neighbour_weight`` times the better base score of its two neighbours in the same episode.
- **Episode boost.** Facts cluster: the messages of one working episode answer the same
  question. Each candidate gains ``episode_weight`` times the best base score in its episode.

An *episode* is a run of consecutive segments of one session whose timestamps are at most
``episode_gap_seconds`` apart (one LoCoMo session; one stretch of work in a coding session).

Scores: BM25 is max-normalised per query (the best match scores 1, documents without a
query term 0); cosine is clipped at 0. ``base = vector_weight * cos + text_weight * bm25``,
``score = (base + a * neighbours + b * episode) / (1 + a + b)``, so scores stay in [0, 1],
then multiplied by the decay ``decay ** (age / decay_unit_seconds)`` and, if set,
``0.5 ** (age / half_life)``. Evergreen segments (``timestamp`` of ``None``) never decay.

Decay is off by default, a measured decision: on LoCoMo, whose questions are about any point
of a months-long past, the seed's 0.995 per hour drops evidence recall at 2,000 tokens from
78% to 14% (a week-old message weighs 0.43, a month-old one 0.03), and even 0.995 per day
costs 14 points. Superseded facts are the knowledge store's job (``supersededBy``), not the
clock's. :data:`SEED_PRESET` keeps the seed's values, and ``decay`` / ``decay_unit_seconds``
turn it back on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np

from memctx._bm25 import BM25Index
from memctx._embeddings import Embedder
from memctx._text import tokenize
from memctx._vector_index import VectorIndex

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
    candidates: int = 200


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

    def neighbours(self, key: int) -> tuple[int | None, int | None]:
        return self._prev.get(key), self._next.get(key)

    def episode(self, key: int) -> int | None:
        return self._episode.get(key)


def _decay(age: float, params: SearchParams) -> float:
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
        timestamp_of: A segment's timestamp (epoch seconds) or ``None`` for evergreen.
        now: Reference time for decay; ``None`` disables decay.
        allowed: Keys the caller may see (e.g. its own session); ``None`` for all.
        params: Weights and decay (:class:`SearchParams`).
        limit: Results wanted.
    """
    if not query.strip() or limit <= 0 or len(vectors) == 0:
        return []
    q_tokens = tokenize(query)
    text_scores = bm25.normalized_scores(q_tokens) if params.text_weight > 0 else {}
    if allowed is not None:
        text_scores = {k: v for k, v in text_scores.items() if k in allowed}
    q_vec = embedder.embed([query])[0]
    pool = params.candidates
    candidates = {k for k, _ in vectors.top_k(q_vec, pool, allowed=allowed)}
    candidates.update(k for k, _ in sorted(text_scores.items(), key=lambda kv: -kv[1])[:pool])
    smoothing = episodes is not None and (params.neighbour_weight or params.episode_weight)
    every = set(candidates)
    if smoothing and episodes is not None:
        for key in candidates:
            every.update(n for n in episodes.neighbours(key) if n is not None)
        if allowed is not None:
            every = {k for k in every if k in allowed}
    keys = sorted(every)
    cosines = _cosines(vectors, keys, q_vec)
    base: dict[int, tuple[float, float, float]] = {}
    for key, cos in zip(keys, cosines, strict=True):
        text = text_scores.get(key, 0.0)
        vec = max(float(cos), 0.0)
        base[key] = (params.vector_weight * vec + params.text_weight * text, vec, text)
    best_in_episode: dict[int, float] = {}
    if smoothing and episodes is not None:
        for key, (value, _, _) in base.items():
            ep = episodes.episode(key)
            if ep is not None and value > best_in_episode.get(ep, 0.0):
                best_in_episode[ep] = value
    a, b = params.neighbour_weight, params.episode_weight
    scale = 1.0 + (a + b if smoothing else 0.0)
    results = []
    for key in candidates:
        value, vec, text = base[key]
        if smoothing and episodes is not None:
            near = [base[n][0] for n in episodes.neighbours(key) if n is not None and n in base]
            ep = episodes.episode(key)
            best = best_in_episode.get(ep, 0.0) if ep is not None else 0.0
            value += a * max(near, default=0.0) + b * best
        score = value / scale
        if now is not None:
            stamp = timestamp_of(key)
            if stamp is not None:
                score *= _decay(now - stamp, params)
        if score >= params.min_score and not math.isnan(score):
            results.append(ScoredKey(key, score, vec, text))
    results.sort(key=lambda r: (-r.score, r.key))
    return results[:limit]


def _cosines(vectors: VectorIndex, keys: list[int], query: np.ndarray) -> np.ndarray:
    if not keys:
        return np.zeros(0, dtype=np.float32)
    matrix = np.stack([vectors.get(k) for k in keys])
    return matrix @ query.astype(np.float32)
