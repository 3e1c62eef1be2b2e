"""External data in the harness's shape, and a real transcript through any strategy.

:func:`transcript_scenario` turns a loaded transcript (Claude Code, SWE-agent, OpenHands,
plain OpenAI/Anthropic) into a one-session :class:`~memctx.harness.scenario.Scenario` without
probes, so the replay engine can play it through any registered strategy: that is what
``memctx replay TRANSCRIPT --strategy NAME`` prints, call by call.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memctx.transcripts import Transcript

from .engine import ScenarioResult, run_scenario
from .metrics import percentile
from .scenario import Scenario, Session
from .schema import CallRow

__all__ = ["format_strategy_replay", "replay_with_strategy", "transcript_scenario"]

# Formats whose tool calls are Anthropic content blocks; the rest use OpenAI's shape.
_ANTHROPIC_SHAPED = frozenset({"claude-code", "anthropic"})


def transcript_scenario(transcript: Transcript, *, window: int) -> Scenario:
    """A probe-less scenario holding ``transcript``'s messages as one session."""
    name = Path(transcript.source).stem or "transcript"
    return Scenario(
        id=f"replay-{name}",
        suite="replay",
        format="anthropic" if transcript.format in _ANTHROPIC_SHAPED else "openai",
        seed=0,
        window=window,
        sessions=(Session(id="replay", messages=tuple(transcript.messages)),),
        probes=(),
        meta={"source": transcript.source, "format": transcript.format},
    )


def replay_with_strategy(
    transcript: Transcript,
    *,
    strategy: str,
    embedding: str,
    window: int,
    overrides: dict[str, Any] | None = None,
    store_dir: Path | None = None,
) -> ScenarioResult:
    """Play ``transcript`` through ``strategy`` at ``window`` (stores in a temporary folder
    unless ``store_dir`` is given)."""
    scenario = transcript_scenario(transcript, window=window)
    if store_dir is not None:
        return run_scenario(
            scenario, strategy, embedding, config_overrides=overrides, work_dir=store_dir
        )
    with tempfile.TemporaryDirectory(prefix="memctx-replay-") as tmp:
        return run_scenario(
            scenario, strategy, embedding, config_overrides=overrides, work_dir=Path(tmp)
        )


def format_strategy_replay(
    result: ScenarioResult, *, per_call: bool = False, title: str = ""
) -> str:
    """Per-call lines (optional) and a summary: tokens sent, trims, compactions, recall."""
    calls: Sequence[CallRow] = result.calls
    lines = [title] if title else []
    if per_call:
        lines.append(" call    at   history      sent   cached  recall     ms  events")
        for c in calls:
            lines.append(
                f"{c.call:5d} {c.at:5d} {c.history_tokens:9d} {c.sent_tokens:9d} "
                f"{c.cached_tokens:8d} {c.recall_tokens:7d} {c.latency_ms:6.1f}  "
                f"{','.join(c.events)}"
            )
    stats = result.stats
    sent = [c.sent_tokens for c in calls]
    latencies = [c.latency_ms for c in calls]
    kinds = stats.get("violation_kinds", {})
    lines.append(
        f"calls {len(calls)}  max history {max((c.history_tokens for c in calls), default=0):,}"
        f"  mean sent {round(sum(sent) / len(sent)) if sent else 0:,}  max sent "
        f"{max(sent, default=0):,}  trims {stats.get('trims', 0)}  compactions "
        f"{stats.get('compactions', 0)}  calls with recall "
        f"{sum(c.recall_tokens > 0 for c in calls)}  hook p50 {percentile(latencies, 50):.1f} ms"
        f"  p95 {percentile(latencies, 95):.1f} ms  LLM tokens {stats.get('llm_tokens', 0):,}"
        f"  violations {sum(kinds.values())} {kinds}"
    )
    return "\n".join(lines)
