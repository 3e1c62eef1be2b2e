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
from typing import Final

from .anatomy import MessageInfo, RoleKind, inspect_message, message_text, role_kind

__all__ = [
    "COMPACTED_PREFIX",
    "COMPACTION_SUMMARY_PREFIXES",
    "RECALLED_CONTEXT_TAG",
    "is_compaction_summary",
    "is_recalled_block",
]

RECALLED_CONTEXT_TAG: Final = "<recalled-context"
# What memctx's own compaction writes at the start of its summary message (seed 002).
COMPACTED_PREFIX: Final = "[Context compacted]"
COMPACTION_SUMMARY_PREFIXES: Final = (
    COMPACTED_PREFIX,
    "This session is being continued from a previous conversation",  # Claude Code /compact
    # Pi / OpenClaw, after their compactionSummary message is converted for the model.
    "The conversation history before this point was compacted",
)
_SUMMARY_ROLES: Final = frozenset({"compactionSummary"})  # Pi's own message before conversion


def is_recalled_block(message: object) -> bool:
    """True for a ``<recalled-context>`` message that memctx injected itself."""
    if role_kind(message) is not RoleKind.USER:
        return False
    return message_text(message).lstrip().startswith(RECALLED_CONTEXT_TAG)


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
