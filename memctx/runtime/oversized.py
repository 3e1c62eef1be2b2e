"""The last resort of ``on_context``: texts too large for the window, cut in the copy sent.

Smart trim never removes the newest messages or the last tool call with its results, so a
build log longer than the window itself would make every call fail. Seed 001's answer,
when compaction cannot help, is to cut the oversized tool results to head and tail
(:func:`memctx.compaction.truncate_oversized_tool_results`); here it is applied to the
context one call sends, never to the agent's own list, which keeps them whole (and the
archive gets them whole when they are trimmed later).

The same bytes pasted as the latest user request (or written by the model, or as a system
prompt) are no different: when the context still does not fit once the tool results are
cut, the text blocks longer than the allowance are cut the same way
(:func:`cut_oversized_texts`), so no input of any role makes ``on_context`` send more than
the window. The recall block is memctx's own and already within its cap; it is never cut.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memctx.compaction import (
    MIN_KEPT_TOOL_RESULT_CHARS,
    max_tool_result_chars,
    truncate_oversized_tool_results,
    truncated_text,
)
from memctx.messages import BlockKind, InfoCache, is_recalled_block, with_text_block

__all__ = ["cut_oversized_results", "cut_oversized_texts"]


def cut_oversized_results(
    messages: list[dict[str, Any]],
    tokens: int,
    window: int,
    budget: int,
    count: Callable[[Any], int],
) -> tuple[list[dict[str, Any]], int, int]:
    """``messages`` with their oversized tool results cut, their tokens, and how many were cut.

    First to seed 001's allowance (30 % of ``window`` each); while several cut results
    together still exceed ``budget``, to half that, and half again, down to the shortest
    useful cut (:data:`memctx.compaction.MIN_KEPT_TOOL_RESULT_CHARS`). Unchanged, with
    ``tokens`` and 0, when no result is over the allowance.

    Args:
        messages: The context about to be sent; not modified.
        tokens: Its tokens.
        window: The model's context window.
        budget: The tokens the context should fit (the window less the reply's reserve).
        count: Tokens of one message.
    """

    def cut_results(limit: int) -> tuple[list[dict[str, Any]], int]:
        cut = truncate_oversized_tool_results(messages, max_chars=limit)
        return cut.messages, cut.truncated

    return _cut_halving(messages, tokens, window, budget, count, cut_results)


def cut_oversized_texts(
    messages: list[dict[str, Any]],
    tokens: int,
    window: int,
    budget: int,
    count: Callable[[Any], int],
    infos: InfoCache,
) -> tuple[list[dict[str, Any]], int, int]:
    """``messages`` with their text blocks too long for ``budget`` cut to head and tail, their
    tokens, and how many blocks were cut.

    The allowance and its halving are :func:`cut_oversized_results`'s, applied to the text
    blocks of any role (a recall block excepted). Unchanged, with ``tokens`` and 0, when no
    text block is over the allowance.
    """

    def cut_texts(limit: int) -> tuple[list[dict[str, Any]], int]:
        out: list[dict[str, Any]] = []
        cut = 0
        for message in messages:
            edited = message
            if not is_recalled_block(message):
                # Block positions never change when a text is replaced: the refs serve.
                for ref in infos.info(message).blocks:
                    if ref.kind is not BlockKind.TEXT or len(ref.text) <= limit:
                        continue
                    short = truncated_text(ref.text, limit)
                    if short is not ref.text:
                        edited = with_text_block(edited, ref, short)
                        cut += 1
            out.append(edited)
        return out, cut

    return _cut_halving(messages, tokens, window, budget, count, cut_texts)


def _cut_halving(
    messages: list[dict[str, Any]],
    tokens: int,
    window: int,
    budget: int,
    count: Callable[[Any], int],
    cut_to: Callable[[int], tuple[list[dict[str, Any]], int]],
) -> tuple[list[dict[str, Any]], int, int]:
    """``cut_to(limit)`` from seed 001's allowance down, halving while the result is over
    ``budget``: the cut context, its tokens and how many pieces were cut."""
    best, best_tokens, cut_count = messages, tokens, 0
    limit = max_tool_result_chars(window)
    while True:
        edited, cut = cut_to(limit)
        if not cut:
            return best, best_tokens, cut_count
        best, cut_count = edited, cut
        best_tokens = sum(count(m) for m in best)
        if best_tokens <= budget or limit <= MIN_KEPT_TOOL_RESULT_CHARS:
            return best, best_tokens, cut_count
        limit = max(MIN_KEPT_TOOL_RESULT_CHARS, limit // 2)
