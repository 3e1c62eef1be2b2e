"""Seed 001's compaction of a whole history: :func:`compact_history`.

The history is cut in three: the leading system messages (kept in place), the old part
(summarised) and the newest messages up to ``keep_recent_tokens`` (kept verbatim; the cut
never separates a tool call from its result). When the cut falls inside a turn, the turn's
first part is summarised on its own (the split-turn prefix). The old part is summarised in
stages with the fallback ladder (:class:`Summarizer`), the rolling previous summary going
in; in ``safeguard`` mode the history is first pruned to ``maxHistoryShare`` when the kept
part is large, with the summary of what was dropped fed in as the previous summary, and
the tool failures and file lists are appended. The result replaces the old part with one
``[Context compacted] …`` message and fits ``target_tokens``, or :class:`CompactionError`
says why it cannot; the caller's list and dicts are never modified.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memctx.messages import (
    COMPACTED_PREFIX,
    InfoCache,
    TokenCounter,
    is_compaction_summary,
    is_recalled_block,
    leading_system_count,
    repair_with_sources,
    tool_spans,
)

from .budget import CompactionBudget, CompactionError, summary_message
from .chunking import is_turn_start, prune_history_for_context_share, tail_start
from .fit import fit_summary, min_summary_tokens
from .prompts import TURN_PREFIX_INSTRUCTIONS
from .safeguard import (
    collect_file_operations,
    collect_tool_failures,
    compute_file_lists,
    format_file_operations,
    format_split_turn,
    format_tool_failures,
    parse_file_operations,
)
from .setup import CompactionSetup
from .summarize import FallbackLevel, StagedSummary, Summarizer, SummaryUsage, worst

__all__ = ["CompactionResult", "HistoryCut", "compact_history", "plan_cut"]


@dataclass(frozen=True, slots=True)
class HistoryCut:
    """Where a compaction cuts a history (indices into it).

    Attributes:
        head: Number of leading system messages, kept in place.
        turn_start: First message of the split turn's prefix; ``cut`` when the cut does not
            fall inside a turn.
        cut: First message of the verbatim tail (``len(messages)`` for none).
    """

    head: int
    turn_start: int
    cut: int

    @property
    def split_turn(self) -> bool:
        return self.turn_start < self.cut


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What :func:`compact_history` did.

    Attributes:
        messages: The new history: system messages, the summary message, the kept tail
            (pairs repaired; untouched messages are the caller's dicts).
        summary: The summary text (without the ``[Context compacted]`` prefix); ``""`` when
            nothing was compacted.
        summary_message: The message holding it, or ``None``.
        kept: The messages of ``messages`` other than the summary.
        dropped: The messages the summary replaces, in order.
        level: The lowest fallback step any part of the summary reached; ``None`` when
            nothing was compacted.
        split_turn: The cut fell inside a turn; its prefix is summarised apart.
        pruned_messages: Messages history pruning summarised separately (safeguard mode).
        tokens_before: Tokens of the input.
        tokens_after: Tokens of ``messages`` (at most ``target_tokens``).
        target_tokens: The budget the result fits.
        usage: The LLM calls made.
        notes: One line per failure the fallback ladder absorbed.
    """

    messages: list[Any]
    summary: str
    summary_message: dict[str, Any] | None
    kept: list[Any]
    dropped: list[Any]
    level: FallbackLevel | None
    split_turn: bool
    pruned_messages: int
    tokens_before: int
    tokens_after: int
    target_tokens: int
    usage: SummaryUsage
    notes: tuple[str, ...] = ()

    @property
    def compacted(self) -> bool:
        """Whether anything was replaced by a summary."""
        return self.summary_message is not None


