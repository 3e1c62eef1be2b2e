"""The recall query: what the context hook asks the stores each turn.

The query is the last 2–3 user messages, newest last (seed 000): one short reply ("ok",
"y", "继续") alone is no query, but together with the request before it it is. Messages that
are not the user speaking are skipped: tool results riding in user messages, memctx's own
recalled block, the summary a compaction left in a user message (``[Context compacted]``,
Claude Code's "This session is being continued…": the whole past, not the question), and
harness-injected text (``System:`` prefixes, ``<system-reminder>``, ``<command-…>`` /
``<local-command-…>`` echoes of slash commands, the "Caveat:" notices some agents prepend).
Embedded ``<system-reminder>`` spans inside a real user message are cut out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from memctx.messages import (
    BlockKind,
    InfoCache,
    MessageInfo,
    RoleKind,
    is_compaction_summary,
    is_recalled_block,
)
from memctx.text import tokenize_unique

__all__ = ["build_query"]

_HARNESS_PREFIXES: Final = (
    "system:",
    "[system",
    "<system",
    "<command-",
    "<local-command",
    "caveat:",
)
_REMINDER_RE: Final = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
MAX_QUERY_CHARS: Final = 2_000  # a pasted log must not turn into a 20,000-term BM25 query
OLDER_MESSAGE_CHARS: Final = 300  # what each older message adds (its opening: the request)
# Older messages are added only while the query is too thin to search with: the seed joins
# them to rescue "ok" / "y" / "继续", but next to a real question they only add noise.
ENOUGH_TERMS: Final = 3


def build_query(
    messages: Sequence[object],
    infos: InfoCache,
    *,
    max_messages: int = 3,
    max_chars: int = MAX_QUERY_CHARS,
) -> str:
    """The search query: the last ``max_messages`` real user messages, oldest first.

    Older messages are added only until the query has :data:`ENOUGH_TERMS` distinct
    keywords; the newest counts in full, each older one with its first
    :data:`OLDER_MESSAGE_CHARS` characters.

    Args:
        messages: The conversation (recalled blocks may still be in it: they are skipped).
        infos: Anatomy cache shared with the rest of the hook.
        max_messages: How many user messages to join (the seed says 2–3).
        max_chars: Keep at most this many characters, from the end (newest text matters).
    """
    picked: list[str] = []
    terms: set[str] = set()
    for message in reversed(messages):
        if len(picked) >= max_messages or len(terms) >= ENOUGH_TERMS:
            break
        info = infos.info(message)
        if info.kind is not RoleKind.USER or info.is_tool_result_only:
            continue
        if is_recalled_block(message) or is_compaction_summary(message, info):
            continue
        text = _REMINDER_RE.sub(" ", _own_text(info)).strip()
        if not text or text.lower().startswith(_HARNESS_PREFIXES):
            continue
        picked.append(text)
        terms.update(tokenize_unique(text if len(picked) == 1 else text[:OLDER_MESSAGE_CHARS]))
    # The newest message is the question; older ones are context. A long paste two messages
    # back must not drown the question, so older messages contribute their opening only.
    older = [text[:OLDER_MESSAGE_CHARS] for text in picked[1:]]
    query = "\n".join([*reversed(older), *picked[:1]])
    return query[-max_chars:] if len(query) > max_chars else query


def _own_text(info: MessageInfo) -> str:
    """The user's words: text blocks only (tool results in the same message are not)."""
    return "\n".join(b.text for b in info.blocks if b.kind is BlockKind.TEXT and b.text)
