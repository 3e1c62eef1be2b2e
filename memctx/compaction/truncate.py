"""Oversized tool results cut to their head and tail: the second rung of overflow recovery.

Seed 001 (``truncateOversizedToolResultsInSession``): when compacting three times has not
brought a prompt under the provider's window, the tool results too large for it are cut
and the prompt is sent again. A result is oversized when its text is longer than
:func:`max_tool_result_chars` (30 % of the window in characters, never more than
:data:`HARD_MAX_TOOL_RESULT_CHARS`); it keeps its head (three quarters of the allowance)
and its tail (a quarter: failures and test summaries print last), with a note of how many
characters were left out between them (:func:`memctx.text.cut_middle`).

Only the payload changes: ids, names and error flags stay, so the tool pairing is exactly
the input's. The caller's dicts are never modified: a truncated message is a copy sharing
everything but the containers on the way to the payload. Every provider shape is handled
(OpenAI ``role: tool``, Pi ``toolResult``, Anthropic ``tool_result`` blocks, Gemini
``functionResponse`` parts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memctx.messages import (
    BlockKind,
    InfoCache,
    tool_result_text,
    with_tool_result_text,
)
from memctx.text import cut_middle

__all__ = [
    "HARD_MAX_TOOL_RESULT_CHARS",
    "MIN_KEPT_TOOL_RESULT_CHARS",
    "TOOL_RESULT_WINDOW_SHARE",
    "ToolResultTruncation",
    "max_tool_result_chars",
    "truncate_oversized_tool_results",
    "truncated_text",
]

# One result may take at most this share of the window: what is left still holds the
# system prompt, a compaction summary and the turns around it.
TOOL_RESULT_WINDOW_SHARE = 0.3
# However large the window, a result longer than this (about 130K tokens) is never useful
# whole to a model and makes every later call expensive.
HARD_MAX_TOOL_RESULT_CHARS = 400_000
# Below this, a cut leaves too little of the output for the model to act on.
MIN_KEPT_TOOL_RESULT_CHARS = 2_000
# The seed's estimate counts ceil(len / 3) tokens; the same ratio turns tokens into chars.
_CHARS_PER_TOKEN = 3
_TAIL_SHARE = 0.25


def max_tool_result_chars(window: int) -> int:
    """The longest tool result (in characters) a ``window``-token context keeps whole.

    ``30 % of the window × 3`` characters (the seed's token estimate backwards), between
    :data:`MIN_KEPT_TOOL_RESULT_CHARS` and :data:`HARD_MAX_TOOL_RESULT_CHARS`.

    Raises:
        ValueError: ``window`` is not a positive int.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ValueError(
            f"window must be a positive number of tokens, got {window!r}: pass the model's "
            "context window (e.g. 200000)"
        )
    share = int(window * TOOL_RESULT_WINDOW_SHARE * _CHARS_PER_TOKEN)
    return max(MIN_KEPT_TOOL_RESULT_CHARS, min(HARD_MAX_TOOL_RESULT_CHARS, share))


def truncated_text(text: str, max_chars: int) -> str:
    """``text``, or its head and tail within ``max_chars`` and a note of what was left out.

    Three quarters of ``max_chars`` from the head, a quarter from the tail, and between them
    :func:`memctx.text.cut_middle`'s note (``[... 800,000 characters omitted ...]``), which
    tells the model that the output was longer, so that it re-reads a part it needs rather
    than assume the output ended there. A text only slightly over ``max_chars`` is returned
    whole (the same object) when the note would make it longer.
    """
    tail = int(max_chars * _TAIL_SHARE)
    return cut_middle(text, max_chars - tail, tail)


@dataclass(frozen=True, slots=True)
class ToolResultTruncation:
    """What :func:`truncate_oversized_tool_results` did.

    Attributes:
        messages: The history with oversized results cut (untouched messages are the
            caller's dicts).
        original_chars: The original length of each truncated result, in order.
        max_chars: The allowance each result was cut to (before the note).
    """

    messages: list[Any]
    original_chars: tuple[int, ...]
    max_chars: int

    @property
    def truncated(self) -> int:
        """Number of tool results cut."""
        return len(self.original_chars)

    def describe(self) -> str:
        """One line for a log: ``truncated 1 tool result of 812,000 chars``."""
        n = self.truncated
        if n == 0:
            return f"no tool result over {self.max_chars:,} chars to truncate"
        if n == 1:
            return f"truncated 1 tool result of {self.original_chars[0]:,} chars"
        return (
            f"truncated {n} tool results (largest {max(self.original_chars):,} chars, "
            f"{sum(self.original_chars):,} in all)"
        )


def truncate_oversized_tool_results(
    messages: Sequence[Any], *, max_chars: int, infos: InfoCache | None = None
) -> ToolResultTruncation:
    """Cut every tool result longer than ``max_chars`` to its head and tail.

    Args:
        messages: The history, in any supported format; not modified.
        max_chars: Results longer than this keep ``max_chars`` characters plus a note
            (:func:`truncated_text`); see :func:`max_tool_result_chars` for a default.
        infos: Anatomy cache to share with the caller.

    Returns:
        The new history and the original size of each result cut.

    Raises:
        ValueError: ``max_chars`` is not a positive int.
        TypeError: ``messages`` is not a list of messages.
    """
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a list of message dicts, e.g. [{'role': 'user', ...}]")
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars <= 0:
        raise ValueError(
            f"max_chars must be a positive number of characters, got {max_chars!r}: pass "
            "max_tool_result_chars(window) for the seed's default"
        )
    infos = infos if infos is not None else InfoCache()
    out: list[Any] = []
    sizes: list[int] = []
    for message in messages:
        edited = message
        # Block positions never change when a payload is replaced, so a message with
        # several oversized results is edited one block at a time with the original refs.
        for ref in infos.info(message).blocks:
            if ref.kind is not BlockKind.TOOL_RESULT or len(ref.text) <= max_chars:
                continue
            text = tool_result_text(message, ref)
            cut = truncated_text(text, max_chars)
            if cut is text:  # barely over: the note would have made it longer
                continue
            edited = with_tool_result_text(edited, ref, cut)
            sizes.append(len(text))
        out.append(edited)
    return ToolResultTruncation(out, tuple(sizes), max_chars)
