"""The messages memctx or an agent's compaction put into a conversation, and how to know them.

Two kinds of message are not the conversation itself, and every part of memctx must tell
them apart from it: the recall block memctx injects (``<recalled-context …>``: never
archived, replaced every turn, skipped by the recall query) and the summary a compaction
leaves in place of the history (protected by trim, skipped by the recall query, kept after
the system prompt by the recall insertion). This module is the one place that knows their
shapes, so a new marker is recognised everywhere at once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Final

from .anatomy import MessageInfo, RoleKind, inspect_message, role_kind

__all__ = [
    "COMPACTED_PREFIX",
    "COMPACTION_SUMMARY_PREFIXES",
    "RECALLED_CONTEXT_TAG",
    "is_compaction_summary",
    "is_recalled_block",
    "recalled_block_text",
]

RECALLED_CONTEXT_TAG: Final = "<recalled-context"
# The block's opening tag carries a checksum of its body. A tag at the start of a text is
# something a user can produce by accident (a file that begins with it, read by a tool, or a
# block pasted into a question about memctx); a body whose checksum matches is not. Only the
# exact shape memctx writes is its own, and only its own blocks are dropped and never archived.
_OPEN_PREFIX: Final = f'{RECALLED_CONTEXT_TAG} source="memory-context" check="'
_CLOSE: Final = "</recalled-context>"
_CHECK_LEN: Final = 12
_BLOCK_RE: Final = re.compile(
    re.escape(_OPEN_PREFIX)
    + rf'(?P<check>[0-9a-f]{{{_CHECK_LEN}}})">\n(?P<body>.*)\n'
    + re.escape(_CLOSE),
    re.DOTALL,
)
# What memctx's own compaction writes at the start of its summary message (seed 002).
COMPACTED_PREFIX: Final = "[Context compacted]"
COMPACTION_SUMMARY_PREFIXES: Final = (
    COMPACTED_PREFIX,
    "This session is being continued from a previous conversation",  # Claude Code /compact
    # Pi / OpenClaw, after their compactionSummary message is converted for the model.
    "The conversation history before this point was compacted",
)
_SUMMARY_ROLES: Final = frozenset({"compactionSummary"})  # Pi's own message before conversion


def _check(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:_CHECK_LEN]


def recalled_block_text(body: str) -> str:
    """The text of a recall block around ``body``: the tags memctx writes, with the checksum
    that lets :func:`is_recalled_block` know the block as memctx's own.

    Args:
        body: What goes between the tags (the ``<knowledge>`` and ``<detail>`` sections).
    """
    return f'{_OPEN_PREFIX}{_check(body)}">\n{body}\n{_CLOSE}'


def _sole_text(message: Mapping[str, Any]) -> str | None:
    """The message's text when it is one text and nothing else: a string ``content``, or one
    text block (``content`` list, Gemini ``parts``) as frameworks that wrap strings send it."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = content if "content" in message else message.get("parts")
    if not isinstance(blocks, list) or len(blocks) != 1 or not isinstance(blocks[0], Mapping):
        return None
    block = blocks[0]
    text = block.get("text")
    if not isinstance(text, str) or block.get("type", "text") != "text":
        return None
    return text if len(block) <= 3 else None  # type, text, and at most cache_control


def is_recalled_block(message: object) -> bool:
    """True for a ``<recalled-context>`` message that memctx injected itself.

    Its exact shape: a user message whose only content is the text :func:`recalled_block_text`
    writes, with a checksum that matches the body. Anything else, however it starts (a tool
    result holding a file that begins with the tag, a user quoting a block), is the
    conversation's own and is kept.
    """
    if not isinstance(message, Mapping) or role_kind(message) is not RoleKind.USER:
        return False
    text = _sole_text(message)
    if text is None or not text.startswith(_OPEN_PREFIX):
        return False
    m = _BLOCK_RE.fullmatch(text)
    return m is not None and m.group("check") == _check(m.group("body"))


def is_compaction_summary(message: object, info: MessageInfo | None = None) -> bool:
    """Whether ``message`` is the summary a compaction left in place of the history.

    Recognised: a text starting with one of :data:`COMPACTION_SUMMARY_PREFIXES` in any
    message that is not a tool result, Pi's ``role: "compactionSummary"``, and Claude Code's
    ``isCompactSummary: true`` flag when a caller keeps it on the message.

    Args:
        message: A message dict in any supported format (anything else is not a summary).
        info: Its reading, if the caller already has one.
    """
    if not isinstance(message, Mapping):
        return False
    if message.get("role") in _SUMMARY_ROLES or message.get("isCompactSummary") is True:
        return True
    info = info if info is not None else inspect_message(message)
    if info.kind in (RoleKind.TOOL, RoleKind.UNKNOWN):
        return False
    return info.text.lstrip().startswith(COMPACTION_SUMMARY_PREFIXES)
