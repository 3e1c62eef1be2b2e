"""Aggregate replayed scenarios into summary records: accuracy with intervals, tokens, cost.

Pure functions over :class:`~memctx.harness.engine.ScenarioResult` values: one record per
suite × strategy × embedding, then one ``suite == "all"`` (pooled) record per strategy × embedding
over the synthetic suites (real-data suites are never pooled: :mod:`memctx.harness.schema`),
each with ``suite``, ``strategy``, ``embedding`` and exactly the keys of
:data:`~memctx.harness.schema.RECORD_METRICS`.

Accuracy, tool accuracy, evidence recall and stale rate are shares of the *fitted* probes
(``fit`` counts them): a context over the window would be refused by the provider, so there
is nothing to score. Their 95 % intervals are percentile bootstraps (1,000 resamples of the
probes, a seeded :class:`numpy.random.Generator`).

Cost follows how providers bill a request from an agent that caches its prompt (Claude
Code marks the end of every request as a cache breakpoint): the leading tokens identical to
the previous request of the session, sent within the cache's TTL, are cache reads; the rest
is written to the cache, at the provider's write price where it charges one (Anthropic:
1.25x input) and at the input price where it does not (OpenAI, Gemini); the assistant
message a call produced is output (probe calls produce none). A strategy that changes the
start of its context every call therefore pays a write for all of it, every call. LLM work
(summaries, extraction) is priced with the same model: prompt tokens as input, completion
tokens as output. The per-token prices come from :func:`memctx.llm.prices_for`, the one
reader of litellm's table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from memctx.llm import Prices, prices_for

from .pooling import pooled_suite
from .schema import ALL_SUITES, RECORD_METRICS, CallRow, ProbeRow

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "aggregate",
    "bootstrap_ci",
    "call_cost",
    "percentile",
    "t_interval",
    "t_quantile",
]

BOOTSTRAP_RESAMPLES = 1000
_KINDS = ("pairing", "hard_cap", "window", "secrets")


class _Result(Protocol):
    """What :func:`aggregate` reads of a :class:`~memctx.harness.engine.ScenarioResult`."""

    probes: list[ProbeRow]
    calls: list[CallRow]
    stats: dict[str, Any]


def call_cost(call: CallRow, prices: Prices) -> float:
    """USD of one call: the cached prefix as cache reads, the rest as cache writes (or plain
    input where the provider does not bill writes), and the output it produced."""
    fresh = call.sent_tokens - call.cached_tokens
    return (
        fresh * prices.uncached_input
        + call.cached_tokens * prices.cache_read
        + call.output_tokens * prices.output
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (linear interpolation, numpy's default); 0 for no values."""
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else 0.0


