"""The built-in strategies on their own: truncation, compaction, the session-end hook, the
hook strategy's recorded compactions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.eval_sessions import PLANT, QUESTION, session, strategy_setup

from memctx.compaction import compaction_reserve, tail_start
from memctx.messages.markers import COMPACTED_PREFIX, is_compaction_summary
from memctx.messages.pairing import pairing_violations
from memctx.messages.tokens import estimate_messages_tokens
from memctx.strategies import HOOK_STRATEGY, StrategySetup, build_strategy
from memctx.strategies.memory_context import MemoryContextStrategy
from memctx.strategies.memory_context_hook import MemoryContextHookStrategy
from memctx.strategies.truncate import TruncateStrategy


def _setup(tmp_path: Path, window: int = 6_000, **overrides: Any) -> StrategySetup:
    return strategy_setup(tmp_path, window, **overrides)


def test_truncate_keeps_the_system_prompt_fits_and_never_orphans_a_result(
    tmp_path: Path,
) -> None:
    setup = _setup(tmp_path)
    transcript = session("s", 30, tool_words=200)
    incremental = TruncateStrategy(setup)
    budget = setup.window - setup.config.reserve_tokens
    for end in range(2, len(transcript) + 1):
        part = transcript[:end]
        if part[-1].get("tool_calls"):
            continue  # a model call never ends on its own pending tool call
        prepared = incremental.prepare(part)
        fresh = TruncateStrategy(setup).prepare(part)
        assert prepared.context == fresh.context  # two pointers == measuring from scratch
        assert prepared.context[0] is transcript[0]
        assert estimate_messages_tokens(prepared.context) <= budget
        assert not pairing_violations(prepared.context)
        assert prepared.context[-1] is part[-1]
        assert prepared.trimmed == (len(prepared.context) < len(part))
    assert prepared.trimmed
    # A probe's question (not kept in the transcript) does not confuse the next call.
    question = {"role": "user", "content": QUESTION}
    assert incremental.prepare([*transcript, question]).context[-1] is question
    assert incremental.prepare(transcript).context[-1] is transcript[-1]


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_tail_never_starts_at_a_tool_result(tmp_path: Path, fmt: str) -> None:
    setup = _setup(tmp_path)
    transcript = session("s", 12, fmt=fmt, tool_words=50)
    for budget in range(0, 2_000, 37):
        start = tail_start(transcript, 1, budget, setup.counter.count_message, setup.infos)
        assert 2 <= start <= len(transcript)
        assert not pairing_violations(transcript[:1] + transcript[start:])


def test_compaction_replaces_the_old_part_with_one_summary(tmp_path: Path) -> None:
    setup = _setup(tmp_path)
    strategy = MemoryContextStrategy(setup)
    strategy.start_session("s1")
    transcript = session("s1", 20, plants={1: PLANT}, tool_words=200)
    tokens = estimate_messages_tokens(transcript)
    reserve = compaction_reserve(setup.config, setup.window)
    assert reserve == setup.window // 4  # the 20k floor is capped for a small window
    assert strategy.compact(transcript[:6], estimate_messages_tokens(transcript[:6])) is None
    compacted = strategy.compact(transcript, tokens)
    assert compacted is not None
    assert compacted[0] is transcript[0] and is_compaction_summary(compacted[1])
    assert compacted[1]["content"].startswith(COMPACTED_PREFIX)
    assert compacted[-1] is transcript[-1]
    assert estimate_messages_tokens(compacted) < setup.window - reserve
    assert not pairing_violations(compacted)
    # The old part was archived: the tool finds the planted fact.
    assert any("8743" in hit for hit in strategy.search(QUESTION) or [])
    again = strategy.compact(compacted, estimate_messages_tokens(compacted))
    assert again is None  # under the threshold now
    strategy.end_session(compacted)
    usage = strategy.close()
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["hook_failures"] == 0


def test_session_end_hook_makes_the_tail_recallable_later(tmp_path: Path) -> None:
    setup = _setup(tmp_path, window=100_000, crossSession=True)
    strategy = MemoryContextStrategy(setup)
    strategy.start_session("s1")
    first = session("s1", 3, plants={2: PLANT}, tool_words=20)
    strategy.prepare(first)
    strategy.end_session(first)  # never compacted: only the session-end hook archives it
    strategy.start_session("s2")
    second = [*session("s2", 2, tool_words=20), {"role": "user", "content": QUESTION}]
    context = strategy.prepare(second).context
    assert any("8743" in str(m) for m in context)
    strategy.end_session(second)
    strategy.close()


def test_the_hook_strategy_replays_recorded_compactions_only(tmp_path: Path) -> None:
    setup = _setup(tmp_path)
    strategy = build_strategy(HOOK_STRATEGY, setup)
    assert isinstance(strategy, MemoryContextHookStrategy) and strategy.name == HOOK_STRATEGY
    strategy.start_session("s1")
    history = session("s1", 20, plants={1: PLANT}, tool_words=200)
    tokens = estimate_messages_tokens(history)
    assert tokens > setup.window  # memory-context would compact here; the hook never does
    assert strategy.compact(history, tokens) is None
    summary = {"role": "user", "content": f"{COMPACTED_PREFIX} Turns 0-19 done."}
    tail = session("t1", 2, seed=1)[1:]
    transcript = [*history, summary, *tail]
    replaced = strategy.compact(transcript, estimate_messages_tokens(transcript))
    assert replaced is not None
    assert replaced[0] is history[0] and replaced[1] is summary and replaced[2:] == tail
    # The history before the summary went to the compaction hook: the tool finds the fact.
    assert any("8743" in hit for hit in strategy.search(QUESTION) or [])
    # Replayed once: the summary is no longer after the start, and the calls that follow
    # only append.
    assert strategy.compact(replaced, estimate_messages_tokens(replaced)) is None
    later = [*replaced, *session("t2", 2, seed=2)[1:]]
    assert strategy.compact(later, estimate_messages_tokens(later)) is None
    context = strategy.prepare(later).context
    assert not pairing_violations(context)
    assert estimate_messages_tokens(context) <= setup.window
    strategy.end_session(later)
    usage = strategy.close()
    assert usage["prompt_tokens"] > 0  # extraction of the archived history, no summaries
    assert usage["hook_failures"] == 0


def test_only_the_hook_strategy_replays_a_summary_under_the_threshold(tmp_path: Path) -> None:
    summary = {"role": "user", "content": f"{COMPACTED_PREFIX} Turns 0-2 done."}
    short = [*session("s1", 3, tool_words=20), summary, *session("t1", 1, seed=1)[1:]]
    tokens = estimate_messages_tokens(short)
    compacting = MemoryContextStrategy(_setup(tmp_path / "a"))
    hook = MemoryContextHookStrategy(_setup(tmp_path / "b"))
    for strategy in (compacting, hook):
        strategy.start_session("s1")
    assert compacting.name == "memory-context" and compacting.compactor is not None
    assert compacting.compact(short, tokens) is None  # its own threshold decides
    assert hook.compact(short, tokens) == [short[0], *short[short.index(summary) :]]
    for strategy in (compacting, hook):
        strategy.end_session(short)
        strategy.close()
