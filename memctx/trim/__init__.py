"""Smart trim (seed 000): protection, BM25 relevance against the query, oldest first, then
pairing repair; the per-session cache that reads each message once.

May import: the foundations and the mechanisms (:mod:`memctx.retrieval`, :mod:`memctx.llm`,
:mod:`memctx.store`).
"""

from __future__ import annotations

from .cache import IntArray, MessageFacts, TrimCache
from .result import TrimCounts, TrimResult
from .smart import (
    DEFAULT_PROTECTED_RECENT,
    MIN_QUERY_CHARS,
    RELEVANT_SHARE,
    protected_mask,
    smart_trim,
    tool_units,
    trim_read,
)
from .state import ReadInfos

__all__ = [
    "DEFAULT_PROTECTED_RECENT",
    "MIN_QUERY_CHARS",
    "RELEVANT_SHARE",
    "IntArray",
    "MessageFacts",
    "ReadInfos",
    "TrimCache",
    "TrimCounts",
    "TrimResult",
    "protected_mask",
    "smart_trim",
    "tool_units",
    "trim_read",
]
