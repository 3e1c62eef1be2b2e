"""The recall candidates: live facts from the knowledge store and archived details from the
raw store, for :func:`~memctx.recall.block.build_recall_block` to choose from.
"""

from __future__ import annotations

from collections.abc import Collection

from memctx.retrieval import SearchParams, query_weights
from memctx.store import KnowledgeStore, RawStore, search_store

from .block import RUNS_JOIN, RecallItem, detail_label, knowledge_label, message_source
from .excerpt import query_excerpt

__all__ = ["detail_items", "knowledge_items"]


def knowledge_items(store: KnowledgeStore, query: str, limit: int) -> list[RecallItem]:
    """Live facts matching ``query`` (the store's adaptive keyword threshold), best first."""
    return [
        RecallItem(
            "knowledge",
            fact.content,
            score,
            knowledge_label(fact.type.value, fact.origin),
            fact.id,
            (fact.timestamp, 0),
        )
        for fact, score in store.search(query, limit=limit)
    ]


def detail_items(
    store: RawStore,
    query: str,
    *,
    session_id: str,
    cross_session: bool,
    params: SearchParams,
    limit: int,
    exclude_keys: Collection[int] = (),
) -> list[RecallItem]:
    """Archived segments for ``query``; segments the context still holds are left out.

    ``exclude_keys`` (the store's keys of segments) name segments whose message is in the
    context being sent: recalling them would spend the cap on text the model already sees.
    """
    # One reading of the query's term weights serves the search's coverage re-rank and
    # the excerpts of the tool outputs it finds.
    with store.lock:
        weights = query_weights(query, store.bm25.idf)
    # The search leaves them out itself (still scoring them, as the others' neighbours):
    # the best ``limit`` of the rest in one search, not hundreds of hits filtered here.
    hits = search_store(
        store,
        query,
        limit=limit,
        session_id=session_id,
        cross_session=cross_session,
        params=params,
        exclude_keys=exclude_keys,
        weights=weights,
    )
    out: list[RecallItem] = []
    with store.lock:
        for hit in hits:
            segment = store.get(hit.key)
            # A tool output shows the lines the question is about (recall.excerpt).
            runs = query_excerpt(segment.content, weights) if segment.role == "tool" else None
            order = (segment.timestamp, hit.key)  # store keys grow with each add
            source = message_source(
                segment.session_id, segment.timestamp, segment.turn, segment.role
            )
            out.append(
                RecallItem(
                    "detail",
                    RUNS_JOIN.join(runs) if runs else segment.content,
                    hit.score,
                    detail_label(segment.role, segment.name),
                    segment.id,
                    order,
                    source,
                    segment.session_id,
                    hit.key,
                    own=params.vector_weight * hit.vector + params.text_weight * hit.text,
                    runs=runs or (),
                )
            )
    return out
