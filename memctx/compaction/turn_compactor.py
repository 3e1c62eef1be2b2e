"""Seed 002's compactor in an agent loop: the dual-threshold trigger, turn 0, the loop guard.

:class:`TurnCompactor` is called at every turn boundary, before the model call. It compacts
(:func:`compact_turns`) when the input tokens the provider reported for the last call, or
the estimated tokens of the history, reach ``compaction.autoCompactThreshold`` — never on
turn 0, and only when its :class:`LoopGuard` (shared with the session's other triggers)
allows it. Every compaction, and every failed one, is recorded in the guard, which spaces
the next one and backs off when compacting does not help.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .guard import LoopGuard
from .setup import CompactionSetup
from .turns import TurnCompactionResult, TurnCompactionStatus, compact_turns

__all__ = ["TurnCompactor"]


class TurnCompactor:
    """Seed 002's compactor for an agent loop: call :meth:`maybe_compact` at every turn
    boundary, before the model call.

    Args:
        setup: The client that writes the summaries, the config (the ``compaction``
            section: threshold, recent turns, summary limit, spacing), the windows, the
            prompt, and the counter and anatomy cache shared with the caller.
        guard: The loop guard to share with other triggers of the same session;
            ``None`` makes one from ``setup.config``.
    """

    def __init__(self, setup: CompactionSetup, *, guard: LoopGuard | None = None) -> None:
        self.setup = setup
        self.guard = guard if guard is not None else LoopGuard.from_config(setup.config)

    @property
    def threshold(self) -> int:
        """``compaction.autoCompactThreshold``."""
        return self.setup.config.compaction.auto_compact_threshold

    def due(self, turn: int, *, last_input_tokens: int | None, estimated_tokens: int) -> str | None:
        """Why a compaction is due at ``turn`` (the threshold reached), or ``None``.

        Seed 002's dual threshold; never on turn 0. The guard is not consulted here.
        """
        if turn == 0:
            return None
        threshold = self.threshold
        if last_input_tokens is not None and last_input_tokens >= threshold:
            return f"last input {last_input_tokens:,} tokens >= threshold {threshold:,}"
        if estimated_tokens >= threshold:
            return f"estimated history {estimated_tokens:,} tokens >= threshold {threshold:,}"
        return None

    def maybe_compact(
        self,
        messages: Sequence[Any],
        *,
        turn: int,
        last_input_tokens: int | None,
        estimated_tokens: int | None = None,
        instructions: str | None = None,
    ) -> TurnCompactionResult:
        """Compact ``messages`` if due at ``turn`` and the guard allows it.

        Args:
            messages: The history; not modified.
            turn: The agent loop's turn number, from 0.
            last_input_tokens: Input tokens the provider reported for the last call
                (``None`` before the first reply).
            estimated_tokens: The caller's estimate of the history; ``None`` counts it.
            instructions: Extra focus for the summary.

        Returns:
            The result; ``messages`` of it is the history to send. A compaction (or a
            failed one) is recorded in the guard.

        Raises:
            TypeError: ``messages`` is not a list of messages.
            ValueError: ``turn`` is negative or before the guard's last compaction.
        """
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise TypeError("messages must be a list of message dicts, e.g. [{'role': ...}]")
        history = list(messages)
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
            raise ValueError(f"turn must be an int >= 0, got {turn!r}: pass the loop's turn")
        estimate = estimated_tokens
        if estimate is None:
            estimate = self.setup.counter.count_messages(history)
        fields = dict(turn=turn, tokens_before=estimate, tokens_after=estimate)
        trigger = self.due(turn, last_input_tokens=last_input_tokens, estimated_tokens=estimate)
        if trigger is None:
            why = "never on turn 0" if turn == 0 else f"under the threshold {self.threshold:,}"
            return TurnCompactionResult.unchanged(
                TurnCompactionStatus.NOT_DUE, why, history, **fields
            )
        decision = self.guard.admit(turn)
        if not decision.allowed:
            return TurnCompactionResult.unchanged(
                TurnCompactionStatus.DEFERRED, decision.reason, history, **fields
            )
        result = compact_turns(history, self.setup, instructions=instructions, turn=turn)
        if result.compacted:
            self.guard.record(turn, tokens_after=result.tokens_after, threshold=self.threshold)
        elif result.failed:
            self.guard.record_failure(turn, result.error)
        return replace(result, reason=f"{trigger}: {result.reason}")

    def stats(self) -> dict[str, int]:
        """The guard's counters (see :meth:`LoopGuard.stats`)."""
        return self.guard.stats()
