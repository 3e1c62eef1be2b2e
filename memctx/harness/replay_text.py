"""The one text form of :mod:`memctx.harness.replay`'s reports, behind ``memctx replay``.

:func:`format_replay` prints a section per report, then a table of them all; names (the
transcript's file, ``FILE#N``, its session, the strategy) are printed whole, columns widen
to fit. The JSON form is :meth:`~memctx.harness.replay.ReplayReport.as_dict`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .compactions import CompactionPoint

if TYPE_CHECKING:
    from .replay import ReplayReport

__all__ = ["format_replay"]

# The table's columns, in order: every key of ReplayReport.summary but session,
# llm_tokens, llm_largest_prompt, recoveries and hook_failures, which the sections and the
# JSON carry, so that a row fits a wide terminal.
_COLUMNS = (
    "source",
    "strategy",
    "window",
    "budget",
    "calls",
    "max_history",
    "mean_sent",
    "max_sent",
    "trims",
    "compactions",
    "recalls",
    "mean_recall",
    "p50_ms",
    "p95_ms",
    "violations",
    "over_window",
)
_NAME_COLUMNS = frozenset({"source", "strategy"})  # left-aligned, never cut
_CALL_HEADER = "   call    at   history      sent   cached  recall     ms  events"


def format_replay(reports: Sequence[ReplayReport], *, per_call: bool = False) -> str:
    """The one text form of replays: a section per report, then a table of them all.

    Each section starts with the report's title (``FILE through STRATEGY at N tokens``) and
    gives its violations by kind, its calibration, its compactions beside the transcript's
    own, the recovery paths of calls over the window and, with ``per_call``, one line per
    call. The table has one row per report (transcript x strategy x window), the totals of
    :meth:`ReplayReport.summary`. Names are never cut: columns widen to the longest.

    Args:
        reports: The replays to print.
        per_call: Also print, in each section, one line per call: transcript index, history
            and sent tokens, cached prefix, recall tokens, hook latency, events.
    """
    lines: list[str] = []
    for report in reports:
        lines += _section(report, per_call=per_call)
        lines.append("")
    lines += _table([report.summary() for report in reports])
    return "\n".join(lines)


def _section(report: ReplayReport, *, per_call: bool) -> list[str]:
    kinds = report.violation_kinds()
    detail = ", ".join(f"{kind} {n}" for kind, n in kinds.items())
    lines = [
        _title(report),
        f"  violations {sum(kinds.values())}" + (f" ({detail})" if detail else ""),
    ]
    lines += _compaction_lines(report)
    lines += _recovery_lines(report)
    if per_call:
        lines.append(_CALL_HEADER)
        lines += [
            f"  {c.call:5d} {c.at:5d} {c.history_tokens:9d} {c.sent_tokens:9d} "
            f"{c.cached_tokens:8d} {c.recall_tokens:7d} {c.latency_ms:6.1f}  "
            f"{','.join(c.events)}".rstrip()
            for c in report.calls
        ]
    return lines


def _table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The summary table: names left-aligned, figures right-aligned, every column as wide as
    its widest cell."""
    widths = {k: max([len(k), *(len(str(row[k])) for row in rows)]) for k in _COLUMNS}

    def cell(key: str, value: object) -> str:
        text = str(value)
        return text.ljust(widths[key]) if key in _NAME_COLUMNS else text.rjust(widths[key])

    out = ["  ".join(cell(k, k) for k in _COLUMNS)]
    out += ["  ".join(cell(k, row[k]) for k in _COLUMNS) for row in rows]
    return [line.rstrip() for line in out]


def _recovery_lines(report: ReplayReport) -> list[str]:
    """Each recovery path the calls over the window took, with its number of calls."""
    paths = report.recovery_paths()
    if not paths:
        return []
    calls = sum(paths.values())
    what = "call whose transcript" if calls == 1 else "calls whose transcript"
    lines = [f"  {calls} {what} exceeded the window:"]
    lines += [f"    {n:4d} x {path}" for path, n in paths.items()]
    return lines


def _compaction_lines(report: ReplayReport) -> list[str]:
    """The calibration, then our compactions beside the transcript's own, one per line."""
    ours = report.compactions()
    if not ours and not report.recorded and report.fit is None:
        return []
    lines: list[str] = []
    if report.fit is not None:
        lines.append(
            f"  calibrated: {report.fit.describe()}; the window leaves "
            f"{report.budget:,} counted tokens to the transcript"
        )
    labels = [f"{report.strategy} #{n}" for n in range(1, len(ours) + 1)]
    labels += [f"recorded #{n}" for n in range(1, len(report.recorded) + 1)]
    width = max(20, *(len(label) for label in labels)) if labels else 20
    lines.append(f"  {'compaction':<{width}} message  call  before (counted)  ≈ provider  after")
    for label, point in zip(labels, ours, strict=False):
        provider = report.provider_tokens(point.before)
        lines.append(
            f"  {label:<{width}} {point.at:7d} {point.call:5d} "
            f"{point.before:17,d} {_maybe(provider):>11} {point.after:6,d}"
        )
    for label, theirs in zip(labels[len(ours) :], report.recorded, strict=True):
        how = f"preTokens, {theirs.trigger}" if theirs.trigger else "preTokens"
        lines.append(
            f"  {label:<{width}} {_maybe(theirs.at):>7} {'-':>5} {'-':>17} "
            f"{_maybe(theirs.pre_tokens):>11}  ({how})"
        )
    if not ours:
        lines.append(f"  {report.strategy} did not compact")
    lines += [f"  {line}" for line in _nearest_lines(report, ours)]
    largest = report.summary()["llm_largest_prompt"]
    if largest:
        lines.append(
            f"  largest summary or extraction input: {largest:,} tokens "
            f"(the summariser's window: {report.budget:,})"
        )
    return lines


def _nearest_lines(report: ReplayReport, ours: Sequence[CompactionPoint]) -> list[str]:
    """For each recorded compaction with a position, ours nearest to it and how far."""
    lines: list[str] = []
    for n, theirs in enumerate(report.recorded, 1):
        if theirs.at is None or not ours:
            continue
        at = theirs.at
        point = min(ours, key=lambda p: (abs(p.at - at), p.at))
        where = f"{point.at - at:+d} messages"
        provider = report.provider_tokens(point.before)
        if provider is not None and theirs.pre_tokens is not None:
            delta = provider - theirs.pre_tokens
            where += f", {delta:+,d} provider tokens ({delta / report.window:+.1%} of the window)"
        lines.append(
            f"nearest to recorded #{n}: {report.strategy} #{ours.index(point) + 1}, {where}"
        )
    return lines


def _maybe(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _title(report: ReplayReport) -> str:
    name = Path(report.source).name
    session = report.session_id
    if session and session not in name:
        name += f" (session {session})"
    return f"{name} through {report.strategy} at {report.window:,} tokens"
