"""Replay a real transcript through a context strategy, one model call at a time.

:func:`replay_transcript` turns the transcript into a probe-less scenario
(:func:`~memctx.harness.adapters.transcript_scenario`) and plays it through the replay engine
(:func:`~memctx.harness.engine.run_scenario`), the one loop that drives a strategy's hooks:
every assistant message of the transcript marks a model call, the strategy prepares that
call's context from the transcript so far, and the engine records the call as a
:class:`~memctx.harness.schema.CallRow` and checks it (tool pairing, recall cap, window).

The default strategy, ``memory-context-hook``, is ``MemoryContext`` alone, as the agent that
wrote the transcript would have called it: ``on_context`` before every call and
``on_before_compact`` at the compactions the transcript records (Claude Code's
``compact_boundary``), with no compaction of its own, so the figures are the runtime's.
Any registered strategy (``full``, ``truncate``, ``memory-context``, ...) can be named
instead. :class:`ReplayReport` sums the call rows; :func:`format_replay` prints them.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memctx.transcripts import Transcript

from .adapters import transcript_scenario
from .engine import ScenarioResult, run_scenario
from .metrics import percentile
from .schema import CallRow
from .strategies import HOOK_STRATEGY

__all__ = ["ReplayReport", "format_replay", "replay_transcript"]

# The table's columns, in order: every key of ReplayReport.summary but llm_tokens and
# hook_failures, which only the JSON carries, so that a row fits a wide terminal.
_COLUMNS = (
    "source",
    "strategy",
    "window",
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
_SOURCE_WIDTH = 14  # a Claude Code session id is 36 characters; its head tells them apart
_CALL_HEADER = " call    at   history      sent   cached  recall     ms  events"


@dataclass(frozen=True)
class ReplayReport:
    """One transcript through one strategy at one window.

    Attributes:
        source: The transcript's file.
        strategy: The registered strategy name it was played through.
        window: The context window (tokens).
        result: The engine's call rows and totals (a replay asks no probes).
    """

    source: str
    strategy: str
    window: int
    result: ScenarioResult

    @property
    def calls(self) -> list[CallRow]:
        """One row per model call, in order."""
        return self.result.calls

    def summary(self) -> dict[str, Any]:
        """Totals over the calls.

        Returns:
            ``source`` (file name), ``strategy``, ``window``, ``calls``; token figures
            ``max_history`` (the agent's transcript), ``mean_sent`` and ``max_sent`` (the
            contexts sent), ``mean_recall`` (the recalled block, 0 for calls without one);
            ``trims`` and ``recalls`` (calls that trimmed / carried a recalled block),
            ``compactions``, ``p50_ms`` / ``p95_ms`` (context hook latency), ``llm_tokens``
            (summaries and extraction), ``violations`` (every checked kind, see
            :data:`~memctx.harness.engine.VIOLATION_KINDS`), ``over_window`` (calls whose
            context exceeded the window) and ``hook_failures``.
        """
        calls, stats = self.result.calls, self.result.stats
        sent = [c.sent_tokens for c in calls]
        recall = [c.recall_tokens for c in calls]
        latency = [c.latency_ms for c in calls]
        return {
            "source": Path(self.source).name,
            "strategy": self.strategy,
            "window": self.window,
            "calls": len(calls),
            "max_history": max((c.history_tokens for c in calls), default=0),
            "mean_sent": round(statistics.fmean(sent)) if sent else 0,
            "max_sent": max(sent, default=0),
            "trims": int(stats.get("trims", 0)),
            "compactions": int(stats.get("compactions", 0)),
            "recalls": sum(r > 0 for r in recall),
            "mean_recall": round(statistics.fmean(recall)) if recall else 0,
            "p50_ms": round(percentile(latency, 50), 2),
            "p95_ms": round(percentile(latency, 95), 2),
            "llm_tokens": int(stats.get("llm_tokens", 0)),
            "violations": sum(self.violation_kinds().values()),
            "over_window": sum("overflow" in c.events for c in calls),
            "hook_failures": int(stats.get("hook_failures", 0)),
        }

    def violation_kinds(self) -> dict[str, int]:
        """Failed checks by kind (``pairing``, ``hard_cap``, ``window``, ``secrets``)."""
        return {k: int(v) for k, v in self.result.stats.get("violation_kinds", {}).items()}

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the summary, the violations by kind and every call row."""
        return {
            "summary": self.summary(),
            "violation_kinds": self.violation_kinds(),
            "calls": [c.to_json() for c in self.calls],
        }


