"""``memory_search``: hybrid search over a raw store, in the shape of seed 002's tool.

Results are ``[{"content", "score", "session_id", "turn"}]``, best first, ``limit`` capped at
20 as the seed's tool caps it. With ``cross_session`` off (the default) a search sees only its
own session's segments.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Any

from memctx.retrieval import (
    DEFAULT_PARAMS,
    QueryTerms,
    ScoredKey,
    SearchParams,
    hybrid_search,
    query_weights,
    rerank_by_coverage,
)

from .raw.store import RawStore

__all__ = ["MAX_LIMIT", "memory_search", "search_store"]

MAX_LIMIT = 20


def search_store(
    store: RawStore,
    query: str,
    *,
    limit: int = 5,
    session_id: str | None = None,
    cross_session: bool = False,
    params: SearchParams = DEFAULT_PARAMS,
    now: float | None = None,
    exclude_ids: Collection[str] = (),
    exclude_keys: Collection[int] = (),
    weights: QueryTerms | None = None,
) -> list[ScoredKey]:
    """Rank ``store``'s visible segments for ``query`` (see :func:`hybrid_search`).

    ``exclude_ids`` (segment ids) and ``exclude_keys`` (their keys in ``store``,
    :meth:`RawStore.key_for`) name segments never returned (still scored as the others'
    neighbours): the best ``limit`` of the rest. ``weights`` are the query's term weights
    for the coverage re-rank (:func:`query_weights` over the store's IDF), for a caller
    that has them already; by default they are computed here.
    """
    allowed = store.visible_keys(session_id, cross_session=cross_session)
    if allowed is not None and not allowed:
        return []
    # Decay needs a reference time only when it is switched on.
    when = now if now is not None else (time.time() if params.decay < 1.0 else None)
    with store.lock:
        exclude: Collection[int] = exclude_keys
        if exclude_ids:
            exclude = [*store.keys_of(exclude_ids), *exclude_keys]
        rerank = params.coverage_weight > 0.0 and limit > 0
        hits = hybrid_search(
            query,
            bm25=store.bm25,
            vectors=store.vectors,
            embedder=store.embedder,
            episodes=store.episodes,
            timestamp_of=lambda key: store.segment(key).timestamp,
            now=when,
            allowed=allowed,
            params=params,
            limit=max(limit, params.coverage_pool) if rerank else limit,
            exclude=exclude,
            speakers_of=store.speakers,
            speaker_names=store.speaker_names(),
        )
        if rerank:
            # Tool outputs are line-structured: a line is one record (a setting, a log
            # entry), so the query's words meeting on one line are evidence.
            if weights is None:
                weights = query_weights(query, store.bm25.idf)
            hits = rerank_by_coverage(
                hits,
                weights,
                lambda key: store.content(key) if store.segment(key).role == "tool" else None,
                weight=params.coverage_weight,
            )
        return hits[:limit]


def memory_search(
    store: RawStore,
    query: str,
    limit: int = 5,
    *,
    session_id: str | None = None,
    cross_session: bool = False,
    params: SearchParams = DEFAULT_PARAMS,
) -> list[dict[str, Any]]:
    """The ``memory_search`` tool: ``[{content, score, session_id, turn}]``, at most 20.

    Args:
        store: The raw store to search.
        query: What to look for, in natural language or keywords.
        limit: Results wanted; values above 20 are capped, values below 1 give ``[]``.
        session_id: Whose segments are visible (default: the store's session).
        cross_session: Search every session's segments.
        params: Search weights (:class:`SearchParams`).
    """
    hits = search_store(
        store,
        query,
        limit=min(max(int(limit), 0), MAX_LIMIT),
        session_id=session_id,
        cross_session=cross_session,
        params=params,
    )
    out = []
    with store.lock:
        for hit in hits:
            info = store.segment(hit.key)
            out.append(
                {
                    "content": store.content(hit.key),
                    "score": round(hit.score, 6),
                    "session_id": info.session_id,
                    "turn": info.turn,
                }
            )
    return out
