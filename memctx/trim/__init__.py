"""Smart trim (seed 000): protection, BM25 relevance against the query, oldest first, then
pairing repair; the per-session cache that reads each message once; tool-output pruning
(seed 003: old tool results soft-trimmed or cleared in the copy sent).

May import: the foundations and the mechanisms (:mod:`memctx.retrieval`, :mod:`memctx.llm`,
:mod:`memctx.store`).
"""

from __future__ import annotations

from .cache import IntArray, MessageFacts, SessionState, TrimCache
from .pruning import (
    PruneResult,
    PruningSession,
    SessionPrune,
    prune_tool_results,
    pruning_due,
)
from .result import TrimCounts, TrimResult
from .smart import (
    DEFAULT_PROTECTED_RECENT,
    MIN_QUERY_CHARS,
    RELEVANT_SHARE,
    protected_mask,
    smart_trim,
    trim_read,
)
from .state import ReadInfos

__all__ = [
    "PruningSession",
    "prune_tool_results",
]
