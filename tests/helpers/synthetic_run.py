"""Plausible evaluation run directories for the report, chart, gate and plugin tests.

They follow the file contract of :mod:`memctx.harness.schema` only (no replay engine needed):
9 suites, strategies ``full``/``truncate`` (embedding ``"none"``) and ``memory-context`` ×
``hash``/``transformer``. :func:`build_run` returns the three parts so that a test can inject
a regression before :func:`write_run` writes them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctx.harness.gen.suites import FACT_SUITES as SUITES
from memctx.harness.schema import SUMMARY_SCHEMA

PAIRS = (
    ("full", "none"),
    ("truncate", "none"),
    ("memory-context", "hash"),
    ("memory-context", "transformer"),
)
# Chance that a probe's answer is in the context, per strategy × embedding.
_SKILL = {
    ("full", "none"): 1.0,
    ("truncate", "none"): 0.35,
    # High enough that a "good" run clears the repository's thresholds in every suite.
    ("memory-context", "hash"): 0.95,
    ("memory-context", "transformer"): 0.97,
}
_TOKENS = {
    ("full", "none"): 90_000,
    ("truncate", "none"): 30_000,
    ("memory-context", "hash"): 31_500,
    ("memory-context", "transformer"): 31_800,
}


@dataclass
class SyntheticRun:
    """The parts of one run directory, mutable before writing."""

    summary: dict[str, Any]
    probes: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)

    def record(self, suite: str, strategy: str, embedding: str) -> dict[str, Any]:
        records: list[dict[str, Any]] = self.summary["records"] + self.summary["pooled"]
        for record in records:
            if (record["suite"], record["strategy"], record["embedding"]) == (
                suite,
                strategy,
                embedding,
            ):
                return record
        raise KeyError((suite, strategy, embedding))


def _record(
    suite: str, strategy: str, embedding: str, rows: list[dict[str, Any]]
) -> dict[str, Any]:
    fit = [r for r in rows if r["fits"]]
    acc = sum(r["recall_accuracy"] for r in fit) / len(fit) if fit else None
    evidence = sum(r["evidence_recall"] for r in fit) / len(fit) if fit else None
    tokens = _TOKENS[(strategy, embedding)]
    searching = strategy == "memory-context"
    ci = (
        [round(max(0.0, acc - 0.05), 4), round(min(1.0, acc + 0.05), 4)]
        if acc is not None
        else None
    )
    return {
        "suite": suite,
        "strategy": strategy,
        "embedding": embedding,
        "probes": len(rows),
        "fit": len(fit),
        "recall_accuracy": None if acc is None else round(acc, 4),
        "recall_accuracy_ci": ci,
        "tool_accuracy": round(min(1.0, (acc or 0) + 0.05), 4) if searching else None,
        "evidence_recall": None if evidence is None else round(evidence, 4),
        "evidence_recall_ci": None
        if evidence is None
        else [round(max(0.0, evidence - 0.04), 4), round(min(1.0, evidence + 0.04), 4)],
        "stale_rate": round(sum(bool(r["stale_rate"]) for r in rows) / len(rows), 4),
        "tokens_per_call": float(tokens),
        "recall_tokens": 1200.0 if searching else 0.0,
        "llm_tokens": 40_000 if searching else 0,
        "cost_usd": round(tokens * len(rows) * 3e-6, 4),
        "cached_share": 0.6 if strategy != "truncate" else 0.2,
        "calls": len(rows) * 10,
        "compactions": 4 if searching else 0,
        "trims": 0 if strategy == "full" else 12,
        "violations": 0,
        "violation_kinds": {"pairing": 0, "hard_cap": 0, "window": 0, "secrets": 0},
        "hook_p50_ms": 3.5 if searching else 0.2,
        "hook_p95_ms": 11.0 if searching else 0.6,
    }


def _calls(
    suite: str, scenario: str, strategy: str, embedding: str, n: int
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    history = 2_000
    sent = 2_000
    for call in range(n):
        history += 900 + (call * 37) % 700
        events: list[str] = []
        if strategy == "full":
            sent = history
            if sent > 120_000:
                events.append("overflow")
        elif sent + 900 > 40_000:
            events.append("compaction" if strategy == "memory-context" else "trim")
            sent = 12_000
        else:
            sent += 900 + (call * 37) % 700
        rows.append(
            {
                "suite": suite,
                "scenario": scenario,
                "strategy": strategy,
                "embedding": embedding,
                "session": f"{scenario}-s0",
                "call": call,
                "at": 2 * call + 1,
                "history_tokens": history,
                "sent_tokens": sent,
                "cached_tokens": sent // 2,
                "recall_tokens": 1200 if strategy == "memory-context" else 0,
                "probe": f"{scenario}-p{call // 17:02d}" if call % 17 == 16 else None,
                "events": events,
                "latency_ms": 3.0 if strategy == "memory-context" else 0.1,
            }
        )
    return rows


def build_run(seed: int = 0, probes_per_suite: int = 24) -> SyntheticRun:
    """A 9-suite run: probe rows, call rows and the summary aggregated from them."""
    rng = random.Random(seed)
    probes: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    for suite in SUITES:
        scenario = f"{suite}-000"
        for strategy, embedding in PAIRS:
            rows = []
            for i in range(probes_per_suite):
                fit = strategy != "full" or i % 3 != 0
                correct = fit and rng.random() < _SKILL[(strategy, embedding)]
                rows.append(
                    {
                        "suite": suite,
                        "scenario": scenario,
                        "strategy": strategy,
                        "embedding": embedding,
                        "probe": f"{scenario}-p{i:02d}",
                        "kind": "fact",
                        "tags": [],
                        "fits": fit,
                        "recall_accuracy": correct if fit else None,
                        "tool_accuracy": correct if fit else None,
                        "evidence_recall": (1.0 if correct else 0.0) if fit else None,
                        "stale_rate": bool(
                            fit and not correct and strategy == "truncate" and i % 4 == 0
                        )
                        if fit
                        else None,
                        "sent_tokens": _TOKENS[(strategy, embedding)],
                        "recall_tokens": 1200 if strategy == "memory-context" else 0,
                        "has_tool": strategy == "memory-context",
                        "answer": None,
                        "judged": None,
                    }
                )
            probes.extend(rows)
            records.append(_record(suite, strategy, embedding, rows))
            calls.extend(
                _calls(suite, scenario, strategy, embedding, 160 if suite == "long-haul" else 30)
            )
    pooled = []
    for strategy, embedding in PAIRS:
        rows = [p for p in probes if (p["strategy"], p["embedding"]) == (strategy, embedding)]
        pooled.append(_record("all", strategy, embedding, rows))
    summary = {
        "schema": SUMMARY_SCHEMA,
        "provenance": {
            "git": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": False},
            "versions": {"python": "3.12.0", "memctx": "0.1.0", "litellm": "1.106.2"},
            "generator_version": 1,
            "datasets": "generated (quick)",
            "scenarios": {
                s: {
                    "scenarios": 1,
                    "probes": probes_per_suite,
                    "sha256": "ab" * 32,
                    "seeds": [seed],
                }
                for s in SUITES
            },
            "seed": seed,
            "answer_model": "claude-sonnet-4-5",
            "judge_model": None,
        },
        "config": {
            "suites": [],
            "strategies": ["full", "truncate", "memory-context"],
            "embeddings": ["hash", "transformer"],
            "windows": [],
            "quick": True,
            "overrides": {},
            "llm": None,
            "seed": seed,
            "answer_model": "claude-sonnet-4-5",
        },
        "records": records,
        "pooled": pooled,
        "timing": {
            "started_at": "2025-01-01T00:00:00+00:00",
            "finished_at": "2025-01-01T00:01:00+00:00",
            "wall_s": 60.0,
            "jobs": 2,
        },
    }
    return SyntheticRun(summary, probes, calls)


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def write_run(path: Path, run: SyntheticRun | None = None) -> Path:
    """Write ``run`` (default: :func:`build_run`) as a run directory at ``path``."""
    run = run or build_run()
    path.mkdir(parents=True, exist_ok=True)
    _write_jsonl(path / "results.jsonl", run.probes)
    _write_jsonl(path / "trace.jsonl", run.calls)
    (path / "summary.json").write_text(json.dumps(run.summary, indent=2) + "\n", encoding="utf-8")
    return path
