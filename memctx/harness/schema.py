"""The rows an evaluation run writes, shared by the replay engine, the reports and the gate.

A run directory holds:

- ``results.jsonl``: one :class:`ProbeRow` per probe × strategy × embedding.
- ``trace.jsonl``: one :class:`CallRow` per model call (tokens over turns, events).
- ``summary.json``: ``{"schema", "provenance", "config", "records", "timing"}`` where each
  record is one suite × strategy × embedding (plus ``suite == "all"``) with the keys of
  :data:`RECORD_METRICS`; timing-dependent keys are listed in :data:`TIMING_KEYS` so that a
  determinism check can ignore exactly those.

Embedding is ``"-"`` for strategies that do not search (``full``, ``truncate``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "ALL_SUITES",
    "HIGHER_IS_BETTER",
    "NO_EMBEDDING",
    "RECORD_METRICS",
    "SUMMARY_SCHEMA",
    "TIMING_KEYS",
    "CallRow",
    "ProbeRow",
]

SUMMARY_SCHEMA = 1
NO_EMBEDDING = "-"
ALL_SUITES = "all"  # the suite name of the records pooled over every suite

# Keys of one summary record besides suite/strategy/embedding, in report order.
RECORD_METRICS = (
    "probes",  # probes asked
    "fit",  # probes whose context fitted the window (full overflows; others must always fit)
    "recall_accuracy",  # share of fitted probes whose context holds an expected answer
    # (null when no probe fitted: the share of nothing is not 0 %; so are the other shares)
    "recall_accuracy_ci",  # [low, high] bootstrap 95 % interval ([] when null)
    "tool_accuracy",  # share whose context or memory_search(question) result holds an answer
    "evidence_recall",  # mean share of a probe's evidence spans present
    "evidence_recall_ci",
    "stale_rate",  # share of probes whose context holds only a superseded value
    "tokens_per_call",  # mean input tokens of a model call (probe calls included)
    "recall_tokens",  # mean tokens of the recalled block per call (0 without one)
    "llm_tokens",  # tokens spent on summaries and extraction (prompt + completion)
    "cost_usd",  # every call (cached prefix read, the rest written to the cache) + LLM work
    "cached_share",  # cache-hit share: input tokens priced as cache reads
    "calls",  # model calls
    "compactions",
    "trims",  # calls at which the strategy removed messages
    "violations",  # invariant violations: pairing + hard cap + window + secrets (must be 0)
    "violation_kinds",  # {"pairing": n, "hard_cap": n, "window": n, "secrets": n}
    "hook_p50_ms",
    "hook_p95_ms",
)
TIMING_KEYS = frozenset(
    {"hook_p50_ms", "hook_p95_ms", "wall_s", "started_at", "finished_at", "strategy_s"}
)
# Gate direction: +1 means larger is better, -1 smaller is better.
HIGHER_IS_BETTER = {
    "recall_accuracy": 1,
    "tool_accuracy": 1,
    "evidence_recall": 1,
    "stale_rate": -1,
    "tokens_per_call": -1,
    "recall_tokens": -1,
    "llm_tokens": -1,
    "cost_usd": -1,
    "cached_share": 1,
    "violations": -1,
    "hook_p50_ms": -1,
    "hook_p95_ms": -1,
}


@dataclass(frozen=True)
class ProbeRow:
    """The outcome of one probe under one strategy × embedding."""

    suite: str
    scenario: str
    strategy: str
    embedding: str
    probe: str
    kind: str
    tags: list[str]
    fit: bool  # the context fitted the window
    correct: bool  # an expected answer is in the context (False when not fit)
    evidence: float  # share of evidence spans present
    stale: bool  # only a superseded value is present
    context_tokens: int
    recall_tokens: int
    tool_hit: bool | None = None  # answer in memory_search(question); None without the tool
    answer: str | None = None  # the model's answer when run with --llm
    judged: bool | None = None  # the judge's verdict when run with --llm

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CallRow:
    """One model call (an assistant message of the transcript, or a probe)."""

    suite: str
    scenario: str
    strategy: str
    embedding: str
    session: str
    call: int
    at: int  # transcript length (messages) when the call was made
    history_tokens: int  # tokens of the agent's full transcript at that point
    sent_tokens: int  # tokens of the context actually sent
    cached_tokens: int  # leading tokens identical to the previous call's request
    recall_tokens: int
    probe: bool
    output_tokens: int = 0  # tokens of the assistant message this call produced (0 for probes)
    events: list[str] = field(default_factory=list)  # "compaction", "trim", "overflow"
    latency_ms: float = 0.0
    # With a "compaction" event: the transcript's tokens before it (history_tokens is after).
    compacted_from: int = 0
    # When the transcript exceeded the window: how the strategy made this call fit (or not).
    recovery: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
