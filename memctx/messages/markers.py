"""The messages memctx or an agent's compaction put into a conversation, and how to know them.

Two kinds of message are not the conversation itself, and every part of memctx must tell
them apart from it: the recall block memctx injects (``<recalled-context …>``: never
archived, replaced every turn, skipped by the recall query) and the summary a compaction
leaves in place of the history (protected by trim, skipped by the recall query, kept after
the system prompt by the recall insertion). This module is the one place that knows their
shapes, so a new marker is recognised everywhere at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .anatomy import TEXT_TYPES, InfoCache, MessageInfo, RoleKind, inspect_message, role_kind

__all__ = [
    "COMPACTED_PREFIX",
    "COMPACTION_SUMMARY_PREFIXES",
    "RECALLED_CONTEXT_TAG",
    "is_compaction_summary",
    "is_recalled_block",
    "is_turn_start",
    "recalled_block_body",
    "recalled_block_text",
]

RECALLED_CONTEXT_TAG: Final = "<recalled-context"
# memctx knows its own blocks by their exact shape: the whole text of a user message, opening
# with this exact line (the attribute memctx writes) and closing with the closing tag. A text
# that merely starts with the tag (a file read by a tool, a block quoted in a question) is the
# conversation's and is kept. A checksum of the body in the tag was tried: it cost about four
# tokens of the cap on every turn (measurably fewer LoCoMo evidence turns in the block) and
# guarded only against a hand-edited copy pasted as a whole message, which is no accident.
_OPEN: Final = f'{RECALLED_CONTEXT_TAG} source="memory-context">\n'
_CLOSE: Final = "\n</recalled-context>"
# What memctx's own compaction writes at the start of its summary message (seed 002).
COMPACTED_PREFIX: Final = "[Context compacted]"
COMPACTION_SUMMARY_PREFIXES: Final = (
    COMPACTED_PREFIX,
    "This session is being continued from a previous conversation",  # Claude Code /compact
    # Pi / OpenClaw, after their compactionSummary message is converted for the model.
    "The conversation history before this point was compacted",
)
_SUMMARY_ROLES: Final = frozenset({"compactionSummary"})  # Pi's own message before conversion


def recalled_block_text(body: str) -> str:
    """The text of a recall block around ``body``: the exact frame memctx writes, which
    :func:`is_recalled_block` knows as its own.

    Args:
        body: What goes between the tags (the ``<knowledge>`` and ``<detail>`` sections).
    """
    return f"{_OPEN}{body}{_CLOSE}"


def recalled_block_body(text: str) -> str | None:
    """What :func:`recalled_block_text` put between the tags of ``text``; ``None`` when
    ``text`` is not such a frame."""
    if len(text) < len(_OPEN) + len(_CLOSE) or not text.startswith(_OPEN):
        return None
    return text[len(_OPEN) : -len(_CLOSE)] if text.endswith(_CLOSE) else None


def _sole_text(message: Mapping[str, Any]) -> str | None:
    """The message's text when it is one text and nothing else: a string ``content``, or one
    text block (``content`` list, Gemini ``parts``, a Responses ``input_text``) as frameworks
    that wrap strings send it."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = content if "content" in message else message.get("parts")
    if not isinstance(blocks, list) or len(blocks) != 1 or not isinstance(blocks[0], Mapping):
        return None
    block = blocks[0]
    text = block.get("text")
    if not isinstance(text, str) or block.get("type", "text") not in TEXT_TYPES:
        return None
    return text if len(block) <= 3 else None  # type, text, and at most cache_control


def is_recalled_block(message: object) -> bool:
    """True for a ``<recalled-context>`` message that memctx injected itself.

    Its exact shape: a user message whose only content is a text :func:`recalled_block_text`
    writes, from its opening line to its closing tag. Anything else, however it starts (a
    tool result holding a file that begins with the tag, a user quoting a block with a
    question around it), is the conversation's own and is kept.
    """
    if not isinstance(message, Mapping) or role_kind(message) is not RoleKind.USER:
        return False
    text = _sole_text(message)
    return (
        text is not None
        and len(text) >= len(_OPEN) + len(_CLOSE)
        and text.startswith(_OPEN)
        and text.endswith(_CLOSE)
    )


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


def is_turn_start(message: Any, infos: InfoCache) -> bool:
    """Whether ``message`` opens a turn (a user's request): a user message that carries no
    tool result and is neither a compaction summary nor a recalled block (both are
    memctx's, not the user's). Turn-based compaction keeps whole turns, the recall block goes
    before the latest one, pruning starts at the first."""
    info = infos.info(message)
    return (
        info.kind is RoleKind.USER
        and not info.has_tool_results
        and not is_compaction_summary(message, info)
        and not is_recalled_block(message)
    )
