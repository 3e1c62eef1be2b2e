"""What the context hook recalls and how it shows it: the query, the knowledge and detail
candidates, and the ``<recalled-context>`` block under its hard cap.

May import: the foundations, the mechanisms and :mod:`memctx.trim`.
"""

from __future__ import annotations

from .block import (
    GAP_MARKER,
    RecallBlock,
    RecalledEntry,
    RecallItem,
    RecallPlacement,
    build_recall_block,
    compact_text,
    detail_label,
    insert_recall,
    knowledge_label,
    message_source,
    parse_recall_block,
    recall_message,
)
from .candidates import detail_items, knowledge_items
from .query import build_query

__all__ = [
    "build_query",
    "build_recall_block",
    "parse_recall_block",
]
