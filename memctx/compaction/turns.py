"""Seed 002's turn-based compactor: keep the last complete turns, summarise the rest.

- **Trigger** (:class:`TurnCompactor`, in :mod:`.turn_compactor`): the provider's last
  input tokens or the estimated history reach ``compaction.autoCompactThreshold``; never
  on turn 0; only when the :class:`LoopGuard` allows (spacing, back-off).
- **Cut** (:func:`plan_turn_cut`): a turn is a user message that is not a tool result and
  everything up to the next one. At most the last ``compaction.recentTurnBudget`` complete
  turns stay verbatim, and never all of them: the oldest is always summarised, as
  Meerkat's compactor does, so one long agent turn can be compacted too; a cut that would
  part a tool call from its result (a damaged history) moves back a turn.
- **Summary**: leading system messages stay; the rest before the cut goes through the
  seed-001 :class:`Summarizer` (staged, chunked, seed 002's handoff prompt), earlier
  summaries as the rolling summary, the output limited to ``compaction.maxSummaryTokens``,
  into one ``[Context compacted]`` message (:func:`summary_message`).
- **Failure is safe**: if no summary could be written (the ladder reached the plain
  notice) or anything raised, the history is returned unchanged, ``failed`` and why.
- **Discarded messages** are returned so that the caller can index them for
  ``memory_search``.

The caller's list and dicts are never modified; a deterministic client gives a
deterministic result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from memctx.messages import (
    COMPACTED_PREFIX,
    InfoCache,
    is_compaction_summary,
    is_recalled_block,
    leading_system_count,
    repair_with_sources,
    tool_spans,
)

from .budget import summary_message
from .chunking import is_turn_start
from .fit import fit_summary, min_summary_tokens
from .setup import CompactionSetup
from .summarize import FallbackLevel, Summarizer, SummaryUsage

__all__ = [
    "SUMMARY_ESTIMATE_SLACK",
    "TurnCompactionResult",
    "TurnCompactionStatus",
    "TurnCut",
    "compact_turns",
    "plan_turn_cut",
]

# The summary call is limited to maxSummaryTokens of the provider's tokens; memctx's
# estimate (3 characters a token) counts a reply at up to about 4/3 of that, so the summary
# message is cut only beyond half as much again (the same allowance the summariser gives a
# rolling summary).
SUMMARY_ESTIMATE_SLACK = 1.5


class TurnCompactionStatus(StrEnum):
    """What one call of the turn-based compactor did."""

    COMPACTED = "compacted"
    NOT_DUE = "not_due"  # turn 0, or under the threshold
    DEFERRED = "deferred"  # due, but the loop guard said wait
    NOTHING_TO_COMPACT = "nothing_to_compact"  # no more than recentTurnBudget turns
    FAILED = "failed"  # the summary could not be written: history unchanged


@dataclass(frozen=True, slots=True)
class TurnCut:
    """Where the turn-based compactor cuts a history (indices into it).

    Attributes:
        head: Number of leading system messages, kept in place.
        cut: First message of the kept turns (``len(messages)`` when none is kept).
        turns: Complete turns in the history (after the system messages).
        kept_turns: Complete turns from ``cut`` on.
    """

    head: int
    cut: int
    turns: int
    kept_turns: int


@dataclass(frozen=True, slots=True)
class TurnCompactionResult:
    """What the turn-based compactor did; ``messages`` is always the history to use next.

    Attributes:
        status: See :class:`TurnCompactionStatus`.
        reason: Why, in words (the trigger, the guard's reason, the error).
        error: What failed (``""`` unless ``status`` is ``FAILED``).
        messages: The new history, or a copy of the caller's list when nothing changed
            (the same dicts).
        summary: The summary text without the ``[Context compacted]`` prefix (``""``
            unless compacted).
        summary_message: The message holding it, or ``None``.
        kept: ``messages`` without the summary message.
        discarded: The messages the summary replaces, in order (for ``memory_search``).
        turn: The caller's turn number, when given.
        tokens_before: Tokens of the input (when :class:`TurnCompactor` did not compact:
            the estimate it was given).
        tokens_after: Tokens of ``messages``.
        level: The summariser's fallback step (``None`` unless a summary was written).
        usage: The LLM calls made (failed ones too).
        notes: Failures the summariser's fallback ladder met.
    """

    status: TurnCompactionStatus
    reason: str
    messages: list[Any]
    error: str = ""
    summary: str = ""
    summary_message: dict[str, Any] | None = None
    kept: list[Any] = field(default_factory=list)
    discarded: list[Any] = field(default_factory=list)
    turn: int | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    level: FallbackLevel | None = None
    usage: SummaryUsage = field(default_factory=SummaryUsage)
    notes: tuple[str, ...] = ()

    @classmethod
    def unchanged(
        cls, status: TurnCompactionStatus, reason: str, history: Sequence[Any], **fields: Any
    ) -> TurnCompactionResult:
        """A result that leaves ``history`` as it is (a new list of the caller's dicts)."""
        return cls(
            status=status, reason=reason, messages=list(history), kept=list(history), **fields
        )

    @property
    def compacted(self) -> bool:
        """Whether the history was replaced."""
        return self.status is TurnCompactionStatus.COMPACTED

    @property
    def failed(self) -> bool:
        """Whether a compaction was attempted and failed (the history is unchanged)."""
        return self.status is TurnCompactionStatus.FAILED

    @property
    def to_index(self) -> list[Any]:
        """``discarded`` without memctx's recalled blocks and earlier summaries: what is new
        to memory (the others were indexed, or summarised, before)."""
        return [m for m in self.discarded if not is_recalled_block(m) and not _summary(m)]


class _NoSummary(Exception):
    """The summariser reached only the plain notice: the compaction fails."""


def _summary(message: Any, infos: InfoCache | None = None) -> bool:
    return is_compaction_summary(message, infos.info(message) if infos is not None else None)


def plan_turn_cut(messages: Sequence[Any], recent_turns: int, infos: InfoCache) -> TurnCut:
    """Where to cut so that at most the last ``recent_turns`` complete turns stay verbatim.

    The budget is a maximum: at least the oldest turn is always summarised, so a history of
    one long turn (an agent working through a hundred tool calls on one request) can still
    be compacted. Meerkat's ``DefaultCompactor`` does the same (``recent_turn_budget.min(
    turns - 1)``): the seed's strict "keep the last 4 turns" compacted nothing until a
    fifth user message arrived, however large the history grew. With a single turn, or
    none, everything after the system messages is summarised.

    The cut is at the user message opening the oldest kept turn. When a tool call before it
    is answered at or after it (a damaged history), the cut moves back to the turn holding
    the call, so a kept turn never lacks its call's result or vice versa.

    Returns:
        The cut; ``cut == len(messages)`` when no turn is kept.
    """
    head = leading_system_count(messages, infos)
    starts = [i for i in range(head, len(messages)) if is_turn_start(messages[i], infos)]
    keep = min(recent_turns, max(len(starts) - 1, 0))
    cut = starts[-keep] if keep > 0 else len(messages)
    unit_of = {i: u for u in tool_spans(messages, infos) for i in u}
    while head < cut < len(messages) and unit_of[cut].start != cut:
        unit_start = unit_of[cut].start
        cut = max((s for s in starts if s <= unit_start), default=head)
    kept = sum(1 for s in starts if s >= cut)
    return TurnCut(head, cut, len(starts), kept)


def compact_turns(
    messages: Sequence[Any],
    setup: CompactionSetup,
    *,
    instructions: str | None = None,
    turn: int | None = None,
) -> TurnCompactionResult:
    """Compact ``messages`` now, seed 002's way (the trigger and guard are
    :class:`TurnCompactor`'s).

    Args:
        messages: The history, in any supported format; not modified.
        setup: The client that writes the summary, the config
            (``compaction.recentTurnBudget``, ``maxSummaryTokens``, the chunk ratios), the
            window (sizes the chunks; the output limit is at most ``window // 16``, as in
            seed 001) and the summariser's, the prompt, the counter and the anatomy cache.
        instructions: Extra focus for the summary.
        turn: The caller's turn number, returned in the result for indexing.

    Returns:
        The result. Once the arguments are valid it never raises: a failure is
        ``status == FAILED`` with the history unchanged.

    Raises:
        TypeError: ``messages`` is not a list of messages.
    """
    history = _as_history(messages)
    budget = setup.budget(keep_recent_tokens=0)
    counter, infos = setup.counter, setup.infos
    tokens_before = counter.count_messages(history)
    unchanged = dict(turn=turn, tokens_before=tokens_before, tokens_after=tokens_before)
    recent = setup.config.compaction.recent_turn_budget
    cut = plan_turn_cut(history, recent, infos)
    old = history[cut.head : cut.cut]
    fresh = [m for m in old if not is_recalled_block(m) and not _summary(m, infos)]
    if not fresh:
        why = (
            f"nothing to compact: {cut.turns} complete turns, the last {cut.kept_turns} are "
            "kept (compaction.recentTurnBudget) and nothing older but earlier summaries and "
            "recalled blocks is left to summarise"
        )
        return TurnCompactionResult.unchanged(
            TurnCompactionStatus.NOTHING_TO_COMPACT, why, history, **unchanged
        )
    summarizer = Summarizer(setup, budget)
    try:
        return _summarise_and_assemble(
            history, cut, old, fresh, summarizer, instructions, turn, tokens_before
        )
    except Exception as exc:  # seed 002: a failed compaction never mutates the session
        error = str(exc) if isinstance(exc, _NoSummary) else f"{type(exc).__name__}: {exc}"
        return TurnCompactionResult.unchanged(
            TurnCompactionStatus.FAILED,
            f"compaction failed, history unchanged: {error}",
            history,
            **unchanged,
            error=error,
            usage=summarizer.usage(),
            notes=tuple(summarizer.notes),
        )


def _summarise_and_assemble(
    history: list[Any],
    cut: TurnCut,
    old: list[Any],
    fresh: list[Any],
    summarizer: Summarizer,
    instructions: str | None,
    turn: int | None,
    tokens_before: int,
) -> TurnCompactionResult:
    counter, infos, budget = summarizer.counter, summarizer.infos, summarizer.budget
    earlier = [
        info.text.strip().removeprefix(COMPACTED_PREFIX).strip()
        for info in (infos.info(m) for m in old if _summary(m, infos))
    ]
    previous = "\n\n".join(t for t in earlier if t) or None
    staged = summarizer.in_stages(fresh, previous, instructions)
    if staged.level is FallbackLevel.NOTICE:
        # The ladder's last step is a notice that the history existed, not a summary of
        # it: replacing turns with it would lose them, so the compaction fails instead.
        cause = summarizer.notes[-1] if summarizer.notes else "the model wrote no summary"
        raise _NoSummary(f"no summary could be written ({cause})")
    limit = math.ceil(budget.summary_tokens * SUMMARY_ESTIMATE_SLACK)
    allowance = max(limit, min_summary_tokens(counter))
    text = fit_summary(staged.text, [], allowance, counter, budget)
    message = summary_message(text)
    skeleton = [*history[: cut.head], message, *history[cut.cut :]]
    # A no-op for the histories plan_turn_cut cuts cleanly; on a damaged one it removes
    # what cannot be kept (a result whose call was summarised), which is discarded too.
    repaired, sources = repair_with_sources(skeleton, cache=infos)
    at = sources.index(cut.head)
    placed = repaired[at]
    lost = sorted(set(range(len(skeleton))) - set(sources))
    discarded = old + [skeleton[i] for i in lost]
    return TurnCompactionResult(
        status=TurnCompactionStatus.COMPACTED,
        reason=(
            f"compacted {len(old)} messages into a summary; kept the last {cut.kept_turns} "
            f"of {cut.turns} turns"
        ),
        messages=repaired,
        summary=text,
        summary_message=placed,
        kept=[m for i, m in enumerate(repaired) if i != at],
        discarded=discarded,
        turn=turn,
        tokens_before=tokens_before,
        tokens_after=counter.count_messages(repaired),
        level=staged.level,
        usage=summarizer.usage(),
        notes=tuple(summarizer.notes),
    )


def _as_history(messages: Sequence[Any]) -> list[Any]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a list of message dicts, e.g. [{'role': 'user', ...}]")
    return list(messages)
