"""The replay engine on hand-built scenarios: scoring, checks, cached prefixes, determinism."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers.eval_sessions import scenario, session

from memctx.config import MemoryContextConfig
from memctx.harness import embedders as embedders_module
from memctx.harness import engine as engine_module
from memctx.harness.engine import ScenarioResult, run_scenario
from memctx.harness.ledger import ContextLedger
from memctx.harness.scenario import Scenario
from memctx.llm.client import LLMClient
from memctx.messages import recalled_block_text
from memctx.messages.anatomy import InfoCache
from memctx.messages.pairing import pairing_violations
from memctx.messages.tokens import estimate_message_tokens
from memctx.retrieval import HashEmbedder
from memctx.strategies import Messages, Prepared, register_strategy, strategy_names
from memctx.strategies.full import FullStrategy

SECRET = "sk-proj-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF"


def _run(tmp_path: Path, strategy: str, embedding: str = "hash", **kwargs: Any) -> ScenarioResult:
    chosen: Scenario = kwargs.pop("scenario", None) or scenario()
    work = tmp_path / f"{strategy}-{embedding}-{len(list(tmp_path.iterdir()))}"
    return run_scenario(chosen, strategy, embedding, work_dir=work, **kwargs)


def _clean(result: ScenarioResult) -> bool:
    return sum(int(v) for v in result.stats["violation_kinds"].values()) == 0


def _register(name: str, cls: type) -> None:
    if name not in strategy_names():
        register_strategy(name, cls)


def test_full_sees_everything_while_it_fits_and_is_not_fit_beyond(tmp_path: Path) -> None:
    small = _run(tmp_path, "full", scenario=scenario(turns=6, window=100_000))
    (probe,) = small.probes
    assert probe.fits and probe.recall_accuracy and probe.evidence_recall == 1.0
    assert probe.stale_rate is False
    assert probe.embedding == "none" and not probe.has_tool  # full never searches
    assert probe.tool_accuracy == probe.recall_accuracy
    big = _run(tmp_path, "full")
    assert not big.probes[0].fits and big.probes[0].recall_accuracy is None  # not False
    assert "overflow" in big.calls[-1].events
    assert _clean(big)  # over the window is "not fit" for full, not a violation


def test_truncate_loses_the_early_fact_and_memory_context_recalls_it(tmp_path: Path) -> None:
    truncated = _run(tmp_path, "truncate")
    assert truncated.probes[0].fits and truncated.probes[0].recall_accuracy is False
    assert truncated.stats["trims"] > 0 and truncated.stats["llm_tokens"] == 0
    remembered = _run(tmp_path, "memory-context")
    probe = remembered.probes[0]
    assert probe.embedding == "hash"
    assert probe.recall_accuracy and probe.evidence_recall == 1.0 and probe.tool_accuracy
    assert probe.has_tool and probe.recall_tokens > 0
    assert remembered.stats["compactions"] >= 1 and remembered.stats["llm_tokens"] > 0
    assert remembered.stats["hook_failures"] == 0
    assert any("compaction" in c.events for c in remembered.calls)
    for result in (truncated, remembered):
        assert _clean(result)
        assert max(c.sent_tokens for c in result.calls) <= 8_000
        assert len(result.stats["hook_latencies_ms"]) == len(result.calls)


def test_anthropic_format_replays_without_violations(tmp_path: Path) -> None:
    chosen = scenario(fmt="anthropic")
    for strategy in ("full", "truncate", "memory-context"):
        result = _run(tmp_path, strategy, scenario=chosen)
        assert result.stats["violation_kinds"]["pairing"] == 0
    assert _run(tmp_path, "memory-context", scenario=chosen).probes[0].recall_accuracy


def test_a_superseded_value_alone_is_stale(tmp_path: Path) -> None:
    revised = scenario(revised=True, turns=8, window=100_000)
    fresh = _run(tmp_path, "full", scenario=revised).probes[0]
    # both values present: the current one counts
    assert fresh.recall_accuracy and not fresh.stale_rate
    first = revised.sessions[0]
    messages = [
        {"role": "user", "content": "Turn 4: nothing new."} if "9321" in str(m) else m
        for m in first.messages
    ]
    stale_only = replace(revised, sessions=(replace(first, messages=tuple(messages)),))
    probe = _run(tmp_path, "full", scenario=stale_only).probes[0]
    assert probe.stale_rate and not probe.recall_accuracy


def test_cached_prefix_grows_for_full_and_breaks_when_the_start_is_rewritten(
    tmp_path: Path,
) -> None:
    full = _run(tmp_path, "full", scenario=scenario(turns=10, window=100_000))
    calls = [c for c in full.calls if not c.probe]
    assert calls[0].cached_tokens == 0
    assert all(b.cached_tokens == a.sent_tokens for a, b in itertools.pairwise(calls))

    def share(result: ScenarioResult) -> float:
        return sum(c.cached_tokens for c in result.calls) / sum(c.sent_tokens for c in result.calls)

    truncated = _run(tmp_path, "truncate", scenario=scenario(turns=60))
    trimmed = [c for c in truncated.calls if "trim" in c.events]
    system = estimate_message_tokens(scenario().sessions[0].messages[0])
    # Dropping the oldest messages rewrites the start: only the system prompt is a cache hit
    # (a call that drops nothing new keeps the previous request as its prefix).
    rewritten = [c for c in trimmed if c.cached_tokens == system]
    assert len(rewritten) >= len(trimmed) // 2
    assert share(truncated) < 0.6 < 0.9 < share(full)


def test_same_inputs_give_the_same_rows_apart_from_timing(tmp_path: Path) -> None:
    chosen = scenario(probes_at=(41, 81), sessions=2, turns=30)

    def rows(result: ScenarioResult) -> list[Any]:
        return [*result.probes, *(replace(c, latency_ms=0.0) for c in result.calls)]

    first = _run(tmp_path, "memory-context", scenario=chosen)
    second = _run(tmp_path, "memory-context", scenario=chosen)
    assert rows(first) == rows(second)
    timing = {"wall_s", "hook_latencies_ms"}
    assert {k: v for k, v in first.stats.items() if k not in timing} == {
        k: v for k, v in second.stats.items() if k not in timing
    }


def test_cross_session_recall_finds_the_earlier_session(tmp_path: Path) -> None:
    chosen = scenario(sessions=2, turns=20)
    assert _run(tmp_path, "memory-context", scenario=chosen).probes[0].recall_accuracy
    assert not _run(tmp_path, "truncate", scenario=chosen).probes[0].recall_accuracy
    # Knowledge is shared by every session; raw segments only with crossSession (on by
    # default for multi-session scenarios, but an override wins).
    off = MemoryContextConfig(crossSession=False, knowledgeExtraction=False)
    assert (
        not _run(tmp_path, "memory-context", scenario=chosen, config=off).probes[0].recall_accuracy
    )


def test_a_planted_secret_stays_out_of_the_store_and_a_leak_is_caught(tmp_path: Path) -> None:
    chosen = scenario(secret=SECRET)
    clean = _run(tmp_path, "memory-context", scenario=chosen)
    assert clean.stats["violation_kinds"]["secrets"] == 0
    assert any(p.is_file() for p in tmp_path.rglob("*segments*"))  # the store was written

    class Leaky(FullStrategy):
        name = "leaky-disk"

        def prepare(self, transcript: Messages) -> Prepared:
            self.setup.store_dir.mkdir(parents=True, exist_ok=True)
            (self.setup.store_dir / "dump.txt").write_text(str(transcript))
            return super().prepare(transcript)

    class Recalls(FullStrategy):
        name = "leaky-recall"

        def prepare(self, transcript: Messages) -> Prepared:
            block = {"role": "user", "content": recalled_block_text(SECRET)}
            return Prepared([*transcript[:1], block, *transcript[1:]], recall_cap=10_000)

    _register("leaky-disk", Leaky)
    _register("leaky-recall", Recalls)
    assert _run(tmp_path, "leaky-disk", scenario=chosen).stats["violation_kinds"]["secrets"] == 1
    recalled = _run(tmp_path, "leaky-recall", scenario=chosen)
    assert recalled.stats["violation_kinds"]["secrets"] == len(recalled.calls)


def test_broken_pairs_oversized_blocks_and_window_overflow_are_violations(
    tmp_path: Path,
) -> None:
    class Broken(FullStrategy):
        name = "broken-test"

        def prepare(self, transcript: Messages) -> Prepared:
            # Drop every tool call (orphaned results); the history outgrows the window.
            kept = [m for m in transcript if not m.get("tool_calls")]
            block = {"role": "user", "content": recalled_block_text("x" * 3_000)}
            return Prepared([kept[0], block, *kept[1:]], recall_cap=100)

    _register("broken-test", Broken)
    result = _run(tmp_path, "broken-test", scenario=scenario(turns=40))
    kinds = result.stats["violation_kinds"]
    calls = len(result.calls)
    assert kinds["hard_cap"] == calls
    assert 0 < kinds["pairing"] < calls  # the first call has no tool results to lose yet
    assert 0 < kinds["window"] < calls


def test_real_model_path_answers_and_judges_with_mock_responses(tmp_path: Path) -> None:
    replies = iter(["The orders queue listens on port 8743.", "yes"])

    def completion(**kwargs: Any) -> Any:
        import litellm

        kwargs.pop("mock_response", None)
        return litellm.completion(**kwargs, mock_response=next(replies))

    client = LLMClient("claude-sonnet-4-5", completion=completion)
    result = _run(tmp_path, "full", scenario=scenario(turns=4, window=100_000), llm=client)
    probe = result.probes[0]
    assert probe.answer == "The orders queue listens on port 8743." and probe.judged is True
    assert client.usage().calls == 2 and client.usage().cost_usd > 0


def test_unknown_strategy_and_bad_window_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="memory-context"):
        _run(tmp_path, "nope")
    with pytest.raises(ValueError, match="window"):
        _run(tmp_path, "full", window=-5)


def _random_context(rng: random.Random, pool: list[dict[str, Any]]) -> list[dict[str, Any]]:
    start = rng.randrange(0, len(pool) // 2)
    context = pool[: rng.randint(0, 2)] + pool[start : start + rng.randint(1, len(pool))]
    if context and rng.random() < 0.3:
        del context[rng.randrange(len(context))]
    if rng.random() < 0.3:
        context.insert(
            rng.randint(0, len(context)), {"role": "user", "content": "<recalled-context>"}
        )
    if context and rng.random() < 0.1:
        context.append(context[rng.randrange(len(context))])  # a duplicated message
    return context


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_ledger_pairing_verdict_equals_a_full_check(fmt: str) -> None:
    rng = random.Random(7)
    pool = session("s", 12, fmt=fmt, tool_words=5)
    infos = InfoCache()
    ledger = ContextLedger(estimate_message_tokens, lambda m: "recalled" in str(m), infos)
    contexts: list[list[dict[str, Any]]] = []
    growing: list[dict[str, Any]] = []
    for message in pool:  # an append-only run, then random edits
        growing = [*growing, message]
        contexts.append(growing)
    contexts += [_random_context(rng, pool) for _ in range(300)]
    for context in contexts:
        measure = ledger.measure(context)
        assert measure.pairing_ok == (not pairing_violations(context)), context
        assert measure.sent == sum(estimate_message_tokens(m) for m in context)


def test_cli_replays_a_transcript_through_a_strategy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from memctx.cli import main

    path = tmp_path / "session.json"
    path.write_text(json.dumps(session("s1", 40)), encoding="utf-8")
    args = ["replay", str(path), "--window", "8000", "--per-turn", "--strategy"]
    assert main([*args, "truncate"]) == 0
    printed = capsys.readouterr().out
    assert "through truncate at 8,000 tokens" in printed and "violations 0" in printed
    assert main([*args, "memory-context"]) == 0
    printed = capsys.readouterr().out
    assert "compaction" in printed  # the per-call lines mark where the agent compacted
    assert main([*args, "nope"]) == 2


def test_the_transformer_model_setting_reaches_the_jobs_embedder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[str, str]] = []

    def recording(kind: str, model: str = "all-MiniLM-L6-v2") -> HashEmbedder:
        asked.append((kind, model))
        return HashEmbedder()

    monkeypatch.setattr(engine_module, "job_embedder", recording)
    config = MemoryContextConfig().with_overrides({"transformerModel": "all-mpnet-base-v2"})
    _run(tmp_path, "memory-context", "transformer", config=config)
    _run(tmp_path, "memory-context", "transformer")
    assert asked == [("transformer", "all-mpnet-base-v2"), ("transformer", "all-MiniLM-L6-v2")]


def test_one_shared_embedder_per_kind_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[tuple[str, str]] = []

    def building(kind: str, *, model: str = "all-MiniLM-L6-v2") -> HashEmbedder:
        built.append((kind, model))
        return HashEmbedder()

    monkeypatch.setattr(embedders_module, "make_embedder", building)
    monkeypatch.setattr(embedders_module, "_SHARED", {})
    for model in ("all-MiniLM-L6-v2", "all-mpnet-base-v2", "all-MiniLM-L6-v2"):
        embedders_module.job_embedder("transformer", model)  # type: ignore[arg-type]
    embedders_module.job_embedder("hash", "all-mpnet-base-v2")
    embedders_module.job_embedder("hash")
    assert built == [
        ("transformer", "all-MiniLM-L6-v2"),
        ("transformer", "all-mpnet-base-v2"),
        ("hash", "all-MiniLM-L6-v2"),
    ]
