"""One strategy × embedding figure over chosen suites, pooled from per-suite records.

A run pools each strategy × embedding over the suites *it* ran (``summary["pooled"]``). Two
runs' pooled rows are comparable only when they pooled the same suites; when a run ran
fewer suites than its baseline, :func:`pool_records` rebuilds the baseline's figure from its
per-suite records over the run's suites, as the run itself would have pooled them:

- counts and totals are summed: ``probes``, ``fit``, ``calls``, ``compactions``, ``trims``,
  ``violations`` (and ``violation_kinds``), ``llm_tokens``, ``cost_usd``;
- shares of fitted probes are weighted by ``fit``: ``recall_accuracy``, ``tool_accuracy``,
  ``evidence_recall``, ``stale_rate`` (a suite where no probe fitted adds nothing);
- per-call means are weighted by ``calls``: ``tokens_per_call``, ``recall_tokens``;
- ``cached_share`` (cached input tokens / sent input tokens) is weighted by the tokens sent,
  ``calls × tokens_per_call``.

Only synthetic suites are pooled (:func:`pooled_suite`): the real-data suites of
:data:`memctx.harness.schema.REAL_DATA_SUITES` stand alone, in a run's pooled records and
here alike (the schema module says why).

Each is exact up to the 4-place rounding of the records. What cannot be rebuilt without the
probes is left out: the bootstrap intervals (``[]``; a comparison falls back to the Wilson
interval of the share, :func:`memctx.harness.deltas.share_interval`) and the hook latency
percentiles (``None``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .schema import ALL_SUITES, REAL_DATA_SUITES

__all__ = ["FIT_WEIGHTED", "pool_records", "pooled_suite", "to_number"]

_SUMMED = ("probes", "fit", "llm_tokens", "cost_usd", "calls", "compactions", "trims", "violations")
FIT_WEIGHTED = ("recall_accuracy", "tool_accuracy", "evidence_recall", "stale_rate")
_CALL_WEIGHTED = ("tokens_per_call", "recall_tokens")


def to_number(value: Any) -> float | None:
    """``value`` as a float; ``None`` for a missing, boolean, non-numeric or NaN value."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def pooled_suite(suite: str) -> bool:
    """Whether ``suite``'s records go into the pooled (``"all"``) records: every suite but
    the real-data ones (and ``"all"`` itself)."""
    return suite != ALL_SUITES and suite not in REAL_DATA_SUITES


def _weighted(pairs: Iterable[tuple[float | None, float]]) -> float | None:
    """The weighted mean of the values that exist and weigh something; ``None`` otherwise."""
    total = weight = 0.0
    for value, w in pairs:
        if value is not None and w > 0:
            total += value * w
            weight += w
    return total / weight if weight else None


def pool_records(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``suite == "all"`` record of one strategy × embedding over ``records``' suites.

    Args:
        records: Per-suite records of one strategy × embedding (schema 2 keys).

    Returns:
        A record with the keys of the inputs' metrics, ``suite`` ``"all"`` and
        ``pooled_from``: the suites it covers.

    Raises:
        ValueError: No records, records of several strategies or embeddings, or a record of
            a suite that is not pooled (a real-data suite, or ``"all"``).
    """
    if not records:
        raise ValueError("nothing to pool: pass at least one per-suite record")
    unpooled = sorted(
        {str(r.get("suite")) for r in records if not pooled_suite(str(r.get("suite")))}
    )
    if unpooled:
        raise ValueError(
            f"records of {', '.join(unpooled)} are not pooled (real-data suites stand alone, "
            "and 'all' is already pooled): pass per-suite records of synthetic suites"
        )
    pairs = {(str(r.get("strategy")), str(r.get("embedding"))) for r in records}
    if len(pairs) > 1:
        raise ValueError(f"pool one strategy × embedding at a time, not {sorted(pairs)}")
    strategy, embedding = pairs.pop()
    out: dict[str, Any] = {"suite": ALL_SUITES, "strategy": strategy, "embedding": embedding}
    for key in _SUMMED:
        values = [to_number(r.get(key)) for r in records]
        total = float(sum(v for v in values if v is not None))
        out[key] = int(total) if total.is_integer() and key != "cost_usd" else total
    fits = [to_number(r.get("fit")) or 0.0 for r in records]
    for key in FIT_WEIGHTED:
        out[key] = _weighted(
            (to_number(r.get(key)), fit) for r, fit in zip(records, fits, strict=True)
        )
    out["recall_accuracy_ci"] = []
    out["evidence_recall_ci"] = []
    calls = [to_number(r.get("calls")) or 0.0 for r in records]
    for key in _CALL_WEIGHTED:
        out[key] = _weighted(
            (to_number(r.get(key)), n) for r, n in zip(records, calls, strict=True)
        )
    sent = [
        n * (to_number(r.get("tokens_per_call")) or 0.0)
        for r, n in zip(records, calls, strict=True)
    ]
    out["cached_share"] = _weighted(
        (to_number(r.get("cached_share")), s) for r, s in zip(records, sent, strict=True)
    )
    kinds: dict[str, int] = {}
    for record in records:
        for kind, count in (record.get("violation_kinds") or {}).items():
            kinds[kind] = kinds.get(kind, 0) + int(to_number(count) or 0)
    out["violation_kinds"] = kinds
    out["hook_p50_ms"] = out["hook_p95_ms"] = None
    out["pooled_from"] = [str(r.get("suite")) for r in records]
    return out
