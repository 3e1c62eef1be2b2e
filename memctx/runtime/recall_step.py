"""One turn's recall search: knowledge and detail candidates, the block under the cap.

:func:`search_recall` is step 5-6 of ``on_context`` (:mod:`memctx.runtime.engine`): it asks
the knowledge store and the raw store (with the archive's pending overlay) for ``query`` and
builds the block, if there is reason to: a recall block is inserted only when a fact
matches (the knowledge store's own adaptive keyword match) or the best archived message
scores at least ``autoRecallMinBestScore``; every archived message in it must score at least
``autoRecallMinScore`` (:attr:`memctx.retrieval.SearchParams.min_score`). An agent loop's
"Done with turn 0." finds nothing that clears the first bar, and gets no block. Why the bar
is on the best candidate and what it is set to: the field docs of
:class:`memctx.config.MemoryContextConfig`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.errors import StoreError
from memctx.messages import TokenCounter
from memctx.recall import (
    RecallBlock,
    build_recall_block,
    detail_items,
    knowledge_items,
    recall_message,
)
from memctx.retrieval import SearchParams

from .archive import Archive

logger = logging.getLogger("memctx")

__all__ = ["EMPTY_BLOCK", "RecallSearch", "RecallSetup", "recall_turn", "search_recall"]

_DETAIL_CANDIDATES = 32  # details searched first each turn; the cap decides how many are shown
_MAX_DETAIL_CANDIDATES = 512  # ... and at most, when short ones leave room in the cap
EMPTY_BLOCK = RecallBlock("", (), (), 0, 0, 0)
"""A block with nothing in it: rendered, it is the framing every recall message pays."""


@dataclass(frozen=True, slots=True)
class RecallSetup:
    """What an engine's recall searches with, the same every turn.

    Attributes:
        config: The engine's settings (knowledge limit and share, cross-session search).
        params: The hybrid search's weights and ``min_score`` (``autoRecallMinScore``).
        cap: Tokens the recall message may take, framing included.
        session_id: Whose segments are searched (all, with ``crossSession``).
    """

    config: MemoryContextConfig
    params: SearchParams
    cap: int
    session_id: str


@dataclass(frozen=True, slots=True)
class RecallSearch:
    """What one recall search found.

    Attributes:
        block: The block to insert, or ``None`` when nothing cleared the bars or fitted.
        candidates: Facts and details the searches returned (before the cap chose).
        best_score: The best detail's score (0.0 without any).
        unavailable: The stores that could not be searched this turn (``"knowledge"``,
            ``"raw_store"``): a damaged part disables only itself, the other still recalls.
    """

    block: RecallBlock | None
    candidates: int
    best_score: float = 0.0
    unavailable: tuple[str, ...] = ()


def recall_turn(
    archive: Archive,
    setup: RecallSetup,
    query: str,
    kept: Sequence[dict[str, Any]],
    in_context: Collection[int],
    counter: TokenCounter,
) -> tuple[dict[str, Any] | None, RecallSearch]:
    """The recall message to insert among ``kept`` (``None``: nothing relevant fits) and
    what the search found. The cap holds for the message as sent, framing included."""
    like = kept[-5:]  # the shape (Gemini parts or content) of the latest messages
    framing = counter.count_message(recall_message(EMPTY_BLOCK, like))
    found = search_recall(
        archive,
        query,
        in_context,
        config=setup.config,
        params=setup.params,
        cap=setup.cap - framing,
        count_text=counter.count_text,
        session_id=setup.session_id,
    )
    message = recall_message(found.block, like) if found.block is not None else None
    return message, found


def search_recall(
    archive: Archive,
    query: str,
    in_context: Collection[int],
    *,
    config: MemoryContextConfig,
    params: SearchParams,
    cap: int,
    count_text: Callable[[str], int],
    session_id: str,
) -> RecallSearch:
    """The recall block for ``query`` under ``cap`` tokens of text.

    ``in_context`` holds the raw-store keys of the archived segments whose message is being
    sent: recalling them would spend the cap on text the model already sees.
    """
    # Each store is searched on its own: a damaged knowledge.jsonl (a directory, a refused
    # symlink, unreadable) costs the facts, not the details, and a damaged raw store the
    # details, not the facts (with no fact to show, a raw-store error fails the recall as
    # before). What failed is reported, and counted by the engine.
    unavailable: list[str] = []
    knowledge = []
    try:
        if archive.has_knowledge():
            knowledge = knowledge_items(archive.knowledge, query, config.knowledge_search_limit)
    except (StoreError, OSError) as exc:
        _log_unavailable("knowledge store", exc)
        unavailable.append("knowledge")
    pending = archive.pending_items(query, _DETAIL_CANDIDATES)
    limit = _DETAIL_CANDIDATES
    best = 0.0
    raw_ok = True
    while True:
        found = []
        try:
            if raw_ok and archive.has_segments():
                found = detail_items(
                    archive.raw,
                    query,
                    session_id=session_id,
                    cross_session=config.cross_session,
                    params=params,
                    limit=limit,
                    exclude_keys=in_context,
                )
        except (StoreError, OSError) as exc:
            if not knowledge:
                raise  # nothing left to recall from: the turn's recall failed (and says why)
            _log_unavailable("raw store", exc)
            unavailable.append("raw_store")
            raw_ok = False
        best = max((item.score for item in (*found, *pending)), default=0.0)
        if not knowledge and best < config.auto_recall_min_best_score:
            # nothing relevant
            return RecallSearch(None, len(found) + len(pending), best, tuple(unavailable))
        block = build_recall_block(
            knowledge,
            found + pending,
            cap,
            knowledge_share=config.knowledge_share,
            count=count_text,
        )
        # Short messages (chat turns, one-line replies) can leave the cap half empty with
        # the usual number of candidates: look further while the search has more to give
        # and the block has room for another detail of the size it shows, so the cap is
        # spent on evidence. (A fixed fill share would stop a block of chat turns with
        # room for several more, and search on for one of long chunks that has none.)
        short_of_room = block is not None and block.cap - block.tokens >= _typical_cost(
            block, count_text
        )
        if not short_of_room or len(found) < limit or limit >= _MAX_DETAIL_CANDIDATES:
            break
        limit *= 4
    return RecallSearch(block, len(knowledge) + len(found) + len(pending), best, tuple(unavailable))


def _log_unavailable(part: str, exc: BaseException) -> None:
    logger.warning("memctx recall goes on without the %s: %s", part, exc)


def _typical_cost(block: RecallBlock, count: Callable[[str], int]) -> int:
    """Tokens of the median detail the block shows (one line each); a block of knowledge
    alone has no size to go by and counts as full."""
    if not block.details:
        return block.cap + 1
    costs = sorted(count(item.line) + 1 for item in block.details)
    return costs[len(costs) // 2]
