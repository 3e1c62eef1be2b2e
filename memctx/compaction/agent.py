"""The agent's own compaction: replace the old part of a transcript with one summary message.

This is the small compactor an agent loop runs when its transcript nears the window, the
way coding agents do today: the newest messages up to :data:`TAIL_SHARE` of the window stay
verbatim, the older part (after the system prompt) is summarized by an LLM into one
``[Context compacted] …`` user message, and a previous summary is part of what gets
summarized (a rolling summary). It triggers at ``window - reserve`` with ``reserve =
min(compaction.reserveTokensFloor, window // 4)``: OpenClaw's reserve, capped so that small
windows keep three quarters for history.

memctx's hooks sit around it (the ``memory-context`` strategy of the harness calls
``on_before_compact`` with :attr:`CompactionPlan.fresh` before the summary replaces them).
The staged, chunked compaction of seed 001 and the turn-based compactor of seed 002 will
live beside it in this package.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.llm import LLMClient, task_marker
from memctx.messages import (
    COMPACTED_PREFIX,
    InfoCache,
    is_compaction_summary,
    is_recalled_block,
    leading_system_count,
    repair_tool_pairing,
    token_text,
)

from .budget import TAIL_SHARE, compaction_reserve, summary_message, summary_token_limit

__all__ = [
    "TAIL_SHARE",
    "AgentCompactor",
    "CompactionPlan",
    "compaction_reserve",
    "tail_start",
]

Messages = list[dict[str, Any]]

_INSTRUCTION = (
    "Summarize this coding session so that the work can continue: "
    "decisions, configuration, open tasks, files touched, errors."
)


def tail_start(
    transcript: Sequence[dict[str, Any]],
    head: int,
    budget: int,
    count: Callable[[dict[str, Any]], int],
    infos: InfoCache,
) -> int:
    """Index of the first message of the verbatim tail kept by a compaction.

    The newest messages within ``budget`` tokens, extended backwards (never forwards, the
    latest request must stay) to the nearest message that is not a tool result, so that no
    kept result loses its call. Returns ``len(transcript)`` when nothing fits and no earlier
    boundary exists after ``head``.
    """
    used = 0
    start = len(transcript)
    while start > head + 1:  # at least one message is left to compact
        size = count(transcript[start - 1])
        if used + size > budget:
            break
        used += size
        start -= 1
    while start < len(transcript) and start > head + 1:
        if not infos.info(transcript[start]).has_tool_results:
            break
        start -= 1
    return start


@dataclass(frozen=True)
class CompactionPlan:
    """Where a compaction cuts a transcript.

    Attributes:
        head: Leading system messages, kept in place.
        cut: First message of the verbatim tail.
        old: ``transcript[head:cut]``, what the summary replaces.
        fresh: ``old`` without recalled blocks and earlier summaries: what has not been
            archived yet (what ``on_before_compact`` receives).
    """

    head: int
    cut: int
    old: Messages
    fresh: Messages


class AgentCompactor:
    """Rolling-summary compaction with an LLM (``memctx/offline`` by default).

    Args:
        config: Reserve floor and ``compaction.maxSummaryTokens`` come from here.
        window: The context window in tokens.
        summarizer: The client that writes the summary. Give it no disk cache: its prompts
            hold the unredacted history.
        count: Token counter for one message.
        infos: Anatomy cache shared with the caller.
    """

    def __init__(
        self,
        config: MemoryContextConfig,
        window: int,
        summarizer: LLMClient,
        count: Callable[[dict[str, Any]], int],
        infos: InfoCache,
    ) -> None:
        self.window = window
        self.reserve = compaction_reserve(config, window)
        self.summarizer = summarizer
        self.summary_tokens = summary_token_limit(config, window)
        self._count = count
        self._infos = infos

    def due(self, tokens: int) -> bool:
        """Whether a transcript of ``tokens`` tokens must be compacted now."""
        return tokens > self.window - self.reserve

    def plan(self, transcript: Messages) -> CompactionPlan | None:
        """Where to cut, or ``None`` when nothing new is old enough to compact."""
        head = leading_system_count(transcript, self._infos)
        budget = int(self.window * TAIL_SHARE)
        cut = tail_start(transcript, head, budget, self._count, self._infos)
        old = transcript[head:cut]
        fresh = [m for m in old if not is_recalled_block(m) and not is_compaction_summary(m)]
        if not old or (not fresh and len(old) == 1):
            return None  # only the previous summary is old
        return CompactionPlan(head, cut, old, fresh)

    def apply(self, transcript: Messages, plan: CompactionPlan) -> Messages:
        """``transcript`` with ``plan.old`` replaced by one summary message, pairs repaired."""
        summary = summary_message(self.summarize(plan.old))
        kept = [*transcript[: plan.head], summary, *transcript[plan.cut :]]
        return repair_tool_pairing(kept, cache=self._infos)

    def summarize(self, old: Sequence[dict[str, Any]]) -> str:
        """The summary of ``old``; an earlier summary in it is an input (rolling)."""
        lines = []
        for message in old:
            kind = self._infos.info(message).kind
            text = token_text(message).strip()
            if is_compaction_summary(message):
                lines.append(f"previous summary: {text.removeprefix(COMPACTED_PREFIX).strip()}")
            elif text:
                lines.append(f"{kind.value}: {text}")
        prompt = f"{_INSTRUCTION}\n<conversation>\n" + "\n".join(lines) + "\n</conversation>"
        reply = self.summarizer.complete(
            [
                {"role": "system", "content": task_marker("summarize")},
                {"role": "user", "content": prompt},
            ],
            task="summarize",
            max_tokens=self.summary_tokens,
        )
        return reply.text.strip()
