"""Aggregate replayed scenarios into summary records: accuracy with intervals, tokens, cost.

Pure functions over :class:`~memctx._eval_schema.ProbeRow` and
:class:`~memctx._eval_schema.CallRow` lists: one record per suite × strategy × embedding and
one ``suite == "all"`` record per strategy × embedding, with exactly the keys of
:data:`~memctx._eval_schema.RECORD_METRICS`.

Cost follows how providers bill a request: the leading tokens identical to the previous
request of the session are cache reads, the rest is fresh input, and the assistant message a
call produced is output. A strategy that rewrites the start of the context every call
therefore pays full input price for all of it. LLM work (summaries, extraction) is priced
with the same model.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memctx._eval_schema import CallRow, ProbeRow

__all__ = ["Prices", "aggregate", "bootstrap_ci", "percentile", "prices_for"]

BOOTSTRAP_RESAMPLES = 1000
_VIOLATION_KINDS = ("pairing", "hard_cap", "window", "secrets")


@dataclass(frozen=True)
class Prices:
    """USD per token."""

    input: float
    cache_read: float
    output: float

    def call(self, sent: int, cached: int, output: int) -> float:
        return (sent - cached) * self.input + cached * self.cache_read + output * self.output


def prices_for(model: str) -> Prices:
    """The model's prices from litellm's bundled table.

    Raises:
        ValueError: The model is not in the table (the message lists close names).
    """
    # litellm's bundled price table; without this it tries the network first.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    table: Mapping[str, Any] = litellm.model_cost
    entry = table.get(model)
    if not entry or entry.get("input_cost_per_token") is None:
        close = difflib.get_close_matches(model, list(table), n=5)
        raise ValueError(
            f"no prices for {model!r} in litellm's table; close names: {', '.join(close) or '-'}"
        )
    price_in = float(entry["input_cost_per_token"])
    cache_read = entry.get("cache_read_input_token_cost")
    return Prices(
        input=price_in,
        cache_read=float(cache_read) if cache_read is not None else 0.1 * price_in,
        output=float(entry.get("output_cost_per_token") or 0.0),
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q / 100.0 * len(ordered)))])


def bootstrap_ci(values: Sequence[float], *, seed: int = 0) -> list[float]:
    """95 % percentile bootstrap interval of the mean (``[mean, mean]`` under two values)."""
    if not values:
        return [0.0, 0.0]
    data = np.asarray(values, dtype=float)
    if len(data) < 2:
        return [float(data.mean())] * 2
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(BOOTSTRAP_RESAMPLES, len(data)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


def _record(
    suite: str,
    strategy: str,
    embedding: str,
    results: Sequence[Any],
    prices: Prices,
    seed: int,
) -> dict[str, Any]:
    probes: list[ProbeRow] = [p for r in results for p in r.probes]
    calls: list[CallRow] = [c for r in results for c in r.calls]
    fit = [p for p in probes if p.fit]
    correct = [1.0 if p.correct else 0.0 for p in fit]
    evidence = [p.evidence for p in fit]
    tool = [1.0 if (p.tool_hit if p.tool_hit is not None else p.correct) else 0.0 for p in fit]
    kinds = {
        k: sum(int(r.stats["violation_kinds"].get(k, 0)) for r in results) for k in _VIOLATION_KINDS
    }
    llm_prompt = sum(int(r.stats.get("llm_prompt_tokens", 0)) for r in results)
    llm_completion = sum(int(r.stats.get("llm_completion_tokens", 0)) for r in results)
    cost = sum(prices.call(c.sent_tokens, c.cached_tokens, c.output_tokens) for c in calls)
    cost += llm_prompt * prices.input + llm_completion * prices.output
    sent = sum(c.sent_tokens for c in calls)
    latencies = [float(x) for r in results for x in r.stats.get("latencies_ms", [])]
    return {
        "suite": suite,
        "strategy": strategy,
        "embedding": embedding,
        "probes": len(probes),
        "fit": len(fit),
        "recall_accuracy": round(_mean(correct), 4),
        "recall_accuracy_ci": bootstrap_ci(correct, seed=seed),
        "tool_accuracy": round(_mean(tool), 4),
        "evidence_recall": round(_mean(evidence), 4),
        "evidence_recall_ci": bootstrap_ci(evidence, seed=seed),
        "stale_rate": round(_mean(1.0 if p.stale else 0.0 for p in fit), 4),
        "tokens_per_call": round(sent / len(calls), 1) if calls else 0.0,
        "recall_tokens": round(_mean(c.recall_tokens for c in calls), 1),
        "llm_tokens": llm_prompt + llm_completion,
        "cost_usd": round(cost, 4),
        "cached_share": round(sum(c.cached_tokens for c in calls) / sent, 4) if sent else 0.0,
        "calls": len(calls),
        "compactions": sum(int(r.stats.get("compactions", 0)) for r in results),
        "trims": sum(int(r.stats.get("trims", 0)) for r in results),
        "violations": sum(kinds.values()),
        "violation_kinds": kinds,
        "hook_p50_ms": round(percentile(latencies, 50), 2),
        "hook_p95_ms": round(percentile(latencies, 95), 2),
    }


def aggregate(
    results: Sequence[tuple[str, str, str, Any]],
    *,
    seed: int = 0,
    answer_model: str = "claude-sonnet-4-5",
) -> list[dict[str, Any]]:
    """Summary records, ordered by suite (first seen), then strategy, then embedding.

    Args:
        results: ``(suite, strategy, embedding, ScenarioResult)`` per replayed job.
        seed: Bootstrap seed.
        answer_model: litellm model whose prices give ``cost_usd``.
    """
    prices = prices_for(answer_model)
    groups: dict[tuple[str, str, str], list[Any]] = {}
    pairs: dict[tuple[str, str], list[Any]] = {}
    for suite, strategy, embedding, result in results:
        groups.setdefault((suite, strategy, embedding), []).append(result)
        pairs.setdefault((strategy, embedding), []).append(result)
    records = [
        _record(suite, strategy, embedding, items, prices, seed)
        for (suite, strategy, embedding), items in groups.items()
    ]
    records += [
        _record("all", strategy, embedding, items, prices, seed)
        for (strategy, embedding), items in pairs.items()
    ]
    return records
