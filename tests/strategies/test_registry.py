"""The registry and the plugin contract: names, settings, config defaults and conflicts, entry
points, and a plugin's mistakes reported as the plugin's."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers.eval_sessions import PLANT, QUESTION, session, strategy_setup

from memctx import MemoryContextConfig, make_strategy
from memctx.errors import ConfigError, StrategyError
from memctx.strategies import (
    BaseStrategy,
    Prepared,
    Step,
    Strategy,
    build_strategy,
    parse_strategy,
    register_strategy,
    resolve_config,
    strategy_info,
    strategy_names,
)
from memctx.strategies.full import FullStrategy
from memctx.strategies.registry import CheckedStrategy

BUILT_INS = (
    "full",
    "truncate",
    "observation-masking",
    "openclaw",
    "meerkat",
    "memory-context",
    "memory-context-hook",
    "planner",
)


def _loop(strategy: Strategy, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A plain agent loop: one ``step`` before each assistant message."""
    history: list[dict[str, Any]] = []
    for message in messages:
        if history and message["role"] == "assistant":
            step = strategy.step(history)  # type: ignore[attr-defined]
            assert isinstance(step, Step) and step.messages is step.prepared.context
            history = step.history
        history.append(message)
    return history


@pytest.mark.parametrize("name", BUILT_INS)
def test_make_strategy_builds_every_built_in_for_an_agent_loop(tmp_path: Path, name: str) -> None:
    assert name in strategy_names() and strategy_info(name).built_in
    strategy = make_strategy(name, store_dir=tmp_path / "store", session_id="s1", window=8_000)
    assert strategy.name == name
    history = _loop(strategy, session("s1", 12, plants={1: PLANT}, tool_words=200))
    step = strategy.step([*history, {"role": "user", "content": QUESTION}])  # type: ignore[attr-defined]
    assert step.messages[-1]["content"] == QUESTION
    strategy.end_session(history)
    usage = strategy.close()
    assert all(isinstance(v, float | int) for v in usage.values())


def test_make_strategy_checks_its_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="window must be a positive number"):
        make_strategy("full", store_dir=tmp_path, session_id="s", window=0)
    with pytest.raises(ValueError, match=r"unknown strategy 'nope'; valid: .*truncate"):
        make_strategy("nope", store_dir=tmp_path, session_id="s", window=8_000)
    with pytest.raises(ValueError, match="has no setting 'keep'"):
        make_strategy("observation-masking:keep=3", store_dir=tmp_path, session_id="s", window=99)


def test_names_are_guarded_and_replaced_only_on_request() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_strategy("full", FullStrategy)
    for bad in ("", "a:b"):
        with pytest.raises(ValueError, match="non-empty string without ':'"):
            register_strategy(bad, FullStrategy)
    with pytest.raises(ValueError, match="not among its params"):
        register_strategy("x-bad", FullStrategy, settings={"mode": "contextPruning.mode"})


def test_searches_comes_from_the_class_unless_given() -> None:
    class Quiet(BaseStrategy):
        name = "test-quiet"

        def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
            return Prepared(list(transcript))

    register_strategy("test-quiet", Quiet, replace=True)
    assert strategy_info("test-quiet").searches is False  # BaseStrategy's default
    register_strategy("test-quiet", Quiet, replace=True, searches=True)
    assert strategy_info("test-quiet").searches is True
    assert not strategy_info("planner").searches and strategy_info("openclaw").searches


def test_a_strategys_own_defaults_fill_only_what_the_config_leaves_unset(tmp_path: Path) -> None:
    plain = build_strategy("openclaw", strategy_setup(tmp_path / "a"))
    assert plain.config.context_pruning.mode == "cache-ttl"  # type: ignore[attr-defined]
    told = strategy_setup(tmp_path / "b", **{"contextPruning.mode": "off"})
    assert build_strategy("openclaw", told).config.context_pruning.mode == "off"  # type: ignore[attr-defined]
    meerkat = build_strategy("meerkat", strategy_setup(tmp_path / "c"))
    assert meerkat.config.knowledge_extraction is False  # type: ignore[attr-defined]
    with_facts = build_strategy("meerkat", strategy_setup(tmp_path / "d", knowledgeExtraction=True))
    assert with_facts.config.knowledge_extraction is True  # type: ignore[attr-defined]


