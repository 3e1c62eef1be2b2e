"""Hybrid search, memory_search and the cross-session guarantee."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.retrieval.bm25 import BM25Index
from memctx.retrieval.embeddings import HashEmbedder
from memctx.retrieval.hybrid import (
    DEFAULT_PARAMS,
    SEED_PRESET,
    EpisodeIndex,
    ScoredKey,
    SearchParams,
    decay_factor,
    hybrid_search,
    query_without_names,
)
from memctx.retrieval.vector_index import VectorIndex
from memctx.store.memory_search import MAX_LIMIT, memory_search, search_store
from memctx.store.raw.store import RawStore
from memctx.text.keywords import tokenize
from tests.strategies import examples

EMB = HashEmbedder()


def _random_documents(
    rng: random.Random, n: int, *, span: float
) -> tuple[list[str], list[str], list[float]]:
    """``n`` short texts of random words, their sessions ("a" or "b") and timestamps in
    order within ``span`` seconds."""
    texts = [" ".join(rng.choices(_WORDS, k=rng.randint(1, 8))) for _ in range(n)]
    sessions = [rng.choice("ab") for _ in range(n)]
    return texts, sessions, sorted(rng.uniform(0, span) for _ in range(n))


def _corpus(texts: list[str], sessions: list[str] | None = None, stamps: list[float] | None = None):
    bm25, vectors, episodes = BM25Index(), VectorIndex(EMB.dim), EpisodeIndex()
    matrix = EMB.embed(texts)
    for key, text in enumerate(texts):
        bm25.add(key, tokenize(text))
        vectors.add(key, matrix[key])
        episodes.add(
            key, (sessions or ["s"] * len(texts))[key], (stamps or [0.0] * len(texts))[key]
        )
    return bm25, vectors, episodes


def test_keyword_and_meaning_both_count() -> None:
    texts = [
        "we deploy the api to fly.io with docker",
        "the webhook signature check lives in src/payment/webhook.ts",
        "lunch was good today",
    ]
    bm25, vectors, episodes = _corpus(texts)
    hits = hybrid_search(
        "where is the webhook signature verified",
        bm25=bm25,
        vectors=vectors,
        embedder=EMB,
        episodes=episodes,
        limit=3,
    )
    assert hits[0].key == 1
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert hits == sorted(hits, key=lambda h: (-h.score, h.key))


def test_neighbour_smoothing_lifts_the_answer_after_a_matching_question() -> None:
    # The answer turn shares no word with the query; its neighbour (the question) does.
    texts = [
        "which database did you pick for the billing service?",
        "PostgreSQL, with a read replica",
        "unrelated chatter about weather",
        "more unrelated chatter about lunch",
    ]
    # The question and its answer are one episode; the chatter happened hours later.
    bm25, vectors, episodes = _corpus(texts, stamps=[0.0, 1.0, 90_000.0, 90_001.0])
    plain = SearchParams(neighbour_weight=0.0, episode_weight=0.0)
    query = "billing service database"

    def rank(params: SearchParams) -> list[int]:
        return [
            h.key
            for h in hybrid_search(
                query,
                bm25=bm25,
                vectors=vectors,
                embedder=EMB,
                episodes=episodes,
                params=params,
                limit=4,
            )
        ]

    assert rank(plain).index(1) > rank(SearchParams()).index(1)
    assert rank(SearchParams())[:2] == [0, 1]


def test_neighbours_never_cross_sessions_or_time_gaps() -> None:
    episodes = EpisodeIndex(episode_gap_seconds=60)
    episodes.add(0, "a", 0.0)
    episodes.add(1, "b", 1.0)
    episodes.add(2, "a", 2.0)
    episodes.add(3, "a", 500.0)
    assert episodes.neighbours(2) == (0, None)
    assert episodes.neighbours(1) == (None, None)
    assert episodes.episode(3) != episodes.episode(2)
    episodes.add(4, "a", 510.0)
    episodes.remove(3)
    assert episodes.neighbours(4) == (None, None)


def test_decay_prefers_recent_when_asked_and_never_when_evergreen() -> None:
    texts = ["port is 8080", "port is 8080 indeed"]
    bm25, vectors, _ = _corpus(texts, stamps=[0.0, 30 * 86_400.0])
    stamps = {0: 0.0, 1: 30 * 86_400.0}
    decayed = SearchParams(decay=0.9, neighbour_weight=0.0, episode_weight=0.0)
    hits = hybrid_search(
        "port 8080",
        bm25=bm25,
        vectors=vectors,
        embedder=EMB,
        params=decayed,
        timestamp_of=stamps.__getitem__,
        now=30 * 86_400.0,
        limit=2,
    )
    assert hits[0].key == 1 and hits[1].score < hits[0].score * 0.1
    evergreen = hybrid_search(
        "port 8080",
        bm25=bm25,
        vectors=vectors,
        embedder=EMB,
        params=decayed,
        timestamp_of=lambda _k: None,
        now=1e9,
        limit=2,
    )
    assert evergreen[0].score > 0.3
    assert SEED_PRESET.decay == 0.995 and SEED_PRESET.decay_unit_seconds == 3600.0


def test_min_score_and_empty_inputs() -> None:
    bm25, vectors, _ = _corpus(["alpha beta", "gamma delta"])
    assert hybrid_search("", bm25=bm25, vectors=vectors, embedder=EMB) == []
    high = SearchParams(min_score=0.99)
    assert hybrid_search("alpha", bm25=bm25, vectors=vectors, embedder=EMB, params=high) == []
    empty_vectors = VectorIndex(EMB.dim)
    assert hybrid_search("alpha", bm25=BM25Index(), vectors=empty_vectors, embedder=EMB) == []


def test_a_question_naming_one_speaker_prefers_what_that_speaker_said() -> None:
    # Both speak of the trip; the question asks about Melanie's.
    texts = [
        "the camping trip by the lake was great",  # Caroline's
        "our camping trip was great",  # Melanie's
        "a checklist for a trip",  # no speaker's: never discounted
    ]
    bm25, vectors, _ = _corpus(texts)
    speakers: list[str | None] = ["Caroline", "Melanie", None]
    params = DEFAULT_PARAMS

    def ranked(query: str, params: SearchParams = params, prior: bool = True):
        return hybrid_search(
            query,
            bm25=bm25,
            vectors=vectors,
            embedder=EMB,
            params=params,
            limit=3,
            speakers_of=(lambda keys: [speakers[k] for k in keys]) if prior else None,
        )

    question = "was the camping trip by the lake great, Melanie?"
    without = {h.key: h.score for h in ranked(question, prior=False)}
    assert without[0] > without[1]  # "lake" makes Caroline's the better match by words
    with_prior = ranked(question)
    assert with_prior[0].key == 1
    scores = {h.key: h.score for h in with_prior}
    other = 1.0 - params.speaker_prior
    assert scores[0] == pytest.approx(without[0] * other)
    assert scores[1] == pytest.approx(without[1]) and scores[2] == pytest.approx(without[2])
    # Naming both (or neither) is no preference; a prior of 0 is none either.
    for query, other_params in [
        ("was the camping trip by the lake great, Melanie and Caroline?", params),
        ("was the camping trip by the lake great?", params),
        (question, SearchParams(speaker_prior=0.0)),
    ]:
        assert ranked(query, other_params) == ranked(query, other_params, prior=False)


def test_with_the_prior_on_the_query_is_embedded_without_the_speakers_names() -> None:
    """A name would pull the query's vector toward everything its speaker said; the prior
    decides who said what, BM25 still reads the name."""
    texts = ["Caroline: the camping trip was great", "Melanie: our camping trip"]
    bm25, vectors, _ = _corpus(texts)
    speakers = ["Caroline", "Melanie"]

    def hits(query: str, prior: bool, names: tuple[str, ...] = ("Caroline", "Melanie")):
        found = hybrid_search(
            query,
            bm25=bm25,
            vectors=vectors,
            embedder=EMB,
            limit=2,
            speakers_of=(lambda keys: [speakers[k] for k in keys]) if prior else None,
            speaker_names=names,
        )
        return {h.key: (h.vector, h.text) for h in found}

    named, bare = (
        hits("how was Melanie's camping trip?", True),
        hits("how was camping trip?", False),
    )
    assert {k: v for k, (v, _) in named.items()} == pytest.approx(
        {k: v for k, (v, _) in bare.items()}
    )
    # BM25 still reads the name: Melanie's message gains on Caroline's.
    assert named[1][1] / named[0][1] > bare[1][1] / bare[0][1]
    # Without the prior, or for names the store does not know, the query is embedded whole:
    # the name lifts the vector match of the message that carries it.
    whole = hits("how was Melanie's camping trip?", False)
    assert whole[1][0] > bare[1][0]
    assert hits("how was Melanie's camping trip?", True, ("Bob", "Ann")) == whole
    # One known speaker is no conversation between speakers: the prior cannot act, the
    # name stays.
    assert hits("how was Melanie's camping trip?", True, ("Melanie",)) == whole


@pytest.mark.parametrize(
    ("query", "left"),
    [
        ("What did Caroline research?", "What did research?"),
        ("What is Caroline's identity?", "What is identity?"),
        ("When did Dr. Jane O'Neil call Jane.", "When did call"),
        ("what did caroline do?", "what did caroline do?"),  # not written as a name
        ("Caroline?", "Caroline?"),  # nothing else to embed: the query as it is
        ("Did Carolina go?", "Did Carolina go?"),
        ("no  name\n  here", "no  name\n  here"),  # untouched, whitespace included
    ],
)
def test_a_speakers_name_written_as_a_name_is_left_out(query: str, left: str) -> None:
    assert query_without_names(query, {"Caroline", "Dr. Jane O'Neil"}) == left


def test_the_store_knows_who_said_a_segment_and_keeps_it_across_a_reload(
    tmp_path: Path,
) -> None:
    items = [
        {"session_id": "s", "role": "user", "content": "hi", "name": "Caroline"},
        {"session_id": "s", "role": "assistant", "content": "[8 May 2023] Melanie: hello"},
        {"session_id": "s", "role": "user", "content": "Note: not a chat line"},
        {"session_id": "s", "role": "tool", "content": "[8 May 2023] INFO: a log line"},
        # A name the message gives wins over one its text claims.
        {"session_id": "s", "role": "user", "content": "[8 May 2023] Bob: x", "name": "Ann"},
    ]
    want = ["Caroline", "Melanie", None, None, "Ann"]
    with RawStore(tmp_path / "store", embedder=EMB, session_id="s", eviction_days=None) as s:
        s.add_many(items)
        keys = s.keys_for_session("s")
        assert s.speakers(keys) == want
        assert s.speakers([max(keys) + 1]) == [None]  # not a live key
        assert s.speaker_names() == {"Caroline", "Melanie", "Ann"}
    with RawStore(tmp_path / "store", embedder=EMB, session_id="s", eviction_days=None) as s:
        assert s.speakers(s.keys_for_session("s")) == want
        assert s.speaker_names() == {"Caroline", "Melanie", "Ann"}


def test_a_speaker_whose_messages_are_all_evicted_is_no_longer_known(tmp_path: Path) -> None:
    with RawStore(
        tmp_path / "store", embedder=EMB, session_id="s", eviction_days=None, max_segments=2
    ) as s:
        for i, name in enumerate(["Ann", "Bob", "Bob", "Cy"]):
            said = f"message {i}"
            s.add_many([{"session_id": "s", "role": "user", "content": said, "name": name}])
        # The two oldest went (capacity 2): Ann's only message, one of Bob's.
        assert s.speaker_names() == {"Bob", "Cy"}


@pytest.fixture
def store(tmp_path: Path) -> RawStore:
    s = RawStore(tmp_path / "store", embedder=EMB, session_id="mine", eviction_days=None)
    s.add_many(
        [
            {
                "session_id": "mine",
                "role": "user",
                "content": "we chose Redis for the job queue",
                "turn": 3,
            },
            {
                "session_id": "other",
                "role": "user",
                "content": "the other team chose Redis too",
                "turn": 1,
            },
        ]
        + [
            {
                "session_id": "mine",
                "role": "assistant",
                "content": f"filler message {i}",
                "turn": 10 + i,
            }
            for i in range(30)
        ]
    )
    return s


def test_memory_search_shape_and_limit_cap(store: RawStore) -> None:
    hits = memory_search(store, "which queue did we choose", limit=5)
    assert hits[0] == {
        "content": "we chose Redis for the job queue",
        "score": hits[0]["score"],
        "session_id": "mine",
        "turn": 3,
    }
    assert set(hits[0]) == {"content", "score", "session_id", "turn"}
    assert len(memory_search(store, "filler message", limit=500)) == MAX_LIMIT
    assert memory_search(store, "filler", limit=0) == []


def test_cross_session_is_off_by_default(store: RawStore) -> None:
    mine = memory_search(store, "team chose Redis", limit=20)
    assert all(h["session_id"] == "mine" for h in mine)
    both = memory_search(store, "team chose Redis", limit=20, cross_session=True)
    assert {h["session_id"] for h in both} == {"mine", "other"}


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.text(min_size=1, max_size=40)),
        min_size=1,
        max_size=25,
    ),
    st.text(min_size=1, max_size=30),
)
def test_no_search_ever_returns_another_sessions_segment(
    tmp_path_factory: pytest.TempPathFactory, items: list[tuple[str, str]], query: str
) -> None:
    s = RawStore(tmp_path_factory.mktemp("x"), embedder=EMB, eviction_days=None)
    s.add_many([{"session_id": sid, "role": "user", "content": text} for sid, text in items])
    for sid in ("a", "b", "c"):
        for hit in search_store(s, query, limit=20, session_id=sid):
            assert s.segment(hit.key).session_id == sid
    s.close()


def test_search_is_deterministic(store: RawStore) -> None:
    rng = random.Random(3)
    queries = [
        " ".join(rng.choice(["redis", "queue", "filler", "team", "message"]) for _ in range(3))
        for _ in range(10)
    ]
    first = [search_store(store, q, limit=10) for q in queries]
    assert first == [search_store(store, q, limit=10) for q in queries]


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.integers(1, 12), st.booleans())
def test_excluded_keys_leave_the_ranking_of_the_rest_unchanged(
    seed: int, n: int, limit: int, filtered: bool
) -> None:
    # What the recall asks for: the best ``limit`` segments the context does not hold. The
    # excluded keys are still scored (neighbours, episodes), so the others rank as before.
    rng = random.Random(seed)
    texts, sessions, stamps = _random_documents(rng, n, span=9e4)
    bm25, vectors, episodes = _corpus(texts, sessions, stamps)
    allowed = frozenset(k for k in range(n) if sessions[k] == "a") if filtered else None
    excluded = set(rng.sample(range(n + 3), rng.randint(0, n)))  # unknown keys too
    kw: dict[str, Any] = {
        "bm25": bm25,
        "vectors": vectors,
        "embedder": EMB,
        "episodes": episodes,
        "allowed": allowed,
        "params": SearchParams(candidates=9),
    }
    for query in ("redis queue", "docker port error", "cache"):
        every = hybrid_search(query, limit=n + 3, **kw)
        want = [h for h in every if h.key not in excluded][:limit]
        assert hybrid_search(query, limit=limit, exclude=excluded, **kw) == want


def test_search_store_leaves_out_segments_by_id(store: RawStore) -> None:
    every = search_store(store, "Redis job queue", limit=100, cross_session=True)
    assert len(every) >= 2
    first_id = store.segment(every[0].key).id
    rest = search_store(
        store, "Redis job queue", limit=100, cross_session=True, exclude_ids={first_id, "gone"}
    )
    assert rest == every[1:]
    assert store.keys_of([first_id, "gone", first_id]) == [every[0].key, every[0].key]


# -- the vectorised hybrid_search against the per-key loop it replaced ---------------------------


def _reference_hybrid_search(
    query: str,
    *,
    bm25: BM25Index,
    vectors: VectorIndex,
    episodes: EpisodeIndex | None,
    timestamp_of: Callable[[int], float | None],
    now: float | None,
    allowed: Collection[int] | None,
    params: SearchParams,
    limit: int,
) -> list[ScoredKey]:
    """The seed-shaped implementation: a dict over every BM25 match, one loop per key."""
    if not query.strip() or limit <= 0 or len(vectors) == 0:
        return []
    text_scores = bm25.normalized_scores(tokenize(query)) if params.text_weight > 0 else {}
    if allowed is not None:
        text_scores = {k: v for k, v in text_scores.items() if k in allowed}
    q_vec = EMB.embed([query])[0]
    candidates = {k for k, _ in vectors.top_k(q_vec, params.candidates, allowed=allowed)}
    by_text = sorted(text_scores.items(), key=lambda kv: -kv[1])
    candidates.update(k for k, _ in by_text[: params.candidates])
    smoothing = episodes is not None and (params.neighbour_weight or params.episode_weight)
    every = set(candidates)
    if smoothing and episodes is not None:
        for key in candidates:
            every.update(n for n in episodes.neighbours(key) if n is not None)
        if allowed is not None:
            every = {k for k in every if k in allowed}
    base = {}
    for key in every:
        vec = max(float(vectors.get(key) @ q_vec), 0.0)
        text = text_scores.get(key, 0.0)
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
                score *= decay_factor(now - stamp, params)
        if score >= params.min_score and not math.isnan(score):
            results.append(ScoredKey(key, score, vec, text))
    results.sort(key=lambda r: (-r.score, r.key))
    return results[:limit]


_WORDS = "cache token deploy redis queue webhook port error retry schema login docker".split()


@settings(max_examples=examples(150), deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 120),
    st.sampled_from(
        [
            DEFAULT_PARAMS,
            SEED_PRESET,
            SearchParams(text_weight=0.0),
            SearchParams(neighbour_weight=0.0),
            SearchParams(candidates=5, min_score=0.2, half_life_days=3.0),
        ]
    ),
    st.booleans(),
)
def test_hybrid_search_equals_the_per_key_reference(
    seed: int, n: int, params: SearchParams, filtered: bool
) -> None:
    rng = random.Random(seed)
    texts, sessions, stamps = _random_documents(rng, n, span=10 * 86_400)
    bm25, vectors, episodes = _corpus(texts, sessions, stamps)
    for key in rng.sample(range(n), n // 5):  # removals: holes in keys, slots and rows
        bm25.remove(key)
        vectors.remove(key)
        episodes.remove(key)
    allowed = frozenset(k for k in range(n) if sessions[k] == "a") if filtered else None
    kw: dict[str, Any] = {
        "bm25": bm25,
        "vectors": vectors,
        "episodes": episodes,
        "timestamp_of": lambda k: stamps[k] if k % 7 else None,
        "now": 10 * 86_400.0 if params.decay < 1 or params.half_life_days else None,
        "allowed": allowed,
        "params": params,
        "limit": 8,
    }
    for query in ("redis queue", "docker port error", "nothing matches here", "cache"):
        got = hybrid_search(query, embedder=EMB, **kw)
        want = _reference_hybrid_search(query, **kw)
        # Float32 rounding (the query is normalised once in the vector index) may swap two
        # keys whose scores tie within 1e-6; anything else is a real difference.
        assert len(got) == len(want)
        every = {h.key: h for h in _reference_hybrid_search(query, **{**kw, "limit": n})}
        for g, w in zip(got, want, strict=True):
            assert abs(g.score - w.score) < 1e-6
            ref = every[g.key]
            assert abs(g.score - ref.score) < 1e-6 and abs(g.vector - ref.vector) < 1e-6
            assert g.text == ref.text


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 80), st.booleans())
def test_hybrid_search_ranks_the_same_under_sparse_keys(seed: int, n: int, filtered: bool) -> None:
    # Keys far apart switch the indexes' dense look-up arrays off (dict look-ups instead, in
    # the episode links, the vector rows and the BM25 slots): the same corpus under keys
    # shifted by 10**12 must rank exactly the same, to the bit.
    rng = random.Random(seed)
    texts = [" ".join(rng.choices(_WORDS, k=rng.randint(1, 8))) for _ in range(n)]
    sessions = [rng.choice("ab") for _ in range(n)]
    stamps = sorted(rng.uniform(0, 3 * 86_400) for _ in range(n))
    removed = rng.sample(range(n), n // 5)
    matrix = EMB.embed(texts)
    ranked: list[list[list[tuple[int, float, float, float]]]] = []
    for offset in (0, 10**12):
        bm25, vectors, episodes = BM25Index(), VectorIndex(EMB.dim), EpisodeIndex()
        for i, text in enumerate(texts):
            bm25.add(i + offset, tokenize(text))
            vectors.add(i + offset, matrix[i])
            episodes.add(i + offset, sessions[i], stamps[i])
        for i in removed:
            bm25.remove(i + offset)
            vectors.remove(i + offset)
            episodes.remove(i + offset)
        allowed = (
            frozenset(i + offset for i in range(n) if sessions[i] == "a") if filtered else None
        )
        ranked.append(
            [
                [
                    (h.key - offset, h.score, h.vector, h.text)
                    for h in hybrid_search(
                        query,
                        bm25=bm25,
                        vectors=vectors,
                        embedder=EMB,
                        episodes=episodes,
                        allowed=allowed,
                        params=SearchParams(candidates=7),
                        limit=10,
                    )
                ]
                for query in ("redis queue", "docker port error", "cache")
            ]
        )
    assert ranked[0] == ranked[1]


def test_episode_bulk_accessors_match_the_single_ones() -> None:
    episodes = EpisodeIndex(episode_gap_seconds=60)
    for key, (session, stamp) in enumerate(
        [("a", 0), ("a", 10), ("b", 11), ("a", 500), ("a", 505)]
    ):
        episodes.add(key, session, float(stamp))
    episodes.remove(1)
    keys = [0, 1, 2, 3, 4, 99]
    before, after = episodes.neighbours_of(keys)
    assert list(zip(before, after, strict=True)) == [episodes.neighbours(k) for k in keys]
    assert episodes.episodes_of(keys) == [
        -1 if episodes.episode(k) is None else episodes.episode(k) for k in keys
    ]


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(0, 40), st.sampled_from("ab"), st.integers(0, 9)),
        max_size=80,
    ),
    st.sampled_from([0, 10**12, -5]),
)
def test_episode_bulk_accessors_follow_adds_and_removes(
    ops: list[tuple[bool, int, str, int]], offset: int
) -> None:
    # The bulk accessors read arrays kept beside the dicts (or the dicts themselves once a
    # key is negative or far out: offset); both must always agree with the single ones.
    episodes = EpisodeIndex(episode_gap_seconds=3)
    live: set[int] = set()
    for add, key, session, stamp in ops:
        key += offset
        if add and key not in live:
            episodes.add(key, session, float(stamp))
            live.add(key)
        elif not add and key in live:
            episodes.remove(key)
            live.discard(key)
    keys = [*sorted(live), offset + 41, offset + 99]
    before, after = episodes.neighbours_of(keys)
    assert list(zip(before, after, strict=True)) == [episodes.neighbours(k) for k in keys]
    assert episodes.episodes_of(keys) == [
        -1 if episodes.episode(k) is None else episodes.episode(k) for k in keys
    ]
