"""Text: the one keyword tokenizer (with stemming), the one cutter of text under a token budget
(:func:`split_text`, and the overlapping line-aligned chunks of indexes), the one head/tail
cut of a long text with its note (:func:`cut_middle`), the date a message's text starts with
and the speaker after it (:func:`leading_date`, :func:`leading_speaker`,
:func:`without_chat_prefix`), secret redaction,
and rule-based topic and entity tags.

May import: :mod:`memctx.errors`, :mod:`memctx.config`, :mod:`memctx.messages`.
"""

from __future__ import annotations

from .chunking import (
    CHUNK_OVERLAP_TOKENS,
    CHUNK_TOKENS,
    chunk_lines,
    chunk_text,
    split_lines,
    split_text,
)

# The package's interface to the rest of memctx, not user-facing (so not in __all__); the
# ``as`` form is the explicit re-export the type checker asks for.
from .cut import OMISSION_NOTE_RE as OMISSION_NOTE_RE
from .cut import cut_middle as cut_middle
from .cut import is_cut_middle as is_cut_middle
from .cut import omission_note as omission_note
from .dates import leading_date as leading_date
from .dates import leading_day as leading_day
from .dates import leading_speaker as leading_speaker
from .dates import without_chat_prefix as without_chat_prefix
from .keywords import (
    CJK_CHARS,
    CJK_RE,
    QUESTION_WORDS,
    STOPWORDS,
    TOKENIZER_VERSION,
    is_cjk,
    line_token_sets,
    tokenize,
    tokenize_unique,
    word_runs,
)
from .redaction import Hit, RedactionResult, Redactor, redact, redact_with_report
from .stem import porter_stem, stem_tokens
from .tagging import entities, topics

__all__ = [
    "Redactor",
    "chunk_text",
    "tokenize",
]
