"""The replay engine, the strategies and the metrics on hand-built scenarios."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers.scenarios import needle_scenario

from memctx._eval_schema import RECORD_METRICS
from memctx._llm import LLMClient
from memctx._metrics import Prices, aggregate, bootstrap_ci, prices_for
from memctx._replay_engine import ScenarioResult, run_scenario
from memctx._strategies import (
    STRATEGIES,
    FullStrategy,
    Prepared,
    StrategySetup,
    register_strategy,
)


def _run(tmp_path: Path, strategy: str, embedding: str = "-", **kwargs: Any) -> ScenarioResult:
    scenario = kwargs.pop("scenario", None) or needle_scenario()
    work = tmp_path / f"{strategy}-{embedding}"
    return run_scenario(scenario, strategy, embedding, work_dir=work, **kwargs)


def test_full_sees_everything_while_it_fits_and_is_not_fit_after(tmp_path: Path) -> None:
    small = _run(tmp_path, "full", scenario=needle_scenario(tasks=8, window=200_000))
    assert small.probes[0].fit and small.probes[0].correct
    big = _run(tmp_path / "big", "full")
    probe = big.probes[0]
    assert not probe.fit and not probe.correct  # over the window: the request would fail
    assert big.stats["violation_kinds"]["window"] == 0  # for full that is not a violation


def test_truncate_loses_an_early_fact_and_memory_context_recalls_it(tmp_path: Path) -> None:
    truncated = _run(tmp_path, "truncate")
    assert truncated.probes[0].fit and not truncated.probes[0].correct
    remembered = _run(tmp_path, "memory-context", "hash")
    probe = remembered.probes[0]
    assert probe.correct and probe.evidence == 1.0 and probe.tool_hit
    assert probe.recall_tokens > 0
    assert remembered.stats["compactions"] >= 1
    assert remembered.stats["llm_tokens"] > 0  # the summaries were written by the LLM layer
    for result in (truncated, remembered):
        assert sum(result.stats["violation_kinds"].values()) == 0
        assert max(c.sent_tokens for c in result.calls) <= 16_000


def test_revised_fact_is_stale_when_only_the_old_value_is_present(tmp_path: Path) -> None:
    scenario = needle_scenario(stale=True, tasks=8, window=200_000)
    # Pretend the revision was never made: the old value alone is then a stale context.
    session = scenario.sessions[0]
    messages = list(session.messages)
    revision = 1 + 4 * 4
    messages[revision] = {"role": "user", "content": "Task 4: nothing new here."}
    stale_only = replace(scenario, sessions=(replace(session, messages=tuple(messages)),))
    probe = _run(tmp_path, "full", scenario=stale_only).probes[0]
    assert probe.stale and not probe.correct
    fresh = _run(tmp_path / "fresh", "full", scenario=scenario).probes[0]
    assert fresh.correct and not fresh.stale


def test_cached_prefix_grows_for_full_and_breaks_when_truncating(tmp_path: Path) -> None:
    full = _run(tmp_path, "full", scenario=needle_scenario(tasks=10, window=200_000))
    calls = [c for c in full.calls if not c.probe]
    assert calls[0].cached_tokens == 0
    assert all(c.cached_tokens <= c.sent_tokens for c in full.calls)
    # full only appends: each call re-reads the whole previous request from the cache
    assert all(b.cached_tokens >= a.sent_tokens for a, b in itertools.pairwise(calls))

    def share(result: ScenarioResult) -> float:
        return sum(c.cached_tokens for c in result.calls) / sum(c.sent_tokens for c in result.calls)

    truncated = _run(tmp_path, "truncate")
    assert share(truncated) < 0.5 < 0.9 < share(full)


def test_cost_arithmetic_and_records(tmp_path: Path) -> None:
    prices = prices_for("claude-sonnet-4-5")
    assert prices.cache_read < prices.input < prices.output
    assert Prices(1.0, 0.1, 5.0).call(sent=100, cached=40, output=10) == pytest.approx(60 + 4 + 50)
    result = _run(tmp_path, "full", scenario=needle_scenario(tasks=6, window=200_000))
    (record, everything) = aggregate([("needle", "full", "-", result)])
    expected = sum(
        prices.call(c.sent_tokens, c.cached_tokens, c.output_tokens) for c in result.calls
    )
    assert record["cost_usd"] == pytest.approx(expected, abs=1e-4)
    assert everything["suite"] == "all"
    assert set(RECORD_METRICS) <= set(record)
    with pytest.raises(ValueError, match="close names"):
        prices_for("claude-sonet-4-5")


def test_bootstrap_interval_contains_the_mean_and_is_seeded() -> None:
    values = [1.0] * 30 + [0.0] * 20
    low, high = bootstrap_ci(values, seed=3)
    assert low < 0.6 < high
    assert bootstrap_ci(values, seed=3) == [low, high]
    assert bootstrap_ci([], seed=1) == [0.0, 0.0]


def test_same_scenario_gives_the_same_rows_apart_from_latency(tmp_path: Path) -> None:
    def rows(result: ScenarioResult) -> list[Any]:
        calls = [replace(c, latency_ms=0.0) for c in result.calls]
        return [*result.probes, *calls]

    first = _run(tmp_path / "a", "memory-context", "hash")
    second = _run(tmp_path / "b", "memory-context", "hash")
    assert rows(first) == rows(second)


def test_secret_is_never_persisted_and_a_leak_is_caught(tmp_path: Path) -> None:
    secret = "sk-proj-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF"
    scenario = needle_scenario(secret=secret)
    clean = _run(tmp_path, "memory-context", "hash", scenario=scenario)
    assert clean.stats["violation_kinds"]["secrets"] == 0
    assert (tmp_path / "memory-context-hash" / "store").exists()

    class Leaky(FullStrategy):
        name = "leaky-test"

        def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
            (self.setup.work_dir / "dump.txt").write_text(str(transcript))
            return super().prepare(transcript)

    if "leaky-test" not in STRATEGIES:
        register_strategy("leaky-test", lambda setup: Leaky(setup))
    leaked = _run(tmp_path, "leaky-test", scenario=scenario)
    assert leaked.stats["violation_kinds"]["secrets"] == 1


def test_cross_session_probe_is_answered_from_the_earlier_session(tmp_path: Path) -> None:
    scenario = needle_scenario(sessions=2, tasks=30)
    result = _run(tmp_path, "memory-context", "hash", scenario=scenario)
    assert result.probes[0].correct
    assert _run(tmp_path, "truncate", scenario=scenario).probes[0].correct is False


def test_unknown_strategy_names_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="memory-context"):
        _run(tmp_path, "nope")
    with pytest.raises(ValueError, match="already registered"):
        register_strategy("full", lambda setup: FullStrategy(setup))
    assert isinstance(STRATEGIES["full"](_setup(tmp_path)), FullStrategy)


def _setup(tmp_path: Path) -> StrategySetup:
    from memctx._config import MemoryContextConfig
    from memctx._tokens import TokenCounter

    return StrategySetup(
        window=1000,
        embedding="hash",
        config=MemoryContextConfig(enabled=True),
        work_dir=tmp_path,
        counter=TokenCounter(),
        clock=lambda: 0.0,
    )


def test_real_model_path_answers_and_judges_with_scripted_replies(tmp_path: Path) -> None:
    replies = iter(["The orders queue listens on port 8743.", "yes"])

    def completion(**kwargs: Any) -> Any:
        import litellm

        return litellm.completion(
            model="claude-sonnet-4-5", messages=kwargs["messages"], mock_response=next(replies)
        )

    client = LLMClient("claude-sonnet-4-5", completion=completion)
    result = _run(tmp_path, "full", scenario=needle_scenario(tasks=6, window=200_000), llm=client)
    probe = result.probes[0]
    assert probe.answer == "The orders queue listens on port 8743." and probe.judged is True
    assert client.usage().calls == 2 and client.usage().cost_usd > 0


def test_cli_replays_a_transcript_through_a_strategy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from memctx.cli import main

    path = tmp_path / "session.json"
    path.write_text(json.dumps(list(needle_scenario().sessions[0].messages)), encoding="utf-8")
    args = ["replay", str(path), "--window", "16000", "--per-turn", "--strategy"]
    assert main([*args, "truncate"]) == 0
    printed = capsys.readouterr().out
    assert "through truncate at 16,000 tokens" in printed and "violations 0" in printed
    assert main([*args, "memory-context"]) == 0
    printed = capsys.readouterr().out
    assert "compaction" in printed  # the per-call lines mark where the agent compacted
    assert main([*args, "nope"]) == 2
