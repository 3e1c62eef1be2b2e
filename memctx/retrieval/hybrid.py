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

- **Speaker prior.** In a conversation between named participants, a question about one of
  them ("What did Caroline research?") is answered by what that one said: on LoCoMo, 97 %
  of the evidence of questions naming one speaker is that speaker's. When the query names
  some but not all of the candidates' speakers, another speaker's message keeps
  ``1 - speaker_prior`` of its score (its neighbours' credit included: the question that
  drew an answer still ranks, below the answer). Who said a message is then the prior's
  business, not the embedding's: with the prior on, the query is embedded without the names
  of the speakers the store knows (``speaker_names``, as written: capitalised; two or more
  of them, as the prior needs; a segment's vector has none either, as the raw store embeds
  the words said alone). A name pulls a sentence embedding toward everything its
  speaker said, whatever it is about; left out, the vector matches what the question asks,
  and a question that credits one speaker with another's words still finds them by their
  content. BM25 keeps the names. Messages
  without a speaker (tool outputs, unnamed turns) are left as they are, so a coding session
  without names is unaffected.

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

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat

import numpy as np

from memctx.text import tokenize

from .bm25 import BM25Index
from .embeddings import Embedder, embed_query
from .keys import BoolArray, DenseKeys, IntArray, in_sorted, key_array, union_keys, unique_keys
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
    # Chosen by leave-one-conversation-out on LoCoMo (python -m memctx.bench.locomo.loo,
    # 5 x 5 grid of neighbour and episode weights): 0.75 is the choice for every held-out
    # conversation with either embedder (0.5 before). The neighbour weight stays 0.5: hash
    # chooses it everywhere, the transformer 0.25.
    episode_weight: float = 0.75
    decay: float = 1.0
    decay_unit_seconds: float = 86_400.0
    half_life_days: float | None = None
    min_score: float = 0.0
    # How many of each ranking (vector, BM25) are fused; None: every document. 500: measured
    # on LoCoMo through on_context, 200 -> 500 lifts hash evidence recall 80.0 -> 82.2 %;
    # 1,000 adds nothing.
    candidates: int | None = 500
    # Line coverage (memctx.retrieval.coverage) for line-structured outputs among the best
    # coverage_pool hits; the callers that know which hits those are apply it (the raw
    # store: tool outputs). Measured on the generated suites (masking-recall x hash, three
    # seeds): 0.2 lifts pooled recall 87.8 -> 89.1 %; 0.4, or a pool of 200, adds nothing.
    coverage_weight: float = 0.2
    coverage_pool: int = 100
    # Speaker prior (module docstring). Chosen by leave-one-conversation-out on LoCoMo
    # through on_context (python -m memctx.bench.locomo.loo --speaker); see docs/results.md.
    speaker_prior: float = 0.3


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
        before, has_before, after, has_after = self.neighbour_keys(key_array(list(keys)))
        return _none_where_absent(before, has_before), _none_where_absent(after, has_after)

    def neighbour_keys(self, keys: IntArray) -> tuple[IntArray, BoolArray, IntArray, BoolArray]:
        """:meth:`neighbours` of many keys as arrays, for hybrid search:
        ``(previous, has_previous, next, has_next)``; a key without that neighbour has
        ``False`` in the mask (and an arbitrary value in the key array)."""
        before, after = self._dense_prev.find(keys), self._dense_next.find(keys)
        if before is not None and after is not None:
            return before, before >= 0, after, after >= 0
        listed = keys.tolist()  # sparse keys (negative or far apart): the dicts answer
        prev_keys, has_prev = _key_and_mask(list(map(self._prev.get, listed)))
        next_keys, has_next = _key_and_mask(list(map(self._next.get, listed)))
        return prev_keys, has_prev, next_keys, has_next

    def episodes_of(self, keys: Iterable[int]) -> list[int]:
        """:meth:`episode` of many keys at once, with -1 for "none"."""
        out: list[int] = self.episode_ids(key_array(list(keys))).tolist()
        return out

    def episode_ids(self, keys: IntArray) -> IntArray:
        """:meth:`episodes_of` as an int64 array (episode ids start at 1; -1: none)."""
        found = self._dense_episode.find(keys)
        if found is None:
            listed = keys.tolist()
            return np.fromiter(map(self._episode.get, listed, repeat(-1)), np.int64, len(listed))
        return found

    def episode(self, key: int) -> int | None:
        return self._episode.get(key)