def replay_transcript(
    transcript: Transcript,
    *,
    window: int,
    strategy: str = HOOK_STRATEGY,
    embedding: str = "hash",
    overrides: Mapping[str, Any] | None = None,
    store_dir: str | Path | None = None,
) -> ReplayReport:
    """Play ``transcript`` through ``strategy`` at ``window``, every call recorded and checked.

    Args:
        transcript: A loaded transcript (:func:`memctx.transcripts.load_transcript`).
        window: The context window in tokens.
        strategy: A registered strategy name; the default runs ``MemoryContext``'s hooks
            alone (see the module docstring).
        embedding: ``"hash"`` or ``"transformer"``, for strategies that search.
        overrides: memctx config overrides (dotted or camelCase keys, or nested mappings).
        store_dir: The strategy's work directory (memctx keeps its stores under
            ``store/``); ``None`` means a temporary folder, removed afterwards.

    Returns:
        The call rows and totals.

    Raises:
        ValueError: Unknown strategy or invalid window.
        ConfigError: Invalid overrides.
    """
    scenario = transcript_scenario(transcript, window=window)
    if store_dir is not None:
        result = run_scenario(
            scenario, strategy, embedding, config_overrides=overrides, work_dir=Path(store_dir)
        )
    else:
        with tempfile.TemporaryDirectory(prefix="memctx-replay-") as tmp:
            result = run_scenario(
                scenario, strategy, embedding, config_overrides=overrides, work_dir=Path(tmp)
            )
    return ReplayReport(transcript.source, strategy, window, result)


def format_replay(reports: Sequence[ReplayReport], *, per_call: bool = False) -> str:
    """A table with one line per report (transcript × strategy × window), then each
    report's violations by kind.

    Args:
        reports: The replays to print.
        per_call: Also print, before the table, one line per call of each replay: transcript
            index, history and sent tokens, cached prefix, recall tokens, hook latency, events.
    """
    lines: list[str] = []
    if per_call:
        for report in reports:
            lines += [_title(report), _CALL_HEADER]
            lines += [
                f"{c.call:5d} {c.at:5d} {c.history_tokens:9d} {c.sent_tokens:9d} "
                f"{c.cached_tokens:8d} {c.recall_tokens:7d} {c.latency_ms:6.1f}  "
                f"{','.join(c.events)}".rstrip()
                for c in report.calls
            ]
            lines.append("")
    rows = [report.summary() for report in reports]
    for row in rows:
        row["source"] = str(row["source"])[:_SOURCE_WIDTH]
    widths = {k: max([len(k), *(len(str(row[k])) for row in rows)]) for k in _COLUMNS}
    lines.append("  ".join(k.rjust(widths[k]) for k in _COLUMNS))
    lines += ["  ".join(str(row[k]).rjust(widths[k]) for k in _COLUMNS) for row in rows]
    # Each check by name, so a failure says where to look and a pass says what was checked.
    lines += [
        f"{_title(report)}: violations {row['violations']} {report.violation_kinds()}"
        for report, row in zip(reports, rows, strict=True)
    ]
    return "\n".join(lines)


def _title(report: ReplayReport) -> str:
    return f"{Path(report.source).name} through {report.strategy} at {report.window:,} tokens"