def bootstrap_ci(values: Sequence[float], *, seed: int = 0) -> list[float]:
    """95 % percentile-bootstrap interval of the mean of ``values``.

    Returns:
        ``[low, high]`` rounded to 4 places; ``[]`` without values and
        ``[mean, mean]`` for a single value.
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return []
    if data.size == 1:
        return [round(float(data[0]), 4)] * 2
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, data.size, size=(BOOTSTRAP_RESAMPLES, data.size))
    means = data[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


def _t_coverage(t: float, df: int) -> float:
    """``P(|T| <= t)`` for Student's t with ``df`` degrees of freedom (Abramowitz and Stegun
    26.7.3-4: a finite sum of powers of ``cos(theta)``, exact for whole ``df``)."""
    theta = math.atan(t / math.sqrt(df))
    cos2 = math.cos(theta) ** 2
    if df % 2 == 0:  # sin(theta) (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...)
        term = total = 1.0
        for k in range(1, df // 2):
            term *= cos2 * (2 * k - 1) / (2 * k)
            total += term
        return math.sin(theta) * total
    if df == 1:
        return 2 * theta / math.pi
    # 2/pi (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...))
    term = total = 1.0
    for k in range(1, (df - 1) // 2):
        term *= cos2 * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)


def t_quantile(df: int, coverage: float = 0.95) -> float:
    """The ``t`` with ``P(|T| <= t) = coverage`` for Student's t with ``df`` degrees of
    freedom (1.96 as ``df`` grows; 12.71 for ``df = 1``), found by bisection."""
    low, high = 0.0, 1.0
    while _t_coverage(high, df) < coverage:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if _t_coverage(mid, df) < coverage else (low, mid)
    return (low + high) / 2


def t_interval(values: Sequence[float]) -> list[float]:
    """95 % Student's t interval of the mean of ``values``, each one independent measurement
    (a replicate's figure): ``mean ± t(0.975, n-1) · sd / sqrt(n)``.

    Unlike :func:`bootstrap_ci`, over the probes of one run, it is over whole runs: with
    few of them the bootstrap would collapse, the t interval widens instead.

    Returns:
        ``[low, high]`` rounded to 4 places; ``[]`` for fewer than two values (one
        measurement has no spread to build an interval from).
    """
    if len(values) < 2:
        return []
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    return [round(mean - half, 4), round(mean + half, 4)]


def _share(flags: Iterable[bool | float]) -> float | None:
    """The mean, or ``None`` when nothing was scored (``full`` fitting no probe of a suite
    has no accuracy there: 0 % would read as "it failed every probe")."""
    items = [float(f) for f in flags]
    return round(sum(items) / len(items), 4) if items else None


def _record(
    key: tuple[str, str, str], results: Sequence[_Result], prices: Prices, seed: int
) -> dict[str, Any]:
    suite, strategy, embedding = key
    probes = [p for r in results for p in r.probes]
    calls = [c for r in results for c in r.calls]
    fit = [p for p in probes if p.fits]
    correct = [float(bool(p.recall_accuracy)) for p in fit]
    evidence = [float(p.evidence_recall or 0.0) for p in fit]
    tool = [float(bool(p.tool_accuracy)) for p in fit]
    kinds = {k: sum(int(r.stats["violation_kinds"].get(k, 0)) for r in results) for k in _KINDS}
    prompt = sum(int(r.stats.get("llm_prompt_tokens", 0)) for r in results)
    completion = sum(int(r.stats.get("llm_completion_tokens", 0)) for r in results)
    cost = sum(call_cost(c, prices) for c in calls)
    cost += prompt * prices.input + completion * prices.output
    sent = sum(c.sent_tokens for c in calls)
    latencies = [float(x) for r in results for x in r.stats.get("hook_latencies_ms", ())]
    record: dict[str, Any] = {
        "suite": suite,
        "strategy": strategy,
        "embedding": embedding,
        "probes": len(probes),
        "fit": len(fit),
        "recall_accuracy": _share(correct),
        "recall_accuracy_ci": bootstrap_ci(correct, seed=seed),
        "tool_accuracy": _share(tool),
        "evidence_recall": _share(evidence),
        "evidence_recall_ci": bootstrap_ci(evidence, seed=seed),
        "stale_rate": _share(bool(p.stale_rate) for p in fit),
        "tokens_per_call": round(sent / len(calls), 1) if calls else 0.0,
        "recall_tokens": round(sum(c.recall_tokens for c in calls) / len(calls), 1)
        if calls
        else 0.0,
        "llm_tokens": prompt + completion,
        "cost_usd": round(cost, 6),
        "cached_share": round(sum(c.cached_tokens for c in calls) / sent, 4) if sent else 0.0,
        "calls": len(calls),
        "compactions": sum(int(r.stats.get("compactions", 0)) for r in results),
        "trims": sum(int(r.stats.get("trims", 0)) for r in results),
        "violations": sum(kinds.values()),
        "violation_kinds": kinds,
        "hook_p50_ms": round(percentile(latencies, 50), 3),
        "hook_p95_ms": round(percentile(latencies, 95), 3),
    }
    assert tuple(record)[3:] == RECORD_METRICS, "record keys drifted from RECORD_METRICS"
    return record


def aggregate(
    results: Sequence[tuple[str, str, str, _Result]],
    *,
    seed: int = 0,
    answer_model: str | None = None,
) -> list[dict[str, Any]]:
    """Summary records of replayed scenarios.

    Args:
        results: ``(suite, strategy, embedding, ScenarioResult)`` per replayed job.
        seed: Seed of the bootstrap generator (the same seed gives the same intervals).
        answer_model: litellm model whose prices give ``cost_usd``; ``None`` takes the
            ``answer_model`` the results were replayed with (``claude-sonnet-4-5`` when
            they do not say).

    Returns:
        Records ordered by suite (first seen), strategy and embedding (first seen), then
        the ``"all"`` records per strategy × embedding (over the synthetic suites; none
        when every result is of a real-data suite).

    Raises:
        ValueError: The answer model has no prices, or the results name several.
    """
    if answer_model is None:
        named = {str(r.stats.get("answer_model", "claude-sonnet-4-5")) for *_, r in results}
        if len(named) > 1:
            raise ValueError(f"results were replayed for several answer models: {sorted(named)}")
        answer_model = named.pop() if named else "claude-sonnet-4-5"
    try:
        prices = prices_for(answer_model)
    except ValueError as exc:
        raise ValueError(f"cannot price the answer model: {exc}") from None
    groups: dict[tuple[str, str, str], list[_Result]] = {}
    pooled: dict[tuple[str, str, str], list[_Result]] = {}
    for suite, strategy, embedding, result in results:
        groups.setdefault((suite, strategy, embedding), []).append(result)
        if pooled_suite(suite):  # real-data suites stand alone (memctx.harness.schema)
            pooled.setdefault((ALL_SUITES, strategy, embedding), []).append(result)
    return [_record(k, v, prices, seed) for k, v in [*groups.items(), *pooled.items()]]
