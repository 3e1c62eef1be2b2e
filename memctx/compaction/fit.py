"""Fitting the summary message into what the kept messages leave of the target.

A model's reply is bounded in the provider's tokens, which the estimate may count higher;
the split-turn summary and the safeguard sections come on top. The summary text comes
first; a section is kept whole or not at all (a cut ``<modified-files>`` list would read
as complete), and is given up before the summary would shrink below half the room.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memctx.messages import TokenCounter

from .budget import CompactionBudget, CompactionError, summary_message
from .summarize import fallback_notice

__all__ = ["TRUNCATION_MARKER", "fit_summary", "min_summary_tokens"]

TRUNCATION_MARKER = "\n[... summary cut to fit the context window ...]"


def min_summary_tokens(counter: TokenCounter) -> int:
    """Tokens of the smallest summary message a compaction may leave: the plain notice."""
    return counter.count_message(summary_message(fallback_notice(99_999, 9_999)))


def _join(main: str, sections: Sequence[str]) -> str:
    return "\n\n".join([main, *sections])


def fit_summary(
    main: str,
    sections: Sequence[str],
    allowance: int,
    counter: TokenCounter,
    budget: CompactionBudget,
) -> str:
    """``main`` and ``sections`` joined, cut so that the summary message has at most
    ``allowance`` tokens.

    Args:
        main: The history summary.
        sections: Split-turn prefix, tool failures, file lists, in that priority; empty
            ones are skipped.
        allowance: Tokens the summary message may take.
        counter: The counter the budget is measured with.
        budget: For the error message.

    Returns:
        The summary text (without the ``[Context compacted]`` prefix).

    Raises:
        CompactionError: Not even a cut summary fits ``allowance``.
    """

    def size(text: str) -> int:
        return counter.count_message(summary_message(text))

    kept = [s for s in sections if s]
    while True:
        text = _join(main, kept)
        if size(text) <= allowance:
            return text
        without_main = size(_join("", kept)) if kept else 0
        if kept and allowance - without_main < allowance // 2:
            kept.pop()  # the lowest-priority section goes before the summary shrinks
            continue
        cut = _cut(main, kept, allowance, size)
        if cut is not None:
            return cut
        if not kept:
            raise CompactionError(
                f"cannot compact: {allowance} tokens are left for the summary within the "
                f"target of {budget.target_tokens} (window {budget.window} minus the "
                "reserve), too few for any summary. Shorten the system prompt, keep fewer "
                "recent tokens, or use a model with a larger window"
            )
        kept.pop()


def _cut(
    main: str, sections: Sequence[str], allowance: int, size: Callable[[str], int]
) -> str | None:
    """The longest prefix of ``main`` (plus the marker) that fits with ``sections``."""
    lo, hi = 0, len(main)
    best: str | None = None
    while lo <= hi:  # the size grows with the prefix: binary search its length
        mid = (lo + hi) // 2
        text = _join(main[:mid].rstrip() + TRUNCATION_MARKER, sections)
        if size(text) <= allowance:
            best, lo = text, mid + 1
        else:
            hi = mid - 1
    return best
