"""The meerkat strategy: seed 002's turn-based compactor, recall only through memory_search."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from helpers.eval_sessions import PLANT, QUESTION, session, strategy_setup

from memctx.messages.markers import is_compaction_summary, is_recalled_block
from memctx.messages.pairing import pairing_violations
from memctx.messages.tokens import estimate_messages_tokens
from memctx.strategies import StrategySetup, strategy_info
from memctx.strategies.meerkat import MeerkatStrategy


def _setup(tmp_path: Path) -> StrategySetup:
    return strategy_setup(tmp_path)


def _replay(strategy: MeerkatStrategy, messages: list[dict[str, Any]]) -> list[int]:
    """An agent loop; returns the turns (model calls) at which the strategy compacted."""
    transcript: list[dict[str, Any]] = []
    budget = strategy.setup.window
    compacted_at: list[int] = []
    turn = 0
    for message in messages:
        if transcript and message["role"] == "assistant":
            replaced = strategy.compact(transcript, estimate_messages_tokens(transcript))
            if replaced is not None:
                transcript = replaced
                compacted_at.append(turn)
            context = strategy.prepare(transcript).context
            assert estimate_messages_tokens(context) <= budget
            assert not pairing_violations(context)
            assert not any(is_recalled_block(m) for m in context)  # nothing injected
            turn += 1
        transcript.append(message)
    return compacted_at


def test_meerkat_is_registered_as_a_summary_strategy() -> None:
    assert strategy_info("meerkat").summaries


def test_compacts_by_turns_and_finds_the_discarded_fact_with_memory_search(
    tmp_path: Path,
) -> None:
    strategy = MeerkatStrategy(_setup(tmp_path))
    # The seed's 100,000-token threshold is brought under this small window.
    assert strategy.config.compaction.auto_compact_threshold == 8_000 - 2_000
    strategy.start_session("s1")
    assert strategy.search(QUESTION) == []  # nothing discarded yet
    compacted_at = _replay(strategy, session("s1", 40, plants={1: PLANT}, tool_words=120))
    assert compacted_at and compacted_at[0] > 0  # never on turn 0
    spacing = strategy.config.compaction.min_turns_between_compactions
    assert all(b - a >= spacing for a, b in itertools.pairwise(compacted_at))
    assert any("8743" in hit for hit in strategy.search(QUESTION) or [])
    strategy.end_session([])
    assert strategy.guard_stats["compactions"] == len(compacted_at)
    usage = strategy.close()
    assert usage["prompt_tokens"] > 0 and usage["hook_failures"] == 0


def test_the_summary_is_a_context_compacted_message(tmp_path: Path) -> None:
    # Over the threshold (9,000) but within the window: no overflow, the turn rule alone.
    strategy = MeerkatStrategy(strategy_setup(tmp_path, window=12_000))
    strategy.start_session("s1")
    messages = session("s1", 30, tool_words=120)
    transcript = messages[:-1]
    tokens = estimate_messages_tokens(transcript)
    assert 9_000 < tokens <= 12_000
    assert strategy.compact(transcript, tokens) is None  # turn 0 never compacts
    replaced = strategy.compact(transcript, tokens)  # turn 1 does
    assert replaced is not None
    assert replaced[0] is transcript[0] and is_compaction_summary(replaced[1])
    assert replaced[-1] is transcript[-1]
    strategy.close()
