"""Text: the one keyword tokenizer (with stemming), line-aligned chunking, secret redaction,
and rule-based topic and entity tags.

May import: :mod:`memctx.errors`, :mod:`memctx.config`, :mod:`memctx.messages`.
"""

from __future__ import annotations

from .chunking import CHUNK_OVERLAP_TOKENS, CHUNK_TOKENS, chunk_lines, chunk_text, split_lines
from .keywords import STOPWORDS, TOKENIZER_VERSION, is_cjk, tokenize, tokenize_unique
from .redaction import Hit, RedactionResult, Redactor, redact, redact_with_report
from .stem import porter_stem, stem_tokens
from .tagging import entities, topics

__all__ = [
    "CHUNK_OVERLAP_TOKENS",
    "CHUNK_TOKENS",
    "STOPWORDS",
    "TOKENIZER_VERSION",
    "Hit",
    "RedactionResult",
    "Redactor",
    "chunk_lines",
    "chunk_text",
    "entities",
    "is_cjk",
    "porter_stem",
    "redact",
    "redact_with_report",
    "split_lines",
    "stem_tokens",
    "tokenize",
    "tokenize_unique",
    "topics",
]
