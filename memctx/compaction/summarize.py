"""Staged summaries with seed 001's fallback ladder, every call through :class:`LLMClient`.

- :meth:`Summarizer.in_stages` (``summarizeInStages``): a history of at least four messages
  that does not fit one chunk is split by token share into two parts, each summarised on
  its own, then merged with :data:`MERGE_SUMMARIES_INSTRUCTIONS`; the previous summary
  goes into the merge.
- :meth:`Summarizer.with_fallback` (``summarizeWithFallback``), the ladder: the full
  summary; if that fails, the summary of the small messages with the oversized ones noted
  (``[Large tool (~120K tokens) omitted from summary]``); if that fails too, the plain
  notice ``Context contained N messages (M oversized). …``. A ladder never raises.
- :meth:`Summarizer.summarize_chunks` (``summarizeChunks``): chunks of at most the adaptive
  chunk size, summarised in order, each call given the summary so far (rolling).

No request larger than the summariser's window is ever sent: each is measured first and
refused when its padded size plus the output limit would not fit, which the ladder treats
like a failed call. So an input too large for the summariser is chunked, and what no chunk
can carry is noted instead of sent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from memctx.llm import LLMError, LLMResponse

from .budget import CompactionBudget, compute_adaptive_chunk_ratio, is_oversized_for_summary
from .chunking import DEFAULT_PARTS, chunk_messages_by_max_tokens, split_messages_by_token_share
from .prompts import (
    MERGE_SUMMARIES_INSTRUCTIONS,
    SUMMARY_TASK,
    summary_request,
)
from .render import labelled, render_message
from .setup import CompactionSetup

__all__ = [
    "DEFAULT_SUMMARY_FALLBACK",
    "MIN_MESSAGES_FOR_SPLIT",
    "FallbackLevel",
    "StagedSummary",
    "Summarizer",
    "SummaryUsage",
    "fallback_notice",
]

DEFAULT_SUMMARY_FALLBACK = "No prior history."
MIN_MESSAGES_FOR_SPLIT = 4
# The rolling summary fed into the next call is a model reply of at most summary_tokens
# tokens; the estimate may count it higher than the provider (3 characters a token against
# about 4), so room is left for half as much again.
_PREVIOUS_ALLOWANCE = 1.5
_PART_KEY = "memctx-partial-summary"  # marks the synthetic messages of a merge step


class FallbackLevel(StrEnum):
    """Which step of seed 001's fallback ladder produced a summary (worst first is last)."""

    FULL = "full"
    PARTIAL = "partial"  # small messages summarised, oversized ones only noted
    NOTICE = "notice"  # no summary: the plain "Context contained N messages" notice


_ORDER = {FallbackLevel.FULL: 0, FallbackLevel.PARTIAL: 1, FallbackLevel.NOTICE: 2}


def worst(levels: Sequence[FallbackLevel]) -> FallbackLevel:
    """The lowest step of the ladder among ``levels`` (``FULL`` for none)."""
    return max(levels, key=_ORDER.__getitem__, default=FallbackLevel.FULL)


def fallback_notice(messages: int, oversized: int, previous: str | None = None) -> str:
    """Seed 001's last resort, with the earlier summary kept: a failed call must not erase
    what an earlier compaction knew."""
    text = (
        f"Context contained {messages} messages ({oversized} oversized). "
        "Summary unavailable due to size limits."
    )
    return f"{text}\n\nEarlier summary:\n{previous}" if previous else text


@dataclass(frozen=True, slots=True)
class StagedSummary:
    """A summary and the ladder step that produced it."""

    text: str
    level: FallbackLevel


@dataclass(frozen=True, slots=True)
class SummaryUsage:
    """The LLM calls of one compaction.

    Attributes:
        calls: Requests sent (cache hits included).
        failures: Sent requests that failed (after the client's own retries) or answered
            nothing.
        refused: Requests not sent because they would not fit the summariser's window.
        cache_hits: Requests answered from the response cache.
        prompt_tokens: Input tokens of the calls that reached the model.
        completion_tokens: Output tokens of those calls.
        cost_usd: What they cost (litellm's price table; 0 offline and on cache hits).
    """

    calls: int = 0
    failures: int = 0
    refused: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class _NotSummarized(Exception):
    """A request refused before sending, or a reply with no text: the ladder steps down."""


