"""Line coverage: the query's words found together on one line of a long tool output.

A chunk of a tool output is 400 tokens of lines (a config file, a log, a listing), and the
line a question is about is one of them: ``api_port: 9052`` among a hundred settings,
``review requested on #3863`` among request logs. Neither channel of the hybrid search sees
that the question's words meet on that line: the vector of the chunk is the average of all
its lines, and BM25 counts the words wherever they are, so a chunk that says ``api`` on every
line (the API reference) outranks it. In a line-structured output a line is one record, so
the share of the query's weight (IDF) present on its best line is the proximity signal
term-proximity rankings use for long documents, at the grain those outputs are written in.

:func:`rerank_by_coverage` adds ``weight x coverage`` to the score of each hit the caller
marks as such an output, among the best ``pool`` of the fused ranking, and re-sorts them.
Prose is not re-ranked: a chat turn is one or two lines, and BM25 already weighs how much
of the query it holds (measured on LoCoMo, a coverage bonus on chat turns moves evidence
recall by under a point either way).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from memctx.text import line_token_sets, tokenize

from .hybrid import ScoredKey

__all__ = ["QueryTerms", "line_coverage", "line_weights", "query_weights", "rerank_by_coverage"]


QueryTerms = Mapping[frozenset[str], float]
"""A query's words for line matching: each word's forms (its index token, stemmed when it is
a plain word, and its surface form, which is how an identifier's parts are indexed:
"delay" in ``RETRY_DELAY``) and the larger IDF of the two."""


def query_weights(query: str, idf: Callable[[str], float]) -> dict[frozenset[str], float]:
    """The query's distinct words (:data:`QueryTerms`); words no document holds left out."""
    # tokenize gives the stemmed and the surface form of each word at the same position.
    pairs = zip(tokenize(query), tokenize(query, stem=False), strict=True)
    weights: dict[frozenset[str], float] = {}
    for stemmed, surface in pairs:
        forms = frozenset((stemmed, surface))
        weight = max(idf(stemmed), idf(surface))
        if weight > 0.0:
            weights[forms] = weight
    return weights


def line_weights(text: str, weights: QueryTerms) -> list[float]:
    """Per line of ``text``, the weight of the query words it holds."""
    return [
        sum(w for forms, w in weights.items() if not forms.isdisjoint(tokens))
        for tokens in line_token_sets(text)
    ]


def line_coverage(text: str, weights: QueryTerms) -> float:
    """The largest share of ``weights`` (:func:`query_weights`) present on one line of
    ``text``, in [0, 1]; 0.0 when the query has no weight."""
    total = sum(weights.values())
    if total <= 0.0:
        return 0.0
    return max(line_weights(text, weights), default=0.0) / total


def rerank_by_coverage(
    hits: Sequence[ScoredKey],
    weights: QueryTerms,
    text_of: Callable[[int], str | None],
    *,
    weight: float,
) -> list[ScoredKey]:
    """``hits`` re-sorted by score plus ``weight`` x :func:`line_coverage`; a hit whose
    ``text_of`` is ``None`` (not a line-structured output) keeps its score.

    Ties keep the fused ranking's order (score, then key), so the result is deterministic.
    """
    if weight <= 0.0 or len(weights) < 2:  # one query word: coverage is BM25's presence
        return list(hits)
    scored = []
    for hit in hits:
        text = text_of(hit.key)
        bonus = weight * line_coverage(text, weights) if text is not None else 0.0
        scored.append(ScoredKey(hit.key, hit.score + bonus, hit.vector, hit.text))
    scored.sort(key=lambda h: (-h.score, h.key))
    return scored
