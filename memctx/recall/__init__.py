"""What the context hook recalls and how it shows it: the query, the knowledge and detail
candidates, and the ``<recalled-context>`` block under its hard cap.

May import: the foundations, the mechanisms and :mod:`memctx.trim`.
"""

from __future__ import annotations

from .block import (
    RecallBlock,
    RecallItem,
    build_recall_block,
    detail_label,
    insert_recall,
    message_source,
    recall_message,
)
from .candidates import detail_items, knowledge_items
from .query import build_query
from .render import GAP_MARKER, RecallHit, RenderedRecall, compact_text, render_recall

__all__ = [
    "GAP_MARKER",
    "RecallBlock",
    "RecallHit",
    "RecallItem",
    "RenderedRecall",
    "build_query",
    "build_recall_block",
    "compact_text",
    "detail_items",
    "detail_label",
    "insert_recall",
    "knowledge_items",
    "message_source",
    "recall_message",
    "render_recall",
]
