"""StrategyRunner: a strategy stepped by name, and a hook that never raises into the agent."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from memctx.integrations.runner import StrategyRunner
from memctx.strategies import BaseStrategy, Prepared, StrategySetup, make_strategy


def _conversation(turns: int, size: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(turns):
        out.append({"role": "user", "content": f"step {i}: " + "word " * size})
        out.append({"role": "assistant", "content": f"done {i}"})
    return out


def test_a_named_strategy_fits_the_window_and_keeps_history_identity(tmp_path: Path) -> None:
    with StrategyRunner("truncate", store_dir=tmp_path, session_id="s1", window=40_000) as runner:
        small = _conversation(2, 5)
        step = runner.step(small)
        assert not step.failed and not step.compacted
        assert step.history is small
        assert step.context == small
        big = _conversation(200, 300)
        step = runner.step(big)
        assert not step.failed
        counter = runner.strategy.setup.counter  # type: ignore[attr-defined]
        assert counter.count_messages(step.context) <= 40_000
        assert len(step.context) < len(big)
        assert runner.stats.calls == 2 and runner.stats.failures == 0


def test_a_name_without_a_store_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="store_dir"):
        StrategyRunner("memory-context")


def test_an_unknown_strategy_name_raises_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        StrategyRunner("no-such-strategy", store_dir=tmp_path)


class _Broken(BaseStrategy):
    name = "broken"

    def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
        raise RuntimeError("secret sk-live-123 in the conversation")


def test_a_failure_inside_memctx_passes_the_history_through_and_is_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = make_strategy("full", store_dir=tmp_path, session_id="s", window=1_000)
    broken = _Broken(base.setup)  # type: ignore[attr-defined]
    assert isinstance(broken.setup, StrategySetup)
    runner = StrategyRunner(broken)
    history = _conversation(1, 3)
    with caplog.at_level(logging.WARNING, logger="memctx.integrations"):
        step = runner.step(history)
    assert step.failed and step.context is history and step.history is history
    assert runner.stats.failures == 1
    assert "RuntimeError" in caplog.text and "sk-live" not in caplog.text
    runner.close()
    assert runner.close() == {}


class _CompactsPastSix(BaseStrategy):
    """Compacts a history longer than six messages to a summary and the last two."""

    name = "compacts-past-six"

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        self.given: list[list[dict[str, Any]]] = []

    def compact(self, transcript: Any, tokens: int | None = None) -> Any:
        self.given.append(list(transcript))
        if len(transcript) <= 6:
            return None
        return [
            {"role": "user", "content": f"[summary of {len(transcript) - 2}]"},
            *transcript[-2:],
        ]

    def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
        return Prepared(list(transcript))


def test_a_history_resent_whole_goes_on_from_its_compaction(tmp_path: Path) -> None:
    base = make_strategy("full", store_dir=tmp_path, session_id="s", window=1_000)
    strategy = _CompactsPastSix(base.setup)  # type: ignore[attr-defined]
    runner = StrategyRunner(strategy)
    history = _conversation(4, 2)  # 9 messages
    first = runner.step(history)
    assert first.compacted and len(first.context) == 3
    # The agent resends everything, rebuilt as equal objects, plus a new turn.
    rebuilt = [dict(m) for m in history] + [{"role": "assistant", "content": "x"}]
    second = runner.step([*rebuilt, {"role": "user", "content": "next"}])
    assert not second.compacted and runner.stats.compactions == 1
    assert strategy.given[-1][:3] == first.context and len(strategy.given[-1]) == 5
    # kept messages are this call's objects, not the first call's
    assert second.context[1] is rebuilt[-3] and second.context[2] is rebuilt[-2]
    # A history the agent rewrote is taken as it is.
    rewritten = [{"role": "user", "content": "agent's own summary"}, rebuilt[-1]]
    assert runner.step(rewritten).context == rewritten
    runner.end_session()
    runner.end_session()  # once
    assert runner.close() == {}