def plan_cut(
    messages: Sequence[Any],
    budget: CompactionBudget,
    counter: TokenCounter,
    infos: InfoCache,
) -> HistoryCut:
    """Where to cut: the newest messages within ``budget.keep_recent_tokens`` stay verbatim.

    The agent's :func:`memctx.compaction.tail_start` picks the cut; it is then
    moved to the start of the tool unit it falls in (damaged histories), and forward, unit
    by unit, while the tail would leave less than ``budget.summary_tokens`` (at least the
    plain notice, :func:`memctx.compaction.min_summary_tokens`) for the summary within
    ``budget.target_tokens``. A cut at a message that does not open a user turn
    splits that turn; its prefix starts at the turn's user message.
    """
    n = len(messages)
    head = leading_system_count(messages, infos)
    cut = tail_start(messages, head, budget.keep_recent_tokens, counter.count_message, infos)
    units = tool_spans(messages, infos)
    unit_of = {i: u for u in units for i in u}
    if cut < n and unit_of[cut].start != cut:
        cut = max(head, unit_of[cut].start)  # as tail_start does: keep the call with it
    head_tokens = counter.count_messages(messages[:head])
    # Room for at least the plain notice: in small windows the output limit is smaller
    # than it, and a tail that leaves less would fail a compaction that could succeed.
    summary_room = max(budget.summary_tokens, min_summary_tokens(counter))
    max_tail = budget.target_tokens - head_tokens - summary_room
    tail_tokens = counter.count_messages(messages[cut:])
    while cut < n and tail_tokens > max_tail:
        unit = unit_of[cut]
        tail_tokens -= counter.count_messages(messages[unit.start : unit.stop])
        cut = unit.stop
    turn_start = cut
    if cut < n and not is_turn_start(messages[cut], infos):
        for i in range(cut - 1, head - 1, -1):
            if is_turn_start(messages[i], infos):
                turn_start = i
                break
    return HistoryCut(head=head, turn_start=turn_start, cut=cut)


def _earlier_summaries(
    old: Sequence[Any], previous_summary: str | None, infos: InfoCache
) -> str | None:
    """The rolling summary: the caller's, then the summary messages of the old part."""
    texts = [previous_summary.strip()] if previous_summary and previous_summary.strip() else []
    for message in old:
        info = infos.info(message)
        if is_compaction_summary(message, info):
            text = info.text.strip().removeprefix(COMPACTED_PREFIX).strip()
            if text:
                texts.append(text)
    return "\n\n".join(texts) or None


def compact_history(
    messages: Sequence[Any],
    setup: CompactionSetup,
    *,
    previous_summary: str | None = None,
    instructions: str | None = None,
    keep_recent_tokens: int | None = None,
) -> CompactionResult:
    """Replace the old part of ``messages`` with one summary message (seed 001).

    Args:
        messages: The history, in any supported format; not modified.
        setup: The client that writes the summaries, the config (``compaction`` gives the
            reserve, ratios, margin, share, mode and limits), the windows, the prompt, the
            counter and the anatomy cache.
        previous_summary: The summary of an earlier compaction, if the caller keeps it
            apart; summary messages inside the old part are used as well.
        instructions: Extra focus for the summary (a user's ``/compact`` text).
        keep_recent_tokens: Tokens of newest messages kept verbatim; ``None`` means a
            quarter of the window.

    Returns:
        The new history and what happened. When nothing is old enough to summarise and the
        history already fits, it is returned unchanged (``compacted`` is False).

    Raises:
        CompactionError: The result cannot fit ``window - reserve`` (system messages too
            large, or nothing left to summarise); the message says what to do.
        ValueError: ``keep_recent_tokens`` is not valid.
        TypeError: ``messages`` is not a list of messages.
    """
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a list of message dicts, e.g. [{'role': 'user', ...}]")
    budget = setup.budget(keep_recent_tokens)
    counter, infos = setup.counter, setup.infos
    history = list(messages)
    tokens_before = counter.count_messages(history)
    cut = plan_cut(history, budget, counter, infos)
    old = history[cut.head : cut.cut]
    fresh_ids = {
        id(m)
        for m in old
        if not is_recalled_block(m) and not is_compaction_summary(m, infos.info(m))
    }
    # Only recalled blocks and earlier summaries are old: nothing new to summarise. If the
    # history is still too large they are replaced all the same (the earlier summaries
    # carried forward, the recalled blocks dropped: they are recomputed every turn).
    if not old or (not fresh_ids and tokens_before <= budget.target_tokens):
        return _unchanged(history, tokens_before, budget, cut)
    summarizer = Summarizer(setup, budget)
    room = budget.target_tokens - tokens_before + counter.count_messages(old)
    if room < min_summary_tokens(counter):
        raise CompactionError(
            f"cannot compact: the system messages and the kept tail leave {room} tokens of the "
            f"target {budget.target_tokens} (window {budget.window} minus the reserve), too "
            "few for even the plain notice. Shorten the system prompt or use a model with a "
            "larger window"
        )
    earlier = _earlier_summaries(old, previous_summary, infos)
    previous = earlier
    to_summarize = [m for m in history[cut.head : cut.turn_start] if id(m) in fresh_ids]
    prefix = [m for m in history[cut.turn_start : cut.cut] if id(m) in fresh_ids]
    pieces: list[StagedSummary] = []
    pruned = 0
    if budget.safeguard:
        kept_tokens = tokens_before - counter.count_messages(old)
        share = budget.window * budget.max_history_share * budget.safety_margin
        if kept_tokens > share:
            result = prune_history_for_context_share(
                to_summarize,
                max_context_tokens=budget.window,
                max_history_share=budget.max_history_share,
                count=counter.count_message,
                infos=infos,
            )
            if result.dropped:
                dropped_summary = summarizer.in_stages(result.dropped, previous, instructions)
                pieces.append(dropped_summary)
                previous, to_summarize = dropped_summary.text, result.kept
                pruned = len(result.dropped)
                summarizer.notes.append(
                    f"history pruning: {pruned} older messages summarised first "
                    f"({result.dropped_chunks} chunks, {result.dropped_tokens} tokens)"
                )
    main = summarizer.in_stages(to_summarize, previous, instructions)
    pieces.append(main)
    sections: list[str] = []
    if prefix:
        turn = summarizer.in_stages(prefix, None, TURN_PREFIX_INSTRUCTIONS)
        pieces.append(turn)
        sections.append(format_split_turn(turn.text))
    if budget.safeguard:
        summarised = [m for m in old if id(m) in fresh_ids]
        sections.append(format_tool_failures(collect_tool_failures(summarised, infos)))
        # The earlier summaries' lists (the caller's and those inside the history), not
        # only ``previous``: history pruning replaces it with the dropped part's summary.
        ops = parse_file_operations(earlier or "")
        ops.update(parse_file_operations(previous or ""))
        ops.update(collect_file_operations(summarised, infos))
        sections.append(format_file_operations(*compute_file_lists(ops)))
    return _assemble(
        history, cut, budget, counter, infos, summarizer, main.text, sections, pieces, pruned
    )