def _none_where_absent(keys: IntArray, present: BoolArray) -> list[int | None]:
    return [k if ok else None for k, ok in zip(keys.tolist(), present.tolist(), strict=True)]


def _key_and_mask(found: list[int | None]) -> tuple[IntArray, BoolArray]:
    keys = np.fromiter((0 if k is None else k for k in found), np.int64, len(found))
    present = np.fromiter((k is not None for k in found), np.bool_, len(found))
    return keys, present


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
    exclude: Collection[int] = (),
    speakers_of: Callable[[list[int]], list[str | None]] | None = None,
    speaker_names: Collection[str] = (),
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
        exclude: Keys never returned (the caller's context holds them). They are still
            scored, as neighbours and episode members of the others: the ranking of the
            rest is the same as without ``exclude``, with these left out.
        speakers_of: Who said each of a list of keys (``None``: no one named), for the
            speaker prior; ``None`` disables it.
        speaker_names: The speakers the searched segments may have: with the speaker prior
            on and two or more of them, the query is embedded without their names (module
            docstring).
    """
    if not query.strip() or limit <= 0 or len(vectors) == 0:
        return []
    q_tokens = tokenize(query)
    # Scored once, read three ways (best, top pool, candidates) without a dict over every
    # matching document: a common word matches most of a 20,000-segment store.
    text = bm25.query(q_tokens) if params.text_weight > 0 else None
    prior = speakers_of is not None and params.speaker_prior > 0.0
    # Names leave the vector only where the prior can tell speakers apart (two or more): an
    # agent whose one assistant is named "Claude" keeps "Claude" in its query.
    named = prior and len(speaker_names) > 1
    q_vec = embed_query(embedder, query_without_names(query, speaker_names) if named else query)
    pool = len(vectors) if params.candidates is None else params.candidates
    similarity = vectors.query(q_vec, allowed)  # one product, read twice (top, candidates)
    # Keys as sorted int64 arrays from here on: a few thousand keys per search went through
    # sets, dicts and lists of pairs, which cost more than the scoring. The order of the keys
    # changes no result: every score is computed per key, and the final order is by
    # (score, key).
    cand = similarity.top_keys(pool)
    cand = union_keys(cand, text.top_keys(pool, allowed)) if text is not None else unique_keys(cand)
    smoothing = episodes is not None and bool(params.neighbour_weight or params.episode_weight)
    # Keys to score: the candidates first (position i = cand[i]), then the neighbours that
    # are not candidates themselves (smoothing needs their base scores).
    extra = cand[:0]
    if smoothing and episodes is not None:
        before, has_before, after, has_after = episodes.neighbour_keys(cand)
        near = union_keys(before[has_before], after[has_after])
        extra = near[~in_sorted(near, cand)]
        if allowed is not None and len(extra):
            listed = extra.tolist()
            extra = extra[np.fromiter(map(allowed.__contains__, listed), np.bool_, len(listed))]
    keys = np.concatenate((cand, extra))
    if not len(keys):
        return []
    vec = np.maximum(similarity.of(keys).astype(np.float64), 0.0)
    txt = text.normalized(keys) if text is not None else np.zeros(len(keys))
    base = params.vector_weight * vec + params.text_weight * txt
    value = base[: len(cand)]
    if smoothing and episodes is not None:
        a, b = params.neighbour_weight, params.episode_weight
        near_best = _best_neighbour(keys, (before, has_before), (after, has_after), base)
        value = value + (a * near_best + b * _episode_best(episodes, keys, base)[: len(cand)])
        scale = 1.0 + (a + b)  # in this order: the rounding of the formula as documented
    else:
        scale = 1.0
    scores = value / scale
    if prior and speakers_of is not None:
        scores = scores * _speaker_factors(q_tokens, speakers_of(cand.tolist()), params)
    if now is not None:
        stamps = map(timestamp_of, cand.tolist())
        factors = [1.0 if t is None else decay_factor(now - t, params) for t in stamps]
        scores = scores * np.array(factors)
    shown = (scores >= params.min_score) & ~np.isnan(scores)
    if len(exclude):
        shown &= ~in_sorted(cand, np.sort(key_array(exclude)))
    ok = np.flatnonzero(shown)
    order = ok[np.lexsort((cand[ok], -scores[ok]))[:limit]]
    # Python values in bulk (``tolist``): a numpy scalar per field and hit costs more than
    # the rest of the search when a caller asks for hundreds of hits.
    rows = zip(
        cand[order].tolist(),
        scores[order].tolist(),
        vec[order].tolist(),
        txt[order].tolist(),
        strict=True,
    )
    return [ScoredKey(key, score, v, t) for key, score, v, t in rows]


def _speaker_factors(
    q_tokens: list[str], speakers: list[str | None], params: SearchParams
) -> np.ndarray | float:
    """Per candidate, 1 or ``1 - speaker_prior``: said by a speaker the query does not name,
    when it names another of them."""
    present = set(speakers)
    present.discard(None)
    if len(present) < 2:
        return 1.0
    asked = set(q_tokens)
    named = {s for s in present if s is not None and asked.intersection(_name_tokens(s))}
    if not named or len(named) == len(present):
        return 1.0
    by_other = np.fromiter(
        (s is not None and s not in named for s in speakers), np.bool_, len(speakers)
    )
    return np.where(by_other, 1.0 - params.speaker_prior, 1.0)


def query_without_names(query: str, names: Collection[str]) -> str:
    """``query`` without the words of ``names`` written as a name is (capitalised; a
    possessive ``'s`` goes with it): "What did Caroline's mother say?" gives "What did
    mother say?". The query itself when no word would be left."""
    if not names:
        return query
    words = _name_words(frozenset(names))
    dropped = 0

    def kept(match: re.Match[str]) -> str:
        nonlocal dropped
        word = match.group()
        if word[0].isupper() and _POSSESSIVE.sub("", word).rstrip(".").lower() in words:
            dropped += 1
            return ""
        return word

    left = _WORD.sub(kept, query)
    if not dropped:
        return query  # as it was, whitespace included
    left = " ".join(left.split())
    return left if _WORD.search(left) else query


_WORD = re.compile(r"[^\W\d_][\w.'’-]*")
_POSSESSIVE = re.compile(r"['’]s?$")


@lru_cache(maxsize=64)
def _name_words(names: frozenset[str]) -> frozenset[str]:
    return frozenset(w.rstrip(".").lower() for name in names for w in name.split())


@lru_cache(maxsize=1024)
def _name_tokens(name: str) -> frozenset[str]:
    """A speaker's name as query tokens (stemmed, as the query is; a name that is a
    stopword, "Will", names no one)."""
    return frozenset(tokenize(name))


def _best_neighbour(
    keys: IntArray,
    before: tuple[IntArray, BoolArray],
    after: tuple[IntArray, BoolArray],
    base: np.ndarray,
) -> np.ndarray:
    """Per candidate, the better base score of its two neighbours (``before``, ``after``:
    each a key array and a mask of who has one) among the scored ``keys``; 0.0 without any."""
    # -inf marks "no neighbour", so that a lone neighbour's score is taken as it is.
    padded = np.append(base, -np.inf)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    near: np.ndarray = np.maximum(
        padded[_positions(ordered, order, *before)], padded[_positions(ordered, order, *after)]
    )
    near[np.isneginf(near)] = 0.0
    return near


def _positions(ordered: IntArray, order: IntArray, wanted: IntArray, has: BoolArray) -> IntArray:
    """Position in the scored keys (``ordered`` = keys[order]) of each wanted neighbour;
    ``len(ordered)`` (the -inf pad) where there is none or it is not scored."""
    at = np.minimum(np.searchsorted(ordered, wanted), len(ordered) - 1)
    found = has & (ordered[at] == wanted)
    out: IntArray = np.where(found, order[at], len(ordered))
    return out


def _episode_best(episodes: EpisodeIndex, keys: IntArray, base: np.ndarray) -> np.ndarray:
    """Per key, the best base score among ``keys`` of its episode (floored at 0.0)."""
    ep = episodes.episode_ids(keys)
    # Group by sorting: a maximum per run of equal episode ids, spread back over the run.
    order = np.argsort(ep, kind="stable")
    sorted_ep = ep[order]
    starts = np.flatnonzero(np.r_[True, sorted_ep[1:] != sorted_ep[:-1]])
    best = np.maximum(np.maximum.reduceat(base[order], starts), 0.0)
    out = np.empty(len(keys))
    out[order] = np.repeat(best, np.diff(np.r_[starts, len(keys)]))
    out[ep < 0] = 0.0  # no episode: no boost
    return out
