"""The openclaw strategy: seed 001's compaction, the memory flush, memory_search over the files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from helpers.eval_sessions import PLANT, QUESTION, session, strategy_setup

from memctx.messages.markers import is_compaction_summary
from memctx.messages.pairing import pairing_violations
from memctx.messages.tokens import estimate_messages_tokens
from memctx.strategies import StrategySetup, build_strategy, strategy_info
from memctx.strategies.openclaw import OpenClawStrategy
from memctx.text.cut import OMISSION_NOTE_RE


def _setup(tmp_path: Path) -> StrategySetup:
    return strategy_setup(tmp_path)


def _replay(strategy: OpenClawStrategy, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An agent loop: compact (and flush) before each model call, then call."""
    transcript: list[dict[str, Any]] = []
    budget = strategy.setup.window
    for message in messages:
        if transcript and message["role"] == "assistant":
            replaced = strategy.compact(transcript, estimate_messages_tokens(transcript))
            if replaced is not None:
                transcript = replaced
            context = strategy.prepare(transcript).context
            assert estimate_messages_tokens(context) <= budget
            assert not pairing_violations(context)
        transcript.append(message)
    return transcript


def test_openclaw_is_registered_as_a_summary_strategy(tmp_path: Path) -> None:
    assert strategy_info("openclaw").summaries
    strategy = build_strategy("openclaw", _setup(tmp_path))
    assert isinstance(strategy, OpenClawStrategy) and strategy.searches


def test_memory_search_settings_reach_the_memory_files(tmp_path: Path) -> None:
    setup = strategy_setup(tmp_path, **{"memorySearch.maxInjectedChars": 40})
    strategy = OpenClawStrategy(setup)
    assert strategy.memory.config.max_injected_chars == 40
    strategy.memory.append_daily("The deploy key rotates every Tuesday at 04:00 UTC, per ops")
    assert [len(hit) for hit in strategy.search("when does the deploy key rotate") or []] == [40]


def test_the_flush_writes_the_fact_before_compaction_discards_it(tmp_path: Path) -> None:
    strategy = OpenClawStrategy(_setup(tmp_path))
    strategy.start_session("s1")
    messages = session("s1", 40, plants={1: PLANT}, tool_words=120)
    final = _replay(strategy, messages)
    assert strategy.compactor.failures == 0
    assert is_compaction_summary(final[1])  # compacted at least once
    assert not any(m is messages[3] for m in final)  # the turn stating it is gone
    # The flush wrote it down first; memory_search finds it in the daily log.
    hits = strategy.search(QUESTION) or []
    assert any("8743" in hit for hit in hits)
    logs = list((tmp_path / "workspace" / "memory").glob("*.md"))
    assert logs and "8743" in logs[0].read_text()
    # At most one flush per compaction cycle: cycles are the compactions plus the first.
    state = json.loads((tmp_path / "flush" / "s1" / "memory-flush.json").read_text())
    assert 1 <= strategy.counts["flushes"] <= state["compactionCount"] + 1
    usage = strategy.close()
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0


def test_a_huge_tool_output_never_makes_a_call_overflow(tmp_path: Path) -> None:
    strategy = OpenClawStrategy(_setup(tmp_path))
    strategy.start_session("s1")
    messages = session("s1", 6, tool_words=80)
    huge = messages[7]
    huge["content"] = "log line " * 6_000  # one tool output alone over the window
    final = _replay(strategy, [*messages, *session("s2", 4, tool_words=80, seed=1)[1:]])
    # Compaction summarised it (the summariser sees it capped, never whole); no call
    # overflowed on the way (checked in _replay).
    assert is_compaction_summary(final[1]) and not any(m is huge for m in final)
    assert strategy.compactor.failures == 0


def _build_session() -> list[dict[str, Any]]:
    """A request, six reads of 9,000 characters, a reply: ~19K tokens at a 40K window."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "Why does the build fail?"}]
    for k in range(6):
        fn = {"name": "read", "arguments": f'{{"path": "src/m{k}.py"}}'}
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"r{k}", "type": "function", "function": fn}],
            }
        )
        out.append({"role": "tool", "tool_call_id": f"r{k}", "content": f"m{k} " * 3_000})
    out.append({"role": "assistant", "content": "Found it."})
    return out


def test_openclaw_prunes_old_tool_results_when_the_cache_is_cold_and_resends_them_warm(
    tmp_path: Path,
) -> None:
    ticks = [1_767_225_600.0]
    setup = dataclasses.replace(strategy_setup(tmp_path, window=40_000), clock=lambda: ticks[0])
    strategy = OpenClawStrategy(setup)
    strategy.start_session("s1")
    transcript = _build_session()
    first = strategy.prepare(transcript).context
    trimmed = [m for m in first if OMISSION_NOTE_RE.search(str(m.get("content")))]
    assert len(trimmed) == 4 and strategy.counts["prunings"] == 1  # the last 3 turns stay
    assert all(
        not OMISSION_NOTE_RE.search(m["content"]) for m in transcript[1:] if "tool_call_id" in m
    )
    ticks[0] += 60  # warm: the same pruned dicts again
    again = strategy.prepare([*transcript, {"role": "user", "content": "Fix it."}]).context
    assert [m for m in again if m in trimmed] == trimmed
    assert all(any(m is t for m in again) for t in trimmed)
    # Off by the strategy's name, or by the config: what the config sets wins over the
    # strategy's own default (cache-ttl).
    by_name = build_strategy(
        "openclaw:pruning=off", dataclasses.replace(setup, store_dir=tmp_path / "a")
    )
    by_config = OpenClawStrategy(
        dataclasses.replace(
            setup,
            store_dir=tmp_path / "b",
            config=setup.config.with_overrides({"contextPruning.mode": "off"}),
        )
    )
    for off in (by_name, by_config):
        off.start_session("s1")
        assert off.prepare(transcript).context == transcript
