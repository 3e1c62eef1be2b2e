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

:func:`fit_usage` turns the same figures into a conversion, ``provider ≈ unseen + scale x
counted``, fitted by least squares over the calls before any compaction, so a replay can
state a window in the provider's tokens (``memctx replay --window 200000`` on a Claude Code
session) and run the strategies at the equivalent budget of the counter they use.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .tokens import TokenCounter

__all__ = ["CounterError", "UsageFit", "fit_usage", "measure_counter"]


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


@dataclass(frozen=True)
class UsageFit:
    """``provider tokens ≈ unseen + scale x counted tokens`` for one transcript's calls.

    Attributes:
        unseen: Tokens every request carried that the transcript does not hold (system
            prompt, tool definitions): the fit's intercept.
        scale: Provider tokens per counted token of the conversation (the tokenizers' ratio).
        calls: Calls the fit is made from.
        max_error: The largest ``|fitted - reported|`` over those calls, in provider tokens.
    """

    unseen: int
    scale: float
    calls: int
    max_error: int

    def to_provider(self, counted: int) -> int:
        """The provider's size of a request whose transcript part counts ``counted``."""
        return round(self.unseen + self.scale * counted)

    def to_counted(self, provider: int) -> int:
        """The counted size of the transcript part of a ``provider``-token request."""
        return max(0, int((provider - self.unseen) / self.scale))

    def describe(self) -> str:
        """One line: ``provider ≈ 26,306 + 1.111 x counted (102 calls, max error 1,948)``."""
        return (
            f"provider ≈ {self.unseen:,} + {self.scale:.3f} x counted "
            f"({self.calls} calls, max error {self.max_error:,})"
        )


def fit_usage(
    messages: Sequence[Any],
    usage: dict[int, int],
    counter: TokenCounter,
    *,
    compaction_boundary: int | None = None,
) -> UsageFit | None:
    """Fit ``provider ≈ unseen + scale x counted`` over the calls ``usage`` reports.

    Each call's ``counted`` is the transcript's messages before it. Only calls before a
    compaction are used: after one, Claude Code's requests also carry what it re-attached
    (files read again, the todo list), which the transcript does not record, so they would
    inflate the unseen part.

    Args:
        messages: The transcript's messages in order.
        usage: Assistant message index -> reported context tokens of its call.
        counter: The counter whose units ``counted`` is in.
        compaction_boundary: Index of the first message after a compaction, if any.

    Returns:
        The fit, or ``None`` with fewer than two calls of different sizes, or a fit that
        makes no sense (a scale that is not positive, a negative unseen part).
    """
    end = len(messages) if compaction_boundary is None else compaction_boundary
    counted = _prefix_sums([counter.count_message(m) for m in messages[:end]], 0)
    calls = sorted(i for i in usage if 0 < i < end and usage[i] > 0)
    xs = [float(counted(i)) for i in calls]
    ys = [float(usage[i]) for i in calls]
    if len(xs) < 2 or max(xs) == min(xs):
        return None
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    scale = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    unseen = mean_y - scale * mean_x
    if scale <= 0 or unseen < 0:
        return None
    worst = max(abs(unseen + scale * x - y) for x, y in zip(xs, ys, strict=True))
    return UsageFit(round(unseen), scale, len(xs), round(worst))


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