class Summarizer:
    """Writes the summaries of one compaction and counts its calls.

    Args:
        setup: The client every call goes through (cache, retries, usage and cost), the
            prompt, and the counter and anatomy cache shared with the caller.
        budget: Windows, limits and ratios of this compaction (:meth:`CompactionSetup.budget`).
    """

    def __init__(self, setup: CompactionSetup, budget: CompactionBudget) -> None:
        self.client = setup.client
        self.budget = budget
        self.counter = setup.counter
        self.infos = setup.infos
        self.prompt = setup.prompt
        self.notes: list[str] = []
        self._texts: dict[int, tuple[object, str, int]] = {}
        self._omitted: dict[int, str] = {}
        self._usage: dict[str, float] = {}

    # --- what the summariser sees -----------------------------------------------------------

    def text_of(self, message: Any) -> str:
        """The rendered text of ``message`` (a stub while it is omitted as oversized)."""
        return self._entry(message)[1]

    def tokens(self, message: Any) -> int:
        """Tokens of the rendered text: what chunking and the oversized test measure."""
        return self._entry(message)[2]

    def _entry(self, message: Any) -> tuple[object, str, int]:
        key = id(message)
        stub = self._omitted.get(key)
        if stub is not None:
            return message, stub, self.counter.count_text(stub) + 1
        hit = self._texts.get(key)
        if hit is not None and hit[0] is message:
            return hit
        if isinstance(message, Mapping) and _PART_KEY in message:
            text = labelled(str(message[_PART_KEY]), message.get("content", ""))
        else:
            text = render_message(self.infos.info(message))
        entry = (message, text, self.counter.count_text(text) + 1 if text else 0)
        self._texts[key] = entry  # holding the message keeps its id from being reused
        return entry

    # --- one call ----------------------------------------------------------------------------

    def generate(self, chunk: Sequence[Any], previous: str | None, instructions: str | None) -> str:
        """One summary call over ``chunk``, given the summary so far.

        Raises:
            LLMError: The call failed.
            _NotSummarized: The request would not fit (not sent), or the reply was empty.
        """
        conversation = "\n\n".join(t for t in (self.text_of(m) for m in chunk) if t)
        request = summary_request(
            conversation, prompt=self.prompt, previous_summary=previous, instructions=instructions
        )
        size = self.counter.count_messages(request)
        if not self.budget.request_fits(size):
            self._add(refused=1)
            raise _NotSummarized(
                f"a request of {size} tokens (+{self.budget.summary_tokens} output) does not "
                f"fit the summariser's window of {self.budget.summarizer_window}: not sent"
            )
        try:
            reply = self.client.complete(
                request, task=SUMMARY_TASK, max_tokens=self.budget.summary_tokens
            )
        except LLMError:
            self._add(calls=1, failures=1)
            raise
        self._count(reply)
        text = reply.text.strip()
        if not text:
            self._add(failures=1)
            raise _NotSummarized(f"{self.client.model} answered an empty summary")
        return text

    def _count(self, reply: LLMResponse) -> None:
        if reply.cached:
            self._add(calls=1, cache_hits=1)
        else:
            self._add(
                calls=1,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                cost_usd=reply.cost_usd,
            )

    def _add(self, **amounts: float) -> None:
        for name, amount in amounts.items():
            self._usage[name] = self._usage.get(name, 0) + amount

    def usage(self) -> SummaryUsage:
        """The calls so far."""
        u = self._usage
        ints = ("calls", "failures", "refused", "cache_hits", "prompt_tokens")
        counts = {name: int(u.get(name, 0)) for name in (*ints, "completion_tokens")}
        return SummaryUsage(**counts, cost_usd=float(u.get("cost_usd", 0.0)))

    # --- seed 001's three functions ----------------------------------------------------------

    def max_chunk_tokens(
        self, messages: Sequence[Any], previous: str | None, instructions: str | None
    ) -> int:
        """The adaptive chunk size, no larger than what one request can still carry."""
        b = self.budget
        ratio = compute_adaptive_chunk_ratio(
            messages,
            b.summarizer_window,
            count=self.tokens,
            base_ratio=b.base_chunk_ratio,
            min_ratio=b.min_chunk_ratio,
            safety_margin=b.safety_margin,
        )
        room = self.request_room(previous, instructions)
        return max(1, min(math.floor(b.summarizer_window * ratio), room))

    def request_room(self, previous: str | None, instructions: str | None) -> int:
        """Tokens of conversation one request can carry beside the prompt and a rolling
        summary (the caller's ``previous``, or a reply of the output limit)."""
        overhead = self.counter.count_messages(
            summary_request("", prompt=self.prompt, previous_summary="x", instructions=instructions)
        )
        rolling = math.ceil(self.budget.summary_tokens * _PREVIOUS_ALLOWANCE)
        previous_tokens = max(self.counter.count_text(previous or ""), rolling)
        return self.budget.input_room() - overhead - previous_tokens

    def summarize_chunks(
        self,
        messages: Sequence[Any],
        previous: str | None,
        instructions: str | None,
        max_chunk: int,
    ) -> str:
        """The rolling summary over chunks of at most ``max_chunk`` tokens (raises on failure)."""
        summary = previous
        chunks = chunk_messages_by_max_tokens(
            messages, max_chunk, count=self.tokens, infos=self.infos
        )
        for chunk in chunks:
            if any(self.text_of(m) for m in chunk):  # nothing readable: no call
                summary = self.generate(chunk, summary, instructions)
        return summary or DEFAULT_SUMMARY_FALLBACK

    def with_fallback(
        self,
        messages: Sequence[Any],
        previous: str | None,
        instructions: str | None,
        max_chunk: int,
    ) -> StagedSummary:
        """The fallback ladder over ``messages``: full, small-only with notes, notice."""
        if not messages:
            return StagedSummary(previous or DEFAULT_SUMMARY_FALLBACK, FallbackLevel.FULL)
        try:
            text = self.summarize_chunks(messages, previous, instructions, max_chunk)
            return StagedSummary(text, FallbackLevel.FULL)
        except (LLMError, _NotSummarized) as exc:
            self.notes.append(f"full summary of {len(messages)} messages failed: {exc}")
        # Seed 001 leaves out messages over half the summariser's window; memctx also leaves
        # out any that no request could carry (small windows, long prompts).
        oversized = self.oversized(messages, previous, instructions)
        # Nothing oversized means the same request again: it would fail the same way.
        if oversized and len(oversized) < len(messages):
            notes = [self._omission_note(m) for m in oversized]
            # Each oversized message stays in place as a one-line stub, so its call or
            # result is still summarised beside it.
            self._omitted = {id(m): note for m, note in zip(oversized, notes, strict=True)}
            try:
                text = self.summarize_chunks(messages, previous, instructions, max_chunk)
                return StagedSummary(f"{text}\n\n" + "\n".join(notes), FallbackLevel.PARTIAL)
            except (LLMError, _NotSummarized) as exc:
                self.notes.append(f"summary without the oversized messages failed: {exc}")
            finally:
                self._omitted = {}
        notice = fallback_notice(len(messages), len(oversized), previous)
        return StagedSummary(notice, FallbackLevel.NOTICE)

    def oversized(
        self, messages: Sequence[Any], previous: str | None, instructions: str | None
    ) -> list[Any]:
        """The messages of ``messages`` too large to summarise: over half the summariser's
        window (seed 001), or more than one request can carry beside the prompt."""
        b = self.budget
        room = self.request_room(previous, instructions)
        return [
            m
            for m in messages
            if self.tokens(m) > room
            or is_oversized_for_summary(
                self.tokens(m), b.summarizer_window, safety_margin=b.safety_margin
            )
        ]

    def _omission_note(self, message: Any) -> str:
        role = self.infos.info(message).role or "message"
        tokens = self.tokens(message)
        size = f"{round(tokens / 1000)}K" if tokens >= 1000 else str(tokens)
        return f"[Large {role} (~{size} tokens) omitted from summary]"

    def in_stages(
        self,
        messages: Sequence[Any],
        previous: str | None = None,
        instructions: str | None = None,
    ) -> StagedSummary:
        """Seed 001's staged summary: split, summarise the parts, merge; never raises."""
        if not messages:
            return StagedSummary(previous or DEFAULT_SUMMARY_FALLBACK, FallbackLevel.FULL)
        max_chunk = self.max_chunk_tokens(messages, previous, instructions)
        total = sum(self.tokens(m) for m in messages)
        if len(messages) < MIN_MESSAGES_FOR_SPLIT or total <= max_chunk:
            return self.with_fallback(messages, previous, instructions, max_chunk)
        parts = split_messages_by_token_share(
            messages, DEFAULT_PARTS, count=self.tokens, infos=self.infos
        )
        if len(parts) <= 1:
            return self.with_fallback(messages, previous, instructions, max_chunk)
        partials = [self.with_fallback(part, None, instructions, max_chunk) for part in parts]
        levels = [p.level for p in partials]
        if all(level is FallbackLevel.NOTICE for level in levels):
            # No part was summarised: a merge of the parts' notices would count them as
            # "messages" and say nothing; the notice covers the whole history instead.
            oversized = self.oversized(messages, None, instructions)
            notice = fallback_notice(len(messages), len(oversized), previous)
            return StagedSummary(notice, FallbackLevel.NOTICE)
        merge_input = [
            {"role": "user", "content": p.text, _PART_KEY: _part_label(i, len(partials))}
            for i, p in enumerate(partials)
        ]
        merge_instructions = MERGE_SUMMARIES_INSTRUCTIONS
        if instructions and instructions.strip():
            merge_instructions += f"\n\nAdditional focus:\n{instructions.strip()}"
        merge_chunk = self.max_chunk_tokens(merge_input, previous, merge_instructions)
        merged = self.with_fallback(merge_input, previous, merge_instructions, merge_chunk)
        if merged.level is FallbackLevel.NOTICE:
            # The merge failed but a part did not: the parts' summaries (and notices), in
            # order, beat a notice that would count the partial summaries as "messages".
            joined = "\n\n".join(p.text for p in partials)
            if previous:
                joined = f"{previous}\n\n{joined}"
            return StagedSummary(joined, worst([*levels, FallbackLevel.PARTIAL]))
        return StagedSummary(merged.text, worst([*levels, merged.level]))


def _part_label(index: int, total: int) -> str:
    if index == 0:
        return f"Partial summary 1 of {total}: oldest messages"
    if index == total - 1:
        return f"Partial summary {total} of {total}: most recent messages"
    return f"Partial summary {index + 1} of {total}"
