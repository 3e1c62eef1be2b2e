"""Aggregation: record keys, accuracy over fitted probes, intervals, cost arithmetic."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import litellm
import pytest
from helpers.eval_sessions import call_row, scenario

from memctx.harness.engine import ScenarioResult, run_scenario
from memctx.harness.metrics import aggregate, bootstrap_ci, call_cost
from memctx.harness.schema import RECORD_METRICS, CallRow, ProbeRow
from memctx.llm import Prices, prices_for

KINDS = {"pairing": 0, "hard_cap": 0, "window": 0, "secrets": 0}


def _probe(correct: bool, *, fit: bool = True, evidence: float = 1.0, **kw: Any) -> ProbeRow:
    tool_hit = kw.get("tool_hit")
    return ProbeRow(
        suite="s",
        scenario="x",
        strategy="st",
        embedding="none",
        probe="p",
        kind="config",
        tags=[],
        fits=fit,
        recall_accuracy=correct if fit else None,
        tool_accuracy=(correct if tool_hit is None else tool_hit) if fit else None,
        evidence_recall=evidence if fit else None,
        stale_rate=kw.get("stale", False) if fit else None,
        sent_tokens=10,
        recall_tokens=0,
        has_tool=tool_hit is not None,
    )


@dataclass
class _Result:
    probes: list[ProbeRow] = field(default_factory=list)
    calls: list[CallRow] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def _result(probes: list[ProbeRow], calls: list[CallRow], **stats: Any) -> _Result:
    base = {"violation_kinds": dict(KINDS), "hook_latencies_ms": [1.0, 2.0, 3.0, 4.0]}
    return _Result(probes, calls, {**base, **stats})


def test_records_have_exactly_the_schema_keys_and_an_all_record(tmp_path: Path) -> None:
    real = run_scenario(scenario(turns=4, window=100_000), "full", "-", work_dir=tmp_path)
    records = aggregate([("a", "full", "-", real), ("b", "full", "-", real), ("a", "t", "-", real)])
    assert [(r["suite"], r["strategy"]) for r in records] == [
        ("a", "full"),
        ("b", "full"),
        ("a", "t"),
        ("all", "full"),
        ("all", "t"),
    ]
    for record in records:
        assert tuple(record) == ("suite", "strategy", "embedding", *RECORD_METRICS)
    assert records[3]["probes"] == 2 and records[3]["calls"] == 2 * len(real.calls)


def test_accuracy_counts_fitted_probes_only_and_tool_accuracy_falls_back() -> None:
    probes = [
        _probe(True),
        _probe(False, evidence=0.5, stale=True),
        _probe(False, fit=False, evidence=0.0),
        _probe(False, tool_hit=True),
    ]
    (record, _) = aggregate([("s", "st", "-", _result(probes, [call_row(10, 0, 1)]))])
    assert record["probes"] == 4 and record["fit"] == 3
    assert record["recall_accuracy"] == pytest.approx(1 / 3, abs=1e-4)
    assert record["tool_accuracy"] == pytest.approx(2 / 3, abs=1e-4)
    assert record["evidence_recall"] == pytest.approx(2.5 / 3, abs=1e-4)
    assert record["stale_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert record["hook_p50_ms"] == 2.5 and record["hook_p95_ms"] == pytest.approx(3.85)
    # Nothing fitted (full over its window on every probe): no accuracy, not 0 %.
    (none, _) = aggregate(
        [("s", "full", "-", _result([_probe(False, fit=False)], [call_row(10, 0, 1)]))]
    )
    assert none["fit"] == 0 and none["recall_accuracy"] is None
    assert none["recall_accuracy_ci"] == [] and none["stale_rate"] is None


def test_cost_is_cache_writes_plus_cache_reads_plus_output_plus_llm_work() -> None:
    prices = prices_for("claude-sonnet-4-5")
    entry = litellm.model_cost["claude-sonnet-4-5"]
    assert prices.input == entry["input_cost_per_token"]
    assert prices.cache_read == entry["cache_read_input_token_cost"] < prices.input
    assert prices.cache_write == entry["cache_creation_input_token_cost"] > prices.input
    # Where the provider bills no writes, the uncached part is plain input ...
    assert call_cost(call_row(1000, 400, 50), Prices(1.0, 0.1, 5.0)) == pytest.approx(
        600 + 40 + 250
    )
    # ... where it does, it is written to the cache at the write price.
    with_writes = Prices(1.0, 0.1, 5.0, cache_write=1.25)
    assert call_cost(call_row(1000, 400, 50), with_writes) == pytest.approx(750 + 40 + 250)
    calls = [call_row(1000, 0, 100), call_row(1500, 1000, 0)]
    result = _result([_probe(True)], calls, llm_prompt_tokens=2000, llm_completion_tokens=300)
    (record, _) = aggregate([("s", "st", "-", result)])
    by_hand = (
        (1000 + 500) * prices.cache_write
        + 2000 * prices.input  # summary and extraction prompts are not cached
        + 1000 * prices.cache_read
        + (100 + 300) * prices.output
    )
    assert record["cost_usd"] == pytest.approx(by_hand, abs=1e-6)
    assert record["llm_tokens"] == 2300
    assert record["cached_share"] == pytest.approx(1000 / 2500)
    assert record["tokens_per_call"] == 1250.0


def test_cache_read_price_falls_back_to_a_tenth_and_unknown_models_name_neighbours(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(
        litellm.model_cost,
        "memctx-test-model",
        {"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6},
    )
    prices = prices_for("memctx-test-model")
    assert (prices.input, prices.output) == (2e-6, 8e-6)
    assert prices.cache_read == pytest.approx(2e-7)
    with pytest.raises(ValueError, match=r"close matches: .*claude-sonnet-4-5"):
        prices_for("claude-sonet-4-5")
    result = _result([], [], answer_model="claude-sonet-4-5")
    with pytest.raises(ValueError, match=r"answer model.*claude-sonet-4-5.*close matches"):
        aggregate([("s", "st", "-", result)])


def test_answer_model_comes_from_the_results_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        litellm.model_cost,
        "memctx-test-model",
        {"input_cost_per_token": 1.0, "output_cost_per_token": 2.0},
    )
    result = _result([], [call_row(10, 0, 1)], answer_model="memctx-test-model")
    assert aggregate([("s", "st", "-", result)])[0]["cost_usd"] == 12.0
    assert (
        aggregate([("s", "st", "-", result)], answer_model="claude-sonnet-4-5")[0]["cost_usd"] < 1.0
    )
    other = _result([], [], answer_model="claude-sonnet-4-5")
    with pytest.raises(ValueError, match="several answer models"):
        aggregate([("s", "st", "-", result), ("s", "st", "-", other)])


def test_bootstrap_interval_contains_the_mean_and_is_seeded() -> None:
    values = [1.0] * 30 + [0.0] * 20
    low, high = bootstrap_ci(values, seed=3)
    assert low < 0.6 < high and low > 0.4 and high < 0.8
    assert bootstrap_ci(values, seed=3) == [low, high]
    assert bootstrap_ci(values, seed=4) != [low, high]
    assert bootstrap_ci([], seed=1) == []
    assert bootstrap_ci([0.25], seed=1) == [0.25, 0.25]
    probes = [_probe(i % 3 == 0) for i in range(30)]
    records = aggregate([("s", "st", "-", _result(probes, []))], seed=9)
    low, high = records[0]["recall_accuracy_ci"]
    assert low <= records[0]["recall_accuracy"] <= high
    assert aggregate([("s", "st", "-", _result(probes, []))], seed=9) == records


def test_violations_and_counters_add_up_over_results() -> None:
    one = _result([], [], violation_kinds={**KINDS, "pairing": 2}, compactions=1, trims=3)
    two = _result([], [], violation_kinds={**KINDS, "secrets": 1}, compactions=2)
    record = aggregate([("s", "st", "-", one), ("s", "st", "-", two)])[0]
    assert record["violations"] == 3
    assert record["violation_kinds"] == {"pairing": 2, "hard_cap": 0, "window": 0, "secrets": 1}
    assert record["compactions"] == 3 and record["trims"] == 3


def test_results_of_the_engine_aggregate(tmp_path: Path) -> None:
    result: ScenarioResult = run_scenario(scenario(), "memory-context", "hash", work_dir=tmp_path)
    (record, everything) = aggregate([("needle", "memory-context", "hash", result)])
    assert record["recall_accuracy"] == 1.0 and record["violations"] == 0
    assert record["llm_tokens"] == result.stats["llm_tokens"] > 0
    assert record["compactions"] >= 1 and record["recall_tokens"] > 0
    assert everything["suite"] == "all" and everything["embedding"] == "hash"
