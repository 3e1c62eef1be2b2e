"""What prompt caching costs, rule by rule: writes for what changed, reads for the stable
prefix, nothing cached after the TTL, and a strategy that rewrites its first message every
call paying writes on every call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.eval_sessions import call_row, scenario

from memctx.harness import call_cost, run_scenario
from memctx.harness.ledger import CACHE_TTL_S, ContextLedger, IdentityInfos
from memctx.llm import prices_for
from memctx.messages import TokenCounter
from memctx.strategies import BaseStrategy, Prepared, register_strategy, strategy_names

COUNTER = TokenCounter()


def ledger() -> ContextLedger:
    return ContextLedger(COUNTER.count_message, lambda m: False, IdentityInfos())


def msg(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": text}


def test_a_stable_prefix_is_read_and_only_the_new_part_is_written() -> None:
    book = ledger()
    first = [msg("system", "You are a coding agent. " * 50), msg("user", "fix the build")]
    second = [*first, msg("assistant", "done"), msg("user", "now the tests")]
    assert book.measure(first, now=0.0).cached == 0  # nothing cached yet: all written
    measured = book.measure(second, now=60.0)
    assert measured.cached == sum(COUNTER.count_message(m) for m in first)
    assert measured.sent - measured.cached == COUNTER.count_message(
        second[2]
    ) + COUNTER.count_message(second[3])


def test_a_call_after_the_ttl_finds_nothing_cached() -> None:
    book = ledger()
    context = [msg("system", "You are a coding agent. " * 50), msg("user", "fix the build")]
    book.measure(context, now=0.0)
    assert book.measure(context, now=CACHE_TTL_S).cached > 0  # just within the TTL
    assert book.measure(context, now=2 * CACHE_TTL_S + 1).cached == 0  # idle past it
    assert book.measure(context, now=2 * CACHE_TTL_S + 2).cached > 0  # re-cached


def test_rewriting_the_first_message_pays_a_write_every_call() -> None:
    book = ledger()
    prices = prices_for("claude-sonnet-4-5")
    for k in range(4):
        context = [msg("system", f"turn {k}: " + "rules " * 200), msg("user", "go on")]
        m = book.measure(context, now=60.0 * k)
        assert m.cached == 0
        row = call_row(m.sent, m.cached)
        assert call_cost(row, prices) == pytest.approx(m.sent * prices.cache_write)


class _RewritesFirst(BaseStrategy):
    """Sends the transcript with a first message that changes every call."""

    name = "test-rewrites-first"

    def __init__(self, setup: Any) -> None:
        super().__init__(setup)
        self.calls = 0

    def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
        self.calls += 1
        return Prepared([msg("user", f"[note {self.calls}]"), *transcript[-4:]])


def test_through_the_engine_a_changing_first_message_is_never_cached(tmp_path: Path) -> None:
    if "test-rewrites-first" not in strategy_names():
        register_strategy("test-rewrites-first", _RewritesFirst)
    case = scenario(turns=12, window=200_000)
    churn = run_scenario(case, "test-rewrites-first", "hash", work_dir=tmp_path / "a")
    stable = run_scenario(case, "full", "hash", work_dir=tmp_path / "b")
    assert all(c.cached_tokens == 0 for c in churn.calls)
    # full appends only: every call after the first reads the previous request from cache.
    assert all(c.cached_tokens > 0 for c in stable.calls[1:] if not c.probe)
