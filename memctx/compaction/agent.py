"""The agent's own compaction: when the context nears the window, seed 001's staged summary.

This is the compaction an agent loop runs when its transcript nears the window, the way
coding agents do today: the newest messages up to :data:`TAIL_SHARE` of the window stay
verbatim, the older part (after the system prompt) is replaced by one ``[Context compacted]
…`` user message written by :func:`~memctx.compaction.compact_history` (staged summaries,
fallback ladder, chunks that never split a tool pair), and a previous summary is part of
what gets summarised (a rolling summary). It triggers at ``window - reserve`` with
``reserve = min(compaction.reserveTokensFloor, window // 4)``: OpenClaw's reserve, capped so
that small windows keep three quarters for history.

memctx's hooks sit around it: the ``memory-context`` strategy of the harness calls
``on_before_compact`` with :func:`archivable` of what the summary replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memctx.messages import is_compaction_summary, is_recalled_block

from .budget import TAIL_SHARE, CompactionError, compaction_reserve
from .guard import LoopGuard
from .history import CompactionResult, compact_history
from .setup import CompactionSetup

__all__ = ["TAIL_SHARE", "AgentCompactor", "archivable", "compaction_reserve"]

Messages = list[dict[str, Any]]


def archivable(messages: Sequence[dict[str, Any]]) -> Messages:
    """``messages`` without recall blocks and compaction summaries: what a compaction
    replaces that memctx has not archived yet (what ``on_before_compact`` receives)."""
    return [m for m in messages if not is_recalled_block(m) and not is_compaction_summary(m)]


class AgentCompactor:
    """An agent's own compaction: seed 001's staged summary when the context nears the window.

    Due when the transcript passes ``window - reserve``; :func:`~memctx.compaction.compact_history`
    then replaces the old part (after the system prompt) by one ``[Context compacted] …``
    message, the newest quarter of the window kept verbatim and an earlier summary summarised
    again (a rolling summary). A compaction that cannot fit (:class:`CompactionError`) or
    whose summariser fails past every fallback changes nothing: it is counted in
    :attr:`failures` with its reason in :attr:`last_error`, and the caller goes on with the
    history it had.

    :meth:`maybe_compact` is the agent loop's entry: it asks the :class:`LoopGuard` first,
    so no configuration compacts on every turn (a compaction that leaves the context over
    the threshold less the guard's margin makes the next one wait, longer each time), and
    records every compaction and failure in it (:meth:`stats`). A context that would not fit
    the window at all is urgent: after an effective compaction it need not wait out the
    spacing.

    Args:
        setup: The client that writes the summaries (give it no disk cache: its prompts
            hold the unredacted history), the config (``compaction`` gives the reserve,
            ratios, margin, mode and limits), the window, the prompt, and the counter and
            anatomy cache shared with the caller.
        guard: The loop guard to share with the session's other triggers; ``None`` makes
            one from ``setup.config``.
    """

    def __init__(self, setup: CompactionSetup, *, guard: LoopGuard | None = None) -> None:
        self.setup = setup
        self.guard = guard if guard is not None else LoopGuard.from_config(setup.config)
        self.failures = 0
        self.last_error = ""

    @property
    def window(self) -> int:
        """The conversation's context window in tokens."""
        return self.setup.window

    @property
    def reserve(self) -> int:
        """Tokens kept free: ``min(compaction.reserveTokensFloor, window // 4)``."""
        return self.setup.reserve

    @property
    def threshold(self) -> int:
        """``window - reserve``: past it a transcript is compacted."""
        return self.window - self.reserve

    def due(self, tokens: int) -> bool:
        """Whether a transcript of ``tokens`` tokens must be compacted now."""
        return tokens > self.threshold

    def maybe_compact(
        self, transcript: Sequence[dict[str, Any]], tokens: int, *, turn: int
    ) -> CompactionResult | None:
        """Compact at the agent loop's ``turn`` if due and the loop guard allows it.

        Returns:
            The result, or ``None`` when nothing changed: not due, deferred by the guard
            (counted there), nothing to summarise, or failed (:attr:`failures`).
        """
        if not self.due(tokens):
            return None
        # Over the window the call itself would fail (an overflow, not a threshold): urgent.
        urgent = tokens > self.window
        if not self.guard.admit(turn, urgent=urgent).allowed:
            return None
        before = self.failures
        result = self.compact(transcript)
        if result is not None:
            self.guard.record(turn, tokens_after=result.tokens_after, threshold=self.threshold)
        elif self.failures > before:
            self.guard.record_failure(turn, self.last_error)
        return result

    def stats(self) -> dict[str, int]:
        """The loop guard's counters (compactions, deferred, ineffective, failed, ...)."""
        return self.guard.stats()

    def compact(
        self, transcript: Sequence[dict[str, Any]], instructions: str | None = None
    ) -> CompactionResult | None:
        """The compacted transcript, or ``None`` when nothing changed (nothing old enough to
        summarise, or the compaction failed: see :attr:`failures`)."""
        try:
            result = compact_history(transcript, self.setup, instructions=instructions)
        except CompactionError as exc:
            self.failures += 1
            self.last_error = str(exc)
            return None
        return result if result.compacted else None
