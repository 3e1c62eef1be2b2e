"""The rows an evaluation run writes, shared by the replay engine, the reports and the gate.

A run directory holds:

- ``results.jsonl``: one :class:`ProbeRow` per probe × strategy × embedding.
- ``trace.jsonl``: one :class:`CallRow` per model call (tokens over turns, events).
- ``summary.json``: ``{"schema", "run", "config_label", "provenance", "config", "records",
  "pooled", "timing"}`` where each record of ``records`` is one suite × strategy ×
  embedding and each of ``pooled`` one strategy × embedding over every suite (``suite ==
  "all"``), kept apart so that summing ``records`` never counts a run twice; both with the
  keys of :data:`RECORD_METRICS`. Timing-dependent keys are listed in :data:`TIMING_KEYS`
  so that a determinism check can ignore exactly those.

Every row of the three files carries ``run`` (the run's id) and ``config`` (its short
configuration label), so rows of several runs can be concatenated and told apart.

One name per metric across the files: a per-suite figure of :data:`RECORD_METRICS` that is a
mean over probes is the mean of the :class:`ProbeRow` column of the same name over the
*fitted* probes (``recall_accuracy``, ``tool_accuracy``, ``evidence_recall``,
``stale_rate``); an unfitted probe (``fits`` false: the context exceeded the window, the
provider would refuse it) has ``None`` there, never ``False``, so a plain ``mean()`` skips
it. ``tokens_per_call`` and ``recall_tokens`` are the means of the :class:`CallRow` columns
``sent_tokens`` and ``recall_tokens``; a probe row's ``sent_tokens`` is its call's. ``probe``
is a probe's id in both files (``None`` on a call that is not a probe).

Embedding is ``"none"`` for strategies that do not search (``full``, ``truncate``): a word
rather than a null, because pandas drops null keys from a group-by by default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "ALL_SUITES",
    "HIGHER_IS_BETTER",
    "LEGACY_NO_EMBEDDING",
    "NO_EMBEDDING",
    "RECORD_METRICS",
    "SUMMARY_SCHEMA",
    "TIMING_KEYS",
    "CallRow",
    "ProbeRow",
    "all_records",
    "upgrade_summary",
]

SUMMARY_SCHEMA = 2
NO_EMBEDDING = "none"
LEGACY_NO_EMBEDDING = "-"  # schema 1's spelling, read by :func:`upgrade_summary`
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
# "run" is here too: a run's id starts with the time it started.
TIMING_KEYS = frozenset(
    {"hook_p50_ms", "hook_p95_ms", "wall_s", "started_at", "finished_at", "strategy_s", "run"}
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
    probe: str  # the probe's id
    kind: str
    tags: list[str]
    fits: bool  # the context fitted the window (the metrics below are None when not)
    recall_accuracy: bool | None  # an expected answer is in the context
    tool_accuracy: bool | None  # ... or in memory_search(question) (= recall_accuracy without
    # the tool)
    evidence_recall: float | None  # share of the probe's evidence spans present
    stale_rate: bool | None  # only a superseded value is present
    sent_tokens: int  # tokens of the probe call's context
    recall_tokens: int
    has_tool: bool = False  # the strategy offers memory_search
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
    probe: str | None  # the probe's id when the call is a probe, else None
    output_tokens: int = 0  # tokens of the assistant message this call produced (0 for probes)
    events: list[str] = field(default_factory=list)  # "compaction", "trim", "overflow"
    latency_ms: float = 0.0
    # With a "compaction" event: the transcript's tokens before it (history_tokens is after).
    compacted_from: int = 0
    # When the transcript exceeded the window: how the strategy made this call fit (or not).
    recovery: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def all_records(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A summary's per-suite records followed by its pooled ones (``suite == "all"``)."""
    return [*summary.get("records", []), *summary.get("pooled", [])]


def upgrade_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` in the current schema: a schema-1 file (pooled records among the others,
    ``"-"`` for no embedding) is rewritten in memory, so old baselines still compare."""
    if summary.get("schema", SUMMARY_SCHEMA) >= SUMMARY_SCHEMA:
        return summary
    records = []
    for record in summary.get("records", []):
        if isinstance(record, dict) and record.get("embedding") == LEGACY_NO_EMBEDDING:
            record = {**record, "embedding": NO_EMBEDDING}
        records.append(record)
    out = dict(summary)
    out["records"] = [r for r in records if not _pooled(r)]
    out["pooled"] = [r for r in records if _pooled(r)]
    out["schema"] = SUMMARY_SCHEMA
    return out


def _pooled(record: Any) -> bool:
    return isinstance(record, Mapping) and record.get("suite") == ALL_SUITES
