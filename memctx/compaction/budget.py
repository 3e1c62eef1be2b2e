"""Token budgets of seed 001's compaction: chunk ratios, oversized messages, the call limits.

OpenClaw sizes everything from the context window: a summary chunk takes at most
``BASE_CHUNK_RATIO`` (40 %) of it, less when messages are large (the adaptive ratio, down
to ``MIN_CHUNK_RATIO``, 15 %), every estimate is padded by ``SAFETY_MARGIN`` (20 %), and a
single message over half the window is too large to summarise at all. The defaults are the
seed's; :class:`CompactionBudget` reads the configured values (``compaction.baseChunkRatio``,
``minChunkRatio``, ``safetyMargin``, ``maxHistoryShare``, ``mode``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.errors import MemctxError
from memctx.messages import COMPACTED_PREFIX, estimate_message_tokens

__all__ = [
    "BASE_CHUNK_RATIO",
    "MIN_CHUNK_RATIO",
    "OVERSIZED_SHARE",
    "SAFETY_MARGIN",
    "TAIL_SHARE",
    "CompactionBudget",
    "CompactionError",
    "compaction_reserve",
    "compute_adaptive_chunk_ratio",
    "is_oversized_for_summary",
    "summary_message",
    "summary_token_limit",
]

BASE_CHUNK_RATIO = 0.4
MIN_CHUNK_RATIO = 0.15
SAFETY_MARGIN = 1.2
# A message whose padded size exceeds this share of the summariser's window cannot be
# summarised safely (seed 001 ``isOversizedForSummary``).
OVERSIZED_SHARE = 0.5
# After a compaction the newest messages up to this share of the window stay verbatim.
TAIL_SHARE = 0.25
# The adaptive ratio starts to shrink when the padded average message exceeds this share.
_LARGE_AVERAGE_SHARE = 0.1


class CompactionError(MemctxError):
    """A compaction cannot produce a history that fits its target; nothing was changed.

    The message names the part that does not fit (the system prompt, the kept tail) and
    what to do about it (a larger window, truncating oversized tool results first).
    """


def compaction_reserve(config: MemoryContextConfig, window: int) -> int:
    """Tokens kept free by agent compaction: ``min(compaction.reserveTokensFloor, window//4)``."""
    return min(config.compaction.reserve_tokens_floor, window // 4)


def summary_token_limit(config: MemoryContextConfig, window: int) -> int:
    """Output limit of one summary call: ``compaction.maxSummaryTokens``, at most window/16.

    The cap keeps a summary from taking a large share of small windows (1/16 of 200K is
    12,500, above the 4,096 default, so real windows get the configured value).
    """
    return max(min(config.compaction.max_summary_tokens, window // 16), 1)


def summary_message(text: str) -> dict[str, Any]:
    """The message a compaction leaves in place of the history it summarised.

    A user message starting with :data:`memctx.messages.COMPACTED_PREFIX` (seed 002's
    ``[Context compacted]``), which :func:`memctx.messages.is_compaction_summary` knows.
    """
    return {"role": "user", "content": f"{COMPACTED_PREFIX} {text}"}


def compute_adaptive_chunk_ratio(
    messages: Sequence[Any],
    window: int,
    *,
    count: Callable[[Any], int] = estimate_message_tokens,
    base_ratio: float = BASE_CHUNK_RATIO,
    min_ratio: float = MIN_CHUNK_RATIO,
    safety_margin: float = SAFETY_MARGIN,
) -> float:
    """The share of ``window`` one summary chunk may take, smaller when messages are large.

    Seed 001's ``computeAdaptiveChunkRatio``: ``base_ratio`` while the padded average message
    stays under 10 % of the window; above, the ratio shrinks by twice the average's share,
    never below ``min_ratio``. Large messages thus make smaller chunks, so that one chunk
    plus the prompt and the previous summary still fits the summariser.

    Args:
        messages: The messages to be summarised.
        window: The summariser's context window in tokens (> 0).
        count: Token count of one message.
        base_ratio: Ratio for ordinary messages (``compaction.baseChunkRatio``).
        min_ratio: Floor of the ratio (``compaction.minChunkRatio``).
        safety_margin: Padding of the estimate (``compaction.safetyMargin``).

    Returns:
        A ratio in ``[min_ratio, base_ratio]``.
    """
    _check_window(window)
    if not messages:
        return base_ratio
    average = sum(count(m) for m in messages) / len(messages)
    average_share = average * safety_margin / window
    if average_share > _LARGE_AVERAGE_SHARE:
        reduction = min(average_share * 2, base_ratio - min_ratio)
        return max(min_ratio, base_ratio - reduction)
    return base_ratio


def is_oversized_for_summary(
    tokens: int, window: int, *, safety_margin: float = SAFETY_MARGIN
) -> bool:
    """Whether a message of ``tokens`` tokens is too large to summarise in ``window``.

    Seed 001: a message whose padded size exceeds half the window is left out of the
    summary and only noted (the second step of the fallback ladder).
    """
    _check_window(window)
    return tokens * safety_margin > window * OVERSIZED_SHARE


def _check_window(window: int) -> None:
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ValueError(
            f"window must be a positive number of tokens, got {window!r}: pass the model's "
            "context window (e.g. 200000)"
        )


@dataclass(frozen=True, slots=True)
class CompactionBudget:
    """Every size a compaction works with, derived once from the config and the window.

    Attributes:
        window: Context window of the conversation being compacted.
        summarizer_window: Context window of the model writing the summary; no request to it
            (input plus output limit, input padded by ``safety_margin``) exceeds this.
        target_tokens: The compacted history is at most this large:
            ``window - min(compaction.reserveTokensFloor, window // 4)``, the point at which
            the agent compacts (:func:`memctx.compaction.compaction_reserve`).
        keep_recent_tokens: The newest messages up to this many tokens stay verbatim.
        summary_tokens: Output limit of one summary call (:func:`summary_token_limit`).
        max_history_share: ``compaction.maxHistoryShare``.
        base_chunk_ratio: ``compaction.baseChunkRatio``.
        min_chunk_ratio: ``compaction.minChunkRatio``.
        safety_margin: ``compaction.safetyMargin``.
        safeguard: ``compaction.mode == "safeguard"``: tool failures, file lists and history
            pruning are added.
    """

    window: int
    summarizer_window: int
    target_tokens: int
    keep_recent_tokens: int
    summary_tokens: int
    max_history_share: float = 0.5
    base_chunk_ratio: float = BASE_CHUNK_RATIO
    min_chunk_ratio: float = MIN_CHUNK_RATIO
    safety_margin: float = SAFETY_MARGIN
    safeguard: bool = False

    @classmethod
    def from_config(
        cls,
        config: MemoryContextConfig,
        window: int,
        *,
        summarizer_window: int | None = None,
        keep_recent_tokens: int | None = None,
    ) -> CompactionBudget:
        """The budget for compacting a ``window``-token context under ``config``.

        Args:
            config: Its ``compaction`` section gives ratios, margin, share, mode and limits.
            window: The conversation's context window in tokens.
            summarizer_window: The summarising model's window; ``None`` means ``window``
                (the agent summarises with its own model).
            keep_recent_tokens: Tokens of newest messages kept verbatim; ``None`` means a
                quarter of the window, as the agent's own compactor keeps.

        Raises:
            ValueError: A window is not a positive int, or ``keep_recent_tokens`` < 0.
        """
        _check_window(window)
        sw = window if summarizer_window is None else summarizer_window
        _check_window(sw)
        keep = int(window * TAIL_SHARE) if keep_recent_tokens is None else keep_recent_tokens
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValueError(
                f"keep_recent_tokens must be an int >= 0, got {keep_recent_tokens!r}: "
                "pass how many tokens of the newest messages to keep verbatim"
            )
        section = config.compaction
        return cls(
            window=window,
            summarizer_window=sw,
            target_tokens=window - compaction_reserve(config, window),
            keep_recent_tokens=keep,
            summary_tokens=summary_token_limit(config, min(window, sw)),
            max_history_share=section.max_history_share,
            base_chunk_ratio=section.base_chunk_ratio,
            min_chunk_ratio=section.min_chunk_ratio,
            safety_margin=section.safety_margin,
            safeguard=section.mode == "safeguard",
        )

    def request_fits(self, input_tokens: int) -> bool:
        """Whether a request of ``input_tokens`` plus the output limit fits the summariser."""
        padded = math.ceil(input_tokens * self.safety_margin)
        return padded + self.summary_tokens <= self.summarizer_window

    def input_room(self) -> int:
        """Most input tokens one summary request may carry (before the padding)."""
        room = (self.summarizer_window - self.summary_tokens) / self.safety_margin
        return max(0, math.floor(room))
