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

**A window in the provider's tokens.** A transcript holds neither the system prompt nor the
tool definitions (about 25K tokens for Claude Code), and the harness counts with its own
counter. When the transcript reports each call's input (Claude Code's ``usage``),
``calibrate`` fits ``provider ≈ unseen + scale x counted``
(:func:`memctx.messages.fit_usage`) and plays the strategies at the budget that leaves
the window to the transcript: ``--window 200000`` then means the model's 200K. Each
compaction is printed with its position and size, converted back to the provider's
tokens, beside the compactions the transcript records (Claude Code's ``compact_boundary``
and its ``preTokens``), with the largest input a summary or extraction call sent.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.messages import TokenCounter, UsageFit, fit_usage
from memctx.strategies import HOOK_STRATEGY
from memctx.transcripts import Transcript

from .adapters import transcript_scenario
from .compactions import CompactionPoint, RecordedCompaction, recorded_compactions
from .engine import ScenarioResult, run_scenario
from .metrics import percentile
from .replay_text import format_replay
from .schema import CallRow

__all__ = [
    "ReplayReport",
    "format_replay",
    "replay_transcript",
    "transcript_fit",
]


@dataclass(frozen=True)
class ReplayReport:
    """One transcript through one strategy at one window.

    Attributes:
        source: The transcript's file.
        strategy: The registered strategy name it was played through.
        window: The context window asked for (tokens; the provider's when calibrated).
        result: The engine's call rows and totals (a replay asks no probes).
        fit: The calibration to the provider's tokens, or ``None`` when not calibrated.
        recorded: The compactions the transcript records.
        session_id: The transcript's session or instance id, when its file names one.
    """

    source: str
    strategy: str
    window: int
    result: ScenarioResult
    fit: UsageFit | None = None
    recorded: tuple[RecordedCompaction, ...] = ()
    session_id: str | None = None

    @property
    def budget(self) -> int:
        """The window the strategy played at, in the harness counter's tokens: the asked
        window less the calibrated unseen part, scaled (the window itself when uncalibrated)."""
        return int(self.result.stats.get("window", self.window))

    def compactions(self) -> list[CompactionPoint]:
        """Every compaction the strategy made, in order."""
        return [
            CompactionPoint(c.call, c.at, c.compacted_from, c.history_tokens)
            for c in self.calls
            if "compaction" in c.events
        ]

    def provider_tokens(self, counted: int) -> int | None:
        """``counted`` transcript tokens as the provider would count the request, when
        calibrated."""
        return self.fit.to_provider(counted) if self.fit is not None else None

    @property
    def calls(self) -> list[CallRow]:
        """One row per model call, in order."""
        return self.result.calls

    def summary(self) -> dict[str, Any]:
        """Totals over the calls.

        Returns:
            ``source`` (file name, ``FILE#N`` for one of a file's several transcripts),
            ``session`` (the transcript's session or instance id, or ``None``),
            ``strategy``, ``window``, ``budget`` (the window in the harness counter's
            tokens, see :attr:`budget`), ``calls``; token figures
            ``max_history`` (the agent's transcript), ``mean_sent`` and ``max_sent`` (the
            contexts sent), ``mean_recall`` (the recalled block, 0 for calls without one);
            ``trims`` and ``recalls`` (calls that trimmed / carried a recalled block),
            ``compactions``, ``p50_ms`` / ``p95_ms`` (context hook latency), ``llm_tokens``
            (summaries and extraction) and ``llm_largest_prompt`` (one such call's largest
            input), ``violations`` (every checked kind, see
            :data:`~memctx.harness.engine.VIOLATION_KINDS`), ``over_window`` (calls whose
            context exceeded the window), ``recoveries`` (calls whose transcript exceeded it,
            each with its recovery path: :meth:`recovery_paths`) and ``hook_failures``.
        """
        calls, stats = self.result.calls, self.result.stats
        sent = [c.sent_tokens for c in calls]
        recall = [c.recall_tokens for c in calls]
        latency = [c.latency_ms for c in calls]
        return {
            "source": Path(self.source).name,
            "session": self.session_id,
            "strategy": self.strategy,
            "window": self.window,
            "budget": self.budget,
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
            "llm_largest_prompt": int(stats.get("llm_largest_prompt_tokens", 0)),
            "violations": sum(self.violation_kinds().values()),
            "over_window": sum("overflow" in c.events for c in calls),
            "recoveries": sum(bool(c.recovery) for c in calls),
            "hook_failures": int(stats.get("hook_failures", 0)),
        }

    def recovery_paths(self) -> dict[str, int]:
        """How the calls whose transcript exceeded the window were made to fit: each
        recovery path (``"compacted x1, truncated 1 tool result of 150,000 chars"``) and its
        number of calls, in order of first use."""
        paths: dict[str, int] = {}
        for call in self.calls:
            if call.recovery:
                paths[call.recovery] = paths.get(call.recovery, 0) + 1
        return paths

    def violation_kinds(self) -> dict[str, int]:
        """Failed checks by kind (``pairing``, ``hard_cap``, ``window``, ``secrets``)."""
        return {k: int(v) for k, v in self.result.stats.get("violation_kinds", {}).items()}

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the summary, the violations by kind, the calibration, the compactions
        (ours, and the transcript's own) and every call row."""
        return {
            "summary": self.summary(),
            "violation_kinds": self.violation_kinds(),
            "calibration": None if self.fit is None else asdict(self.fit),
            "compactions": [
                {**asdict(p), "provider_before": self.provider_tokens(p.before)}
                for p in self.compactions()
            ],
            "recorded_compactions": [asdict(r) for r in self.recorded],
            "recovery_paths": self.recovery_paths(),
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
    calibrate: bool | None = False,
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
        calibrate: ``True``: ``window`` is in the provider's tokens, converted with the
            transcript's reported usage (an error when it reports too little); ``None``:
            the same when the transcript reports usage, else the window as counted;
            ``False``: the window as counted.

    Returns:
        The call rows and totals.

    Raises:
        ValueError: Unknown strategy, invalid window, or ``calibrate=True`` on a transcript
            without usage for two calls of different sizes before any compaction, or a
            window smaller than what the transcript does not hold.
        ConfigError: Invalid overrides.
    """
    fit = transcript_fit(transcript, overrides) if calibrate is not False else None
    if calibrate is True and fit is None:
        raise ValueError(
            f"{Path(transcript.source).name} reports no input usage for two calls of "
            "different sizes before a compaction, so the window cannot be converted to the "
            "provider's tokens; replay it without calibration (memctx replay --no-calibrate)"
        )
    budget = window
    if fit is not None:
        budget = fit.to_counted(window)
        if budget <= 0:
            raise ValueError(
                f"window {window:,} is smaller than what every request of "
                f"{Path(transcript.source).name} carried besides the transcript "
                f"({fit.unseen:,} tokens: system prompt, tool definitions); pass a larger "
                "--window"
            )
    scenario = transcript_scenario(transcript, window=budget)
    config = MemoryContextConfig().with_overrides(dict(overrides or {}))
    if store_dir is not None:
        result = run_scenario(
            scenario, strategy, embedding, config=config, work_dir=Path(store_dir)
        )
    else:
        with tempfile.TemporaryDirectory(prefix="memctx-replay-") as tmp:
            result = run_scenario(scenario, strategy, embedding, config=config, work_dir=Path(tmp))
    recorded = tuple(recorded_compactions(transcript))
    return ReplayReport(
        transcript.source, strategy, window, result, fit, recorded, transcript.session_id
    )


def transcript_fit(
    transcript: Transcript, overrides: Mapping[str, Any] | None = None
) -> UsageFit | None:
    """The transcript's calibration (provider tokens = unseen + scale x counted, fitted on
    its reported usage before any compaction) with the counter the replay counts with, or
    ``None`` when it reports no usage."""
    if not transcript.usage:
        return None
    config = MemoryContextConfig().with_overrides(dict(overrides or {}))
    return fit_usage(
        transcript.messages,
        {i: u.context_tokens for i, u in transcript.usage.items()},
        TokenCounter(config.token_counter),
        compaction_boundary=transcript.compaction_boundary,
    )
