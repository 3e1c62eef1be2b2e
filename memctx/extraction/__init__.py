"""Knowledge extraction after compaction: the coding-agent prompt, chunking, strict JSON
parsing with one repair retry, the secret guard, and the ADD/UPDATE/SUPERSEDE/NONE update.

May import: the foundations, the mechanisms, :mod:`memctx.trim`, :mod:`memctx.recall`.
"""

from __future__ import annotations

from .extract import (
    DEFAULT_MAX_INPUT_TOKENS,
    CompletionClient,
    CompletionResponse,
    ExtractionReport,
    extract_and_update,
)
from .prompt import (
    CONVERSATION_CLOSE,
    CONVERSATION_OPEN,
    TASK_DECIDE,
    TASK_EXTRACT,
    ParseError,
    ProposedFact,
    prompt_overhead_tokens,
)

__all__ = [
    "extract_and_update",
]
