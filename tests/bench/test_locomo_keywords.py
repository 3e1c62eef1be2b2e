"""Stemmed keyword search as hybrid_search's keyword half."""

from __future__ import annotations

from pathlib import Path

from memctx.bench.locomo.keywords import (
    QUESTION_WORDS,
    StemmedBM25,
    keyword_terms,
    search_stemmed,
    stemmed_index,
)
from memctx.retrieval.embeddings import HashEmbedder
from memctx.retrieval.hybrid import SearchParams
from memctx.store.memory_search import search_store
from memctx.store.raw.store import RawStore
from memctx.text.keywords import tokenize

TEXT_ONLY = SearchParams(
    vector_weight=0.0, text_weight=1.0, neighbour_weight=0.0, episode_weight=0.0
)


def test_store_tokenizer_does_not_stem_yet() -> None:
    # StemmedBM25 stems tokenize()'s output. Once tokenize itself stems (the
    # proposed patch), this index would stem twice: drop memctx.bench.locomo.keywords then.
    assert tokenize("camping paintings") == ["camping", "paintings"]


def test_keyword_terms() -> None:
    tokens = tokenize("How long has Melanie been camping? Why paintings?")
    assert keyword_terms(tokens) == ["long", "melani", "been", "camp", "paint"]
    assert keyword_terms(tokens, stem=False) == ["long", "melanie", "been", "camping", "paintings"]
    assert "how" in keyword_terms(tokens, stem=False, question_words=False)
    assert QUESTION_WORDS.isdisjoint(keyword_terms(tokens))


def test_query_is_stemmed_like_the_documents() -> None:
    index = StemmedBM25()
    docs = ["we went camping at the beach", "my new paintings", "lunch was good"]
    index.add_many((k, index.terms(tokenize(t))) for k, t in enumerate(docs))
    assert index.query(tokenize("where has she camped")).top(3)[0][0] == 0
    assert index.query(tokenize("a painting")).top(3)[0][0] == 1
    assert index.query(tokenize("how why")).top(3) == []


def test_search_through_a_store(tmp_path: Path) -> None:
    texts = ["We camped by the lake last week.", "The tests pass now.", "I like tea."]
    with RawStore(
        tmp_path / "s", embedder=HashEmbedder(), session_id="a", eviction_days=None
    ) as store:
        store.add_many([("a", "user", t) for t in texts] + [("b", "user", "camping gear list")])
        index = stemmed_index(store)
        assert len(index) == 4
        question = "When did they go camping?"
        plain = search_store(store, question, limit=3, params=TEXT_ONLY)
        hits = search_stemmed(store, index, question, limit=3, params=TEXT_ONLY)
        matched = [store.content(h.key) for h in hits if h.text > 0]
        assert matched == [texts[0]]  # own session only
        assert all(h.text == 0 for h in plain)  # exact words miss "camped"
        both = search_stemmed(store, index, question, limit=3, params=TEXT_ONLY, cross_session=True)
        assert sum(h.text > 0 for h in both) == 2
        assert search_stemmed(store, index, "   ", limit=3) == []
