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

Every probe row carries its ``question`` and expected ``answers`` (schema 3), so a row can be
read, judged again or explained without the scenario files.

**Real-data suites** (:data:`REAL_DATA_SUITES`: ``locomo``, ``claude-code``,
``trajectories``) write their records, probe rows and call rows into the same files, with the
same keys, but are never part of the pooled records: ``pooled`` covers the synthetic suites
only (none when a run played real data alone). Each real suite measures something else at a
window of its own (a chat's answers at 16K, probes at a real compaction at 200K, tokens on
probe-less trajectories), and its data comes from outside the repository, so a pooled figure
that took them in would change with whatever data a machine happens to hold.
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
    "REAL_DATA_SUITES",
    "RECORD_METRICS",
    "SUMMARY_SCHEMA",
    "TIMING_KEYS",
    "CallRow",
    "ProbeRow",
    "all_records",
    "upgrade_probe_row",
    "upgrade_summary",
]

# 3: probe rows carry ``question`` and ``answers``; real-data suites' records in the summary.
SUMMARY_SCHEMA = 3
NO_EMBEDDING = "none"
LEGACY_NO_EMBEDDING = "-"  # schema 1's spelling, read by :func:`upgrade_summary`
ALL_SUITES = "all"  # the suite name of the records pooled over the (synthetic) suites
# Suites played from external data (../shared/datasets): recorded per suite, never pooled.
REAL_DATA_SUITES = ("locomo", "claude-code", "trajectories")

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
    question: str = ""  # the question asked (appended for the probe's call only)
    answers: list[str] = field(default_factory=list)  # the expected answers (any one is a hit)

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
    """``summary`` in the current schema, so old baselines still compare: a schema-1 file
    (pooled records among the others, ``"-"`` for no embedding) is rewritten in memory; a
    schema-2 file has the same records (what changed is the probe rows, read by
    :func:`upgrade_probe_row`, and real-data records, which it never held)."""
    schema = summary.get("schema", SUMMARY_SCHEMA)
    if schema >= SUMMARY_SCHEMA:
        return summary
    if schema >= 2:
        return {**summary, "schema": SUMMARY_SCHEMA}
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


# Schema 1's probe-row names and their names since schema 2.
_SCHEMA1_PROBE = {
    "fit": "fits",
    "correct": "recall_accuracy",
    "tool_hit": "tool_accuracy",
    "evidence": "evidence_recall",
    "stale": "stale_rate",
    "context_tokens": "sent_tokens",
}
_UNFITTED_NONE = ("recall_accuracy", "tool_accuracy", "evidence_recall", "stale_rate")


def upgrade_probe_row(row: dict[str, Any]) -> dict[str, Any]:
    """A ``results.jsonl`` row in the current schema, so an old baseline's probes read like a
    new run's: a schema-1 row (``fit``, ``correct``, ``"-"`` for no embedding, unfitted
    probes scored False) is renamed in memory, its unfitted metrics made None; a row written
    before schema 3 has ``question`` and ``answers`` None (not recorded, rather than empty)."""
    if "question" not in row:
        row = {**row, "question": None, "answers": None}
    if "fits" in row or "fit" not in row:
        return row
    out = {_SCHEMA1_PROBE.get(key, key): value for key, value in row.items()}
    if out.get("embedding") == LEGACY_NO_EMBEDDING:
        out["embedding"] = NO_EMBEDDING
    if out.get("tool_accuracy") is None:
        out["tool_accuracy"] = out.get("recall_accuracy")
    if not out.get("fits"):
        out.update(dict.fromkeys(_UNFITTED_NONE))
    return out


def _pooled(record: Any) -> bool:
    return isinstance(record, Mapping) and record.get("suite") == ALL_SUITES
