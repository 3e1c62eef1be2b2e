"""The benchmark corpus: seeded, shaped as the benchmarks use it, long-tailed, queryable.

Generation speed is not asserted here (no unit test asserts wall time); ``make bench``
prints the store's build time.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from memctx.bench.corpus import T_END, make_corpus, make_queries
from memctx.retrieval import HashEmbedder
from memctx.store import RawStore
from memctx.text import tokenize

N = 4_000  # ten sessions
_ID = re.compile(r"[0-9a-f]{7,}")


@pytest.fixture(scope="module")
def corpus() -> list[dict[str, Any]]:
    return make_corpus(N, seed=0)


@pytest.fixture(scope="module")
def token_sets(corpus: list[dict[str, Any]]) -> list[set[str]]:
    return [set(tokenize(item["content"])) for item in corpus]


def test_deterministic_for_a_seed() -> None:
    first = make_corpus(600, seed=3)
    assert make_corpus(600, seed=3) == first
    other = make_corpus(600, seed=4)
    assert sum(a["content"] == b["content"] for a, b in zip(first, other, strict=True)) < 10
    assert make_queries(30, seed=3) == make_queries(30, seed=3)
    assert make_queries(30, seed=3) != make_queries(30, seed=4)


def test_items_have_the_shape_add_many_takes(corpus: list[dict[str, Any]]) -> None:
    assert len(corpus) == N
    for i, item in enumerate(corpus):
        assert set(item) == {"session_id", "role", "content", "timestamp", "turn"}
        assert item["turn"] == i
        assert item["session_id"] == f"sess-{i // 400:03d}"
        assert item["role"] == ("user", "assistant", "tool")[i % 3]
    sizes = [len(item["content"]) for item in corpus]
    assert 800 <= statistics.mean(sizes) <= 1_000
    assert min(sizes) >= 290 and max(sizes) <= 2_000


def test_timestamps_are_30_to_90_s_apart_with_gaps_of_hours(
    corpus: list[dict[str, Any]],
) -> None:
    stamps = [item["timestamp"] for item in corpus]
    gaps = [b - a for a, b in pairwise(stamps)]
    assert min(gaps) >= 30
    long = [g for g in gaps if g > 90]
    assert all(2 * 3600 <= g <= 5 * 3600 + 90 for g in long)
    assert 0.005 * N <= len(long) <= 0.04 * N
    assert abs(stamps[0] - (T_END - N * 70.0 - 10 * 3 * 3600.0)) < 5 * 3600 + 90


def test_add_many_stores_the_items(corpus: list[dict[str, Any]], tmp_path: Path) -> None:
    items = corpus[:30]
    with RawStore(tmp_path / "store", embedder=HashEmbedder(), eviction_days=None) as store:
        stored = store.add_many(items)
        assert all(s is not None for s in stored)
        assert len(store) == 30


def test_the_vocabulary_has_common_words_and_a_long_tail_of_ids(
    token_sets: list[set[str]],
) -> None:
    df = Counter(t for tokens in token_sets for t in tokens)
    # 20,641 distinct tokens at seed 0 (about 73,000 in the benchmarks' 20,000 segments).
    assert 12_000 <= len(df) <= 40_000
    ids = [t for t in df if _ID.fullmatch(t) and re.search(r"\d", t)]
    assert len(ids) >= 0.4 * len(df)  # request ids and commit hashes
    assert sum(1 for c in df.values() if c == 1) >= 0.5 * len(df)  # most occur once
    assert df.most_common(1)[0][1] >= 0.4 * N  # and a few are everywhere
    assert len(set[str]().union(*token_sets[:400])) < len(df) / 3  # each session adds more


def test_queries_ask_about_what_the_corpus_contains(token_sets: list[set[str]]) -> None:
    queries = make_queries(90, seed=0)
    assert len(queries) == 90 and len(set(queries)) >= 85
    coverage = []
    for query in queries:
        tokens = set(tokenize(query))
        assert len(tokens) >= 2, query
        coverage.append(max(len(tokens & seg) for seg in token_sets) / len(tokens))
    assert min(coverage) >= 0.4  # every query meets a segment sharing much of it
    assert statistics.mean(coverage) >= 0.7
    assert sum(c == 1.0 for c in coverage) >= len(queries) / 5
