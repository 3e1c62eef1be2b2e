"""Line coverage: the query's words meeting on one line of a line-structured output."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.retrieval import BM25Index, ScoredKey, line_coverage, query_weights, rerank_by_coverage
from memctx.text import tokenize

CONFIG = "\n".join(
    [f"service_{i}:\n  replicas: {i % 5}\n  memory: {i}Gi" for i in range(30)]
    + ["api_port: 9052"]
    + [f"worker_{i}:\n  queue: jobs-{i}" for i in range(30)]
)
API_DOCS = "\n".join(
    f"### GET /api/things/{i}\nReturns thing {i}; the api answers 404 when it is gone."
    for i in range(30)
)


def _index(texts: dict[int, str]) -> BM25Index:
    index = BM25Index()
    for key, text in texts.items():
        index.add(key, tokenize(text))
    return index


def test_a_line_holding_every_query_word_covers_the_query() -> None:
    index = _index({1: CONFIG, 2: API_DOCS})
    weights = query_weights("What's the API port?", index.idf)
    assert {frozenset({"api"}), frozenset({"port"})} <= set(weights)
    assert line_coverage(CONFIG, weights) > 0.9
    # "api" on every line of the reference, "port" on none: half the query at best.
    assert line_coverage(API_DOCS, weights) < 0.6


def test_words_on_different_lines_do_not_add_up() -> None:
    weights = query_weights("retry delay", lambda _token: 1.0)
    assert line_coverage("retry: 3\ntimeout: 5\ndelay: 250ms", weights) == 0.5
    assert line_coverage("retry delay: 250ms", weights) == 1.0
    # An identifier's parts are indexed as written, not stemmed: matched by the surface form.
    assert line_coverage("RETRY_BASE_DELAY=912ms", weights) == 1.0
    assert line_coverage("nothing here", weights) == 0.0
    assert line_coverage("anything", {}) == 0.0


def test_rerank_lifts_the_output_whose_line_holds_the_question() -> None:
    texts = {1: API_DOCS, 2: CONFIG, 3: "We talked about the api and its port in the meeting."}
    index = _index(texts)
    weights = query_weights("What's the API port?", index.idf)
    hits = [ScoredKey(1, 0.43, 0.4, 0.5), ScoredKey(3, 0.42, 0.3, 0.9), ScoredKey(2, 0.40, 0.1, 1)]
    tool = {1, 2}  # key 3 is prose: never re-ranked
    ranked = rerank_by_coverage(
        hits, weights, lambda k: texts[k] if k in tool else None, weight=0.2
    )
    assert [h.key for h in ranked] == [2, 1, 3]
    assert ranked[2].score == 0.42  # prose keeps its score
    # Off, or a one-word query: the fused order as it was.
    assert rerank_by_coverage(hits, weights, texts.get, weight=0.0) == hits
    assert rerank_by_coverage(hits, {frozenset({"api"}): 1.0}, texts.get, weight=0.2) == hits


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet="ab cd\n_:", max_size=40), min_size=1, max_size=8),
    st.dictionaries(
        st.sampled_from(["ab", "cd", "ab_cd", "a"]).map(lambda w: frozenset({w})),
        st.floats(0.1, 5.0),
    ),
)
def test_coverage_is_a_share_and_the_rerank_keeps_every_hit(
    texts: list[str], weights: dict[frozenset[str], float]
) -> None:
    for text in texts:
        assert 0.0 <= line_coverage(text, weights) <= 1.0 + 1e-9
    hits = [ScoredKey(i, 1.0 / (i + 1), 0.0, 0.0) for i in range(len(texts))]
    ranked = rerank_by_coverage(hits, weights, lambda k: texts[k], weight=0.3)
    assert sorted(h.key for h in ranked) == list(range(len(texts)))
    assert all(a.score >= b.score for a, b in pairwise(ranked))
