"""Keyword search over stemmed words, for :func:`memctx.retrieval.hybrid.hybrid_search`.

The store's BM25 matches :func:`memctx.text.keywords.tokenize` tokens exactly: "Where has Melanie
camped?" does not reach "we went camping", nor "paintings" "painting". Two standard remedies
of text retrieval, both fixed before measuring (no parameter):

- **Stemming** with Porter's algorithm (:mod:`memctx.text.stem`), on both the archived
  text and the question.
- **Question words as stop words.** The tokenizer already drops *what, when, where, which,
  who*; *how, why, whom, whose* are the rest of the English interrogatives. A question asks
  with them, an answer rarely contains them, so matching them only adds noise.

Measured on LoCoMo (``make bench``), this lifts evidence recall at 2,000 tokens in every one
of the 7 conversations, with hash and transformer embeddings alike.

This module is the measurement's stand-in until the tokenizer itself does it:
:class:`StemmedBM25` is a second BM25 index over the store's contents that
:func:`search_stemmed` hands to ``hybrid_search`` in place of the store's own. The proposed
patch, which gives the same figures through ``memory_search`` itself: in
:mod:`memctx.text.keywords`, add the four words to ``STOPWORDS``, return
``tuple(stem_tokens(tokens))`` from ``_run_tokens`` and bump ``TOKENIZER_VERSION`` (saved
``bm25.cache`` term counts become stale). Once :func:`memctx.text.keywords.tokenize` stems, this
index would stem twice: drop it then (a test in ``tests/test_retrieval_keywords.py`` fails
as a reminder).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Final

from memctx.retrieval import (
    DEFAULT_PARAMS,
    BM25Index,
    QueryScores,
    ScoredKey,
    SearchParams,
    hybrid_search,
)
from memctx.store import RawStore
from memctx.text import stem_tokens, tokenize

__all__ = ["QUESTION_WORDS", "StemmedBM25", "keyword_terms", "search_stemmed", "stemmed_index"]

QUESTION_WORDS: Final = frozenset({"how", "why", "whom", "whose"})


def keyword_terms(
    tokens: Iterable[str], *, stem: bool = True, question_words: bool = True
) -> list[str]:
    """Index terms from :func:`~memctx.text.keywords.tokenize` tokens: question words dropped (if
    ``question_words``), plain English words stemmed (if ``stem``)."""
    kept = [t for t in tokens if t not in QUESTION_WORDS] if question_words else list(tokens)
    return stem_tokens(kept) if stem else kept


class StemmedBM25(BM25Index):
    """A BM25 index whose :meth:`query` takes ``tokenize`` tokens, as ``hybrid_search`` passes
    them, and turns them into :func:`keyword_terms` first.

    Documents must be added as :func:`keyword_terms` already (:func:`stemmed_index` does);
    ``add`` and ``add_many`` are the plain index's, so nothing is stemmed twice.

    Args:
        stem: Stem English words.
        question_words: Drop :data:`QUESTION_WORDS`.
    """

    def __init__(self, *, stem: bool = True, question_words: bool = True) -> None:
        super().__init__()
        self.stem, self.question_words = stem, question_words

    def terms(self, tokens: Iterable[str]) -> list[str]:
        """:func:`keyword_terms` with this index's settings."""
        return keyword_terms(tokens, stem=self.stem, question_words=self.question_words)

    def query(self, query_tokens: Sequence[str]) -> QueryScores:
        return super().query(self.terms(query_tokens))


def stemmed_index(
    store: RawStore, *, stem: bool = True, question_words: bool = True
) -> StemmedBM25:
    """A :class:`StemmedBM25` over every live segment of ``store``, under the store's keys.

    A snapshot: segments added to the store later are not in it.
    """
    index = StemmedBM25(stem=stem, question_words=question_words)
    with store.lock:
        keys = [
            key for segment in store.segments() if (key := store.key_of(segment.id)) is not None
        ]
        index.add_many((key, index.terms(tokenize(store.content(key)))) for key in keys)
    return index


def search_stemmed(
    store: RawStore,
    index: StemmedBM25,
    query: str,
    *,
    limit: int = 5,
    session_id: str | None = None,
    cross_session: bool = False,
    params: SearchParams = DEFAULT_PARAMS,
    now: float | None = None,
) -> list[ScoredKey]:
    """:func:`memctx.store.memory_search.search_store` with ``index`` as the keyword half."""
    allowed = store.visible_keys(session_id, cross_session=cross_session)
    if allowed is not None and not allowed:
        return []
    when = now if now is not None else (time.time() if params.decay < 1.0 else None)
    with store.lock:
        return hybrid_search(
            query,
            bm25=index,
            vectors=store.vectors,
            embedder=store.embedder,
            episodes=store.episodes,
            timestamp_of=lambda key: store.segment(key).timestamp,
            now=when,
            allowed=allowed,
            params=params,
            limit=limit,
        )
