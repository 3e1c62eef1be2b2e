"""What the summariser sees of a message: labelled text, never a provider payload.

Seed 001 strips ``toolResult.details`` before anything reaches the summariser: tool results
carry structured payloads for user interfaces (diffs, exit metadata, raw JSON) that are
verbose, untrusted and of no use to a summary. memctx goes one step further, as Pi's own
compaction does: the summariser gets a plain-text rendering built from the message anatomy
(:func:`memctx.messages.inspect_message`), one labelled paragraph per block kind, and no
field the anatomy does not read (``details``, ids, cache markers, signatures) can reach it.
A conversation rendered as text is also what keeps a model from continuing it instead of
summarising it.

Tool outputs, tool-call arguments and thinking are capped at :data:`TOOL_TEXT_MAX_CHARS`
(the head and the tail, where errors and test summaries are); what the user and the
assistant wrote is kept whole, because the summary must quote the user's instructions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memctx.messages import BlockKind, BlockRef, MessageInfo, RoleKind

from .truncate import truncated_text

__all__ = ["TOOL_TEXT_MAX_CHARS", "cap_text", "labelled", "render_message", "render_messages"]

# Pi's compaction keeps 2,000 characters of a tool result; memctx keeps the same amount
# but splits it between the head and the tail (failures and test summaries print last).
TOOL_TEXT_MAX_CHARS = 2000
_CONVERSATION_END = "</conversation>"
_LABELS = {
    RoleKind.SYSTEM: "System",
    RoleKind.USER: "User",
    RoleKind.ASSISTANT: "Assistant",
    RoleKind.TOOL: "Tool result",
}


def cap_text(text: str, max_chars: int = TOOL_TEXT_MAX_CHARS) -> str:
    """``text``, or its head and tail with the number of characters left out between: the
    cut of an oversized tool result (:func:`memctx.compaction.truncate.truncated_text`)."""
    return truncated_text(text, max_chars)


def _result_label(block: BlockRef) -> str:
    name = f" {block.tool_name}" if block.tool_name else ""
    return f"[Tool result{name}{' (error)' if block.is_error else ''}]"


def _call_text(block: BlockRef) -> str:
    return f"{block.tool_name or 'tool'}({cap_text(block.text)})"


def _paragraphs(info: MessageInfo) -> Iterable[str]:
    label = _LABELS.get(info.kind, info.role or "Message")
    texts: list[str] = []
    calls: list[str] = []
    for block in info.blocks:
        if block.kind is BlockKind.TEXT and block.text.strip():
            texts.append(block.text)
        elif block.kind is BlockKind.THINKING and block.text.strip():
            yield f"[{label} thinking]: {cap_text(block.text)}"
        elif block.kind is BlockKind.TOOL_CALL:
            calls.append(_call_text(block))
        elif block.kind is BlockKind.TOOL_RESULT:
            yield f"{_result_label(block)}: {cap_text(block.text) or '(no output)'}"
        elif block.kind is BlockKind.IMAGE:
            texts.append("[image]")
        elif block.kind is BlockKind.OTHER and block.text.strip():
            texts.append(cap_text(block.text))
    if texts:
        yield f"[{label}]: " + "\n".join(texts)
    if calls:
        yield f"[{label} tool calls]: " + "; ".join(calls)


def render_message(info: MessageInfo) -> str:
    """The summariser's text for one message (read with :func:`inspect_message`).

    Labelled paragraphs: ``[User]: …``, ``[Assistant]: …``, ``[Assistant thinking]: …``,
    ``[Assistant tool calls]: read({"path": …}); …``, ``[Tool result bash (error)]: …``.
    Only what the anatomy reads is rendered; a literal ``</conversation>`` is defused so
    the text cannot close the prompt's conversation block early.

    Returns:
        The text; ``""`` for a message with nothing readable.
    """
    text = "\n".join(_paragraphs(info))
    return text.replace(_CONVERSATION_END, "</ conversation>")


def render_messages(infos: Iterable[MessageInfo]) -> str:
    """:func:`render_message` of each message, separated by blank lines, empty ones skipped."""
    return "\n\n".join(t for t in (render_message(i) for i in infos) if t)


def labelled(label: str, text: Any) -> str:
    """A labelled paragraph for text that is not a message (a partial or earlier summary)."""
    body = str(text).replace(_CONVERSATION_END, "</ conversation>")
    return f"[{label}]:\n{body}"