def test_a_name_setting_is_a_config_setting_and_a_contradiction_is_refused() -> None:
    config = MemoryContextConfig()
    assert resolve_config("openclaw:pruning=off", config).context_pruning.mode == "off"
    same = config.with_overrides({"contextPruning.mode": "off"})
    assert resolve_config("openclaw:pruning=off", same).context_pruning.mode == "off"
    other = config.with_overrides({"contextPruning.mode": "cache-ttl"})
    with pytest.raises(ConfigError) as caught:
        resolve_config("openclaw:pruning=off", other)
    message = str(caught.value)
    assert "contextPruning.mode='off'" in message and "contextPruning.mode='cache-ttl'" in message
    assert parse_strategy("planner:pruning=cache-ttl") == ("planner", {"pruning": "cache-ttl"})


class _ReturnsList(BaseStrategy):
    name = "test-returns-list"

    def prepare(self, transcript: list[dict[str, Any]]) -> Any:
        return list(transcript)  # the README's old mistake: the context, not a Prepared


class _Raises(BaseStrategy):
    name = "test-raises"

    def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
        raise KeyError("role")


class _BadClose(FullStrategy):
    name = "test-bad-close"

    def close(self) -> Mapping[str, float]:
        return "all good"  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("cls", "method", "said"),
    [
        (
            _ReturnsList,
            "prepare",
            r"prepare\(\) returned list; it must return memctx\.strategies\.Prepared",
        ),
        (_Raises, "prepare", r"prepare\(\) raised KeyError: 'role'"),
        (_BadClose, "close", r"close\(\) returned str; it must return a mapping"),
    ],
)
def test_a_plugins_mistake_names_the_plugin_the_method_and_the_fix(
    tmp_path: Path, cls: type[BaseStrategy], method: str, said: str
) -> None:
    register_strategy(cls.name, cls, replace=True)
    strategy = build_strategy(cls.name, strategy_setup(tmp_path))
    assert isinstance(strategy, CheckedStrategy)
    strategy.start_session("s1")
    history = session("s1", 2, tool_words=10)
    with pytest.raises(StrategyError) as caught:
        strategy.step(history) if method == "prepare" else strategy.close()
    message = str(caught.value)
    assert f"strategy {cls.name!r} (from {__name__})" in message
    assert "bug in memctx" not in message
    import re

    assert re.search(said, message), message


def test_a_factory_that_builds_no_strategy_is_refused(tmp_path: Path) -> None:
    register_strategy("test-not-a-strategy", lambda setup: object(), replace=True)
    with pytest.raises(StrategyError, match=r"its factory returned object, which has no prepare"):
        build_strategy("test-not-a-strategy", strategy_setup(tmp_path))


def test_a_checked_strategy_passes_good_results_through(tmp_path: Path) -> None:
    class Good(FullStrategy):
        name = "test-good"

    register_strategy("test-good", Good, replace=True)
    setup = dataclasses.replace(strategy_setup(tmp_path), params={})
    strategy = build_strategy("test-good", setup)
    strategy.start_session("s1")
    history = session("s1", 3, tool_words=10)
    assert strategy.step(history).messages == history  # type: ignore[attr-defined]
    assert strategy.search("x") is None and strategy.close() == {}


def test_a_window_the_reserve_leaves_almost_nothing_of_is_warned_once_with_the_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="memctx"):
        make_strategy("truncate", store_dir=tmp_path, session_id="s", window=4_040).close()
    assert "reserveTokens 4000" in caplog.text and "below 2020" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memctx"):
        make_strategy("truncate", store_dir=tmp_path, session_id="s2", window=16_000).close()
    assert "reserveTokens" not in caplog.text
