"""Measure token counters against what a provider actually billed.

Claude Code transcripts record, for every API call, ``usage.input_tokens +
cache_read_input_tokens + cache_creation_input_tokens``: the exact size of the context the
model received. A transcript does not contain the system prompt and tool definitions, which
are a constant per session (~18-26K tokens for Claude Code), so two figures are reported:

- **calibrated error**: the constant is taken from the session's first call (reported minus
  counted) and added to every later count; the error is then ``(counted + constant -
  reported) / reported`` at every later call.
- **growth ratio**: ``(counted_last - counted_first) / (reported_last - reported_first)``,
  i.e. how the counter scales the conversation itself, free of the unknown constant.

After a compaction the context restarts from Claude Code's summary message, so calls after
the boundary are counted from the summary on, with the constant re-taken from the first call
after it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .tokens import TokenCounter

__all__ = ["CounterError", "measure_counter"]


@dataclass(frozen=True)
class CounterError:
    """How far one counter is from the provider's figures on one transcript."""

    source: str
    counter: str
    calls: int
    mean_abs_error: float  # fraction of the reported context, after calibration
    median_abs_error: float
    p90_abs_error: float
    bias: float  # mean signed error: > 0 means the counter over-counts
    growth_ratio: float  # counted growth / reported growth over each segment


def _segments(n_messages: int, boundary: int | None, summary: int | None) -> list[tuple[int, int]]:
    """(context start, segment end) pairs: before and after a compaction."""
    if boundary is None:
        return [(0, n_messages)]
    start_after = summary if summary is not None else boundary
    return [(0, boundary), (start_after, n_messages)]


def measure_counter(
    messages: Sequence[Any],
    usage: dict[int, int],
    counter: TokenCounter,
    *,
    source: str,
    compaction_boundary: int | None = None,
    compact_summary: int | None = None,
    label: str | None = None,
) -> CounterError | None:
    """Compare ``counter`` with reported context sizes.

    Args:
        messages: The transcript's messages in order.
        usage: Assistant message index -> reported context tokens of the call that produced
            it (its context is every message before it, from the segment start).
        counter: The counter to judge.
        source: Name for the report.
        compaction_boundary: Index of the first message after a compaction, if any.
        compact_summary: Index of the compaction summary message, if any.
        label: Counter name in the report (defaults to its model or ``estimate``).

    Returns:
        The error figures, or ``None`` when the transcript has fewer than two usable calls.
    """
    per_message = [counter.count_message(m) for m in messages]
    errors: list[float] = []
    growths: list[tuple[int, int]] = []
    for start, end in _segments(len(messages), compaction_boundary, compact_summary):
        calls = sorted(i for i in usage if start < i < end and usage[i] > 0)
        if len(calls) < 2:
            continue
        counted = _prefix_sums(per_message, start)
        first = calls[0]
        constant = usage[first] - counted(first)
        for i in calls[1:]:
            reported = usage[i]
            errors.append((counted(i) + constant - reported) / reported)
        last = calls[-1]
        growths.append((counted(last) - counted(first), usage[last] - usage[first]))
    if not errors:
        return None
    absolute = sorted(abs(e) for e in errors)
    counted_growth = sum(g for g, _ in growths)
    reported_growth = sum(r for _, r in growths)
    return CounterError(
        source=source,
        counter=label or (counter.model or "estimate"),
        calls=len(errors),
        mean_abs_error=statistics.fmean(absolute),
        median_abs_error=statistics.median(absolute),
        p90_abs_error=absolute[min(len(absolute) - 1, int(0.9 * len(absolute)))],
        bias=statistics.fmean(errors),
        growth_ratio=counted_growth / reported_growth if reported_growth else float("nan"),
    )


def _prefix_sums(per_message: Sequence[int], start: int) -> Callable[[int], int]:
    sums = [0]
    for tokens in per_message[start:]:
        sums.append(sums[-1] + tokens)

    def counted(end: int) -> int:
        """Tokens of messages[start:end]."""
        return sums[end - start]

    return counted