def _assemble(
    history: list[Any],
    cut: HistoryCut,
    budget: CompactionBudget,
    counter: TokenCounter,
    infos: InfoCache,
    summarizer: Summarizer,
    main: str,
    sections: list[str],
    pieces: list[StagedSummary],
    pruned: int,
) -> CompactionResult:
    """Put the summary between head and tail, repair pairs, fit the summary to what is left."""
    placeholder = summary_message("")
    skeleton = [*history[: cut.head], placeholder, *history[cut.cut :]]
    repaired, sources = repair_with_sources(skeleton, cache=infos)
    at = next(i for i, m in enumerate(repaired) if m is placeholder)
    others = counter.count_messages(m for i, m in enumerate(repaired) if i != at)
    text = fit_summary(main, sections, budget.target_tokens - others, counter, budget)
    message = summary_message(text)
    repaired[at] = message
    # Tail messages repair had to drop (a result whose call was summarised) are replaced too.
    lost = set(range(len(skeleton))) - set(sources)
    dropped = history[cut.head : cut.cut] + [skeleton[i] for i in sorted(lost)]
    tokens_after = counter.count_messages(repaired)
    return CompactionResult(
        messages=repaired,
        summary=text,
        summary_message=message,
        kept=[m for m in repaired if m is not message],
        dropped=dropped,
        level=worst([p.level for p in pieces]),
        split_turn=cut.split_turn,
        pruned_messages=pruned,
        tokens_before=counter.count_messages(history),
        tokens_after=tokens_after,
        target_tokens=budget.target_tokens,
        usage=summarizer.usage(),
        notes=tuple(summarizer.notes),
    )


def _unchanged(
    history: list[Any], tokens: int, budget: CompactionBudget, cut: HistoryCut
) -> CompactionResult:
    if tokens > budget.target_tokens:
        where = "the system messages" if cut.cut <= cut.head else "the newest messages"
        raise CompactionError(
            f"cannot compact: {tokens} tokens exceed the target of {budget.target_tokens} "
            f"(window {budget.window} minus the reserve) and nothing older than {where} is "
            "left to summarise. Shorten the system prompt, truncate oversized tool results "
            "(seed 001's overflow recovery), or use a model with a larger window"
        )
    return CompactionResult(
        messages=list(history),
        summary="",
        summary_message=None,
        kept=list(history),
        dropped=[],
        level=None,
        split_turn=False,
        pruned_messages=0,
        tokens_before=tokens,
        tokens_after=tokens,
        target_tokens=budget.target_tokens,
        usage=SummaryUsage(),
    )
