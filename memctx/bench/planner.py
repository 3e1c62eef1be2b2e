"""The benchmark seed 004 left open: token, cost and hook-latency deltas of ``planner``.

``planner`` (payload refs + summary sidecar + pruning + token-budget planner) against
``truncate`` (drop oldest) and ``memory-context`` (memctx on agent compaction, hash
embeddings), on long sessions:

- the ``long-haul`` suite of the frozen datasets (one session of over 1 M tokens at a
  200,000-token window, with probes, so recall accuracy is measured too);
- the real Claude Code sessions in ``../shared/datasets/claude-code/`` (or
  ``$MEMCTX_DATASETS/claude-code``), replayed at a 200,000-token window in the provider's
  tokens (calibrated with their recorded usage), when present.

Each line gives, per strategy, the mean tokens sent per call, the cost of every call at the
default answer model's prices (cache reads, writes and fresh input; summaries and extraction
included), the share of input read from the prompt cache and the context hook's p50 / p95
latency; then planner's ratio to each baseline. Latencies are this machine's; token and cost
figures are deterministic.

Run with ``python -m memctx.bench.planner`` (``make bench`` runs it after the foundations).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memctx.harness import (
    EvalOptions,
    aggregate,
    load_suite_scenarios,
    replay_transcript,
    run_scenario,
)
from memctx.transcripts import load_transcript

from .foundations import datasets_dir

__all__ = ["BASELINES", "STRATEGIES", "main", "planner_deltas"]

STRATEGIES = ("planner", "truncate", "memory-context")
BASELINES = ("truncate", "memory-context")
WINDOW = 200_000


def planner_deltas(records: Sequence[dict[str, Any]]) -> list[str]:
    """Planner's ratios to each baseline, one line per baseline (``records`` by strategy)."""
    by = {r["strategy"]: r for r in records}
    planner = by.get("planner")
    lines = []
    for name in BASELINES:
        base = by.get(name)
        if planner is None or base is None:
            continue
        parts = [
            f"tokens/call x{_ratio(planner['tokens_per_call'], base['tokens_per_call'])}",
            f"cost x{_ratio(planner['cost_usd'], base['cost_usd'])}",
            f"hook p50 x{_ratio(planner['hook_p50_ms'], base['hook_p50_ms'])}",
            f"p95 x{_ratio(planner['hook_p95_ms'], base['hook_p95_ms'])}",
        ]
        if planner.get("recall_accuracy") is not None and base.get("recall_accuracy") is not None:
            delta = 100 * (planner["recall_accuracy"] - base["recall_accuracy"])
            parts.append(f"accuracy {delta:+.1f} pts")
        lines.append(f"  planner vs {name}: " + ", ".join(parts))
    return lines


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def _line(record: dict[str, Any]) -> str:
    accuracy = record.get("recall_accuracy")
    shown = f"{100 * accuracy:5.1f} %" if accuracy is not None else "    - "
    return (
        f"  {record['strategy']:<15} {record['tokens_per_call']:>10,.0f} tok/call  "
        f"${record['cost_usd']:>9,.2f}  cache hits {100 * record['cached_share']:5.1f} %  "
        f"hook p50 {record['hook_p50_ms']:7.2f} ms  p95 {record['hook_p95_ms']:7.2f} ms  "
        f"accuracy {shown}  violations {record['violations']}"
    )


def _long_haul() -> list[str]:
    scenarios = load_suite_scenarios(EvalOptions(suites=("long-haul",)))["long-haul"]
    results = []
    with tempfile.TemporaryDirectory(prefix="memctx-bench-planner-") as tmp:
        for strategy in STRATEGIES:
            for k, scenario in enumerate(scenarios):
                work = Path(tmp) / f"{strategy}-{k}"
                result = run_scenario(scenario, strategy, "hash", work_dir=work)
                results.append(("long-haul", strategy, "hash", result))
    records = [r for r in aggregate(results) if r["suite"] == "long-haul"]
    return [
        "planner deltas, long-haul suite (hash embeddings):",
        *map(_line, records),
        *planner_deltas(records),
    ]


def _claude_code() -> list[str]:
    folder = datasets_dir() / "claude-code"
    if not folder.is_dir():
        return [f"planner deltas, Claude Code sessions: {folder} not found; set MEMCTX_DATASETS"]
    # The sessions are the UUID-named files; short/subagent/tool_heavy are loader fixtures.
    sessions = sorted(p for p in folder.glob("*.jsonl") if len(p.stem) == 36)
    lines = [f"planner deltas, {len(sessions)} Claude Code sessions at {WINDOW:,} (calibrated):"]
    for path in sessions:
        transcript = load_transcript(path)
        results = []
        for strategy in STRATEGIES:
            report = replay_transcript(transcript, window=WINDOW, strategy=strategy, calibrate=None)
            results.append(("claude-code", strategy, "hash", report.result))
        records = [r for r in aggregate(results) if r["suite"] == "claude-code"]
        lines += [f" {path.name[:8]}:", *map(_line, records), *planner_deltas(records)]
    return lines


def main() -> None:
    """Print the planner deltas (module docstring)."""
    for line in [*_long_haul(), "", *_claude_code()]:
        print(line, flush=True)


if __name__ == "__main__":
    main()
