"""Seed 004's token-budget planner: budget, mandatory tail, backfill, invalid-budget fallback."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.compaction.planner import history_budget, plan_context
from memctx.config import PlannerConfig
from memctx.messages import (
    InfoCache,
    estimate_message_tokens,
    is_turn_start,
    leading_system_count,
    pairing_violations,
)
from memctx.messages.units import tool_spans
from tests.strategies import FORMATS, examples, valid_conversations

CONFIG = PlannerConfig(reserveTokens=1_000, safetyRatio=1.0, cutToRatio=1.0)
SEED = PlannerConfig(reserveTokens=1_000, safetyRatio=1.0, cutToRatio=1.0, splitLongTurn=False)


def text(role: str, chars: int, tag: str = "") -> dict[str, Any]:
    return {"role": role, "content": (tag + " " + "x" * chars)[:chars]}


def call(k: int, chars: int) -> list[dict[str, Any]]:
    fn = {"name": "read", "arguments": f'{{"path": "m{k}.py"}}'}
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"c{k}", "type": "function", "function": fn}],
        },
        {"role": "tool", "tool_call_id": f"c{k}", "content": "y" * chars},
    ]


def test_the_budget_takes_reserve_static_prompt_dynamic_reserve_and_safety_ratio() -> None:
    config = PlannerConfig(reserveTokens=16_384, dynamicReserveTokens=500, safetyRatio=0.9)
    budget = history_budget(200_000, config, static_tokens=3_000, extra_tokens=1_000)
    assert budget.reserve == 16_384 and budget.dynamic_reserve == 1_500
    assert budget.tokens == int((200_000 - 16_384 - 3_000 - 1_500) * 0.9)
    small = history_budget(16_000, config, static_tokens=0)
    assert small.reserve == 4_000  # a quarter of a small window at most
    assert not history_budget(4_000, config, static_tokens=5_000).valid
    with pytest.raises(ValueError, match="positive number of tokens"):
        history_budget(0, config, 0)


def test_a_history_within_budget_is_sent_whole() -> None:
    messages = [text("system", 300), text("user", 600), text("assistant", 600)]
    plan = plan_context(messages, 10_000, CONFIG)
    assert plan.messages == messages and not plan.trimmed and not plan.mandatory_only
    assert all(a is b for a, b in zip(plan.messages, messages, strict=True))


def test_backfill_keeps_the_newest_whole_units_that_fit_and_stops_at_the_first_that_does_not() -> (
    None
):
    # window 4,000 - reserve 1,000 = 3,000 tokens of history (estimate: chars / 3).
    messages = [
        text("system", 300),
        text("user", 3_000, "old request"),
        *call(0, 6_000),  # 2,000+ tokens with its call
        text("assistant", 600),
        text("user", 600, "new request"),
        *call(1, 1_500),
        text("assistant", 300),
    ]
    plan = plan_context(messages, 4_000, CONFIG)
    kept = plan.messages[1:]
    assert plan.messages[0] is messages[0]  # the static prompt always goes
    assert kept == messages[4:]  # call 0 and its result would not fit: both left out
    assert plan.trimmed and plan.dropped == 3 and not plan.mandatory_only
    assert plan.kept_tokens <= plan.budget.tokens
    assert pairing_violations(plan.messages) == []


def test_a_mandatory_tail_over_budget_is_sent_alone_and_an_invalid_budget_keeps_it() -> None:
    messages = [
        text("system", 300),
        text("user", 900, "old"),
        text("assistant", 900),
        text("user", 300, "run the build"),
        *call(0, 30_000),
    ]
    plan = plan_context(messages, 8_000, CONFIG)
    assert plan.mandatory_only and plan.messages == [messages[0], *messages[3:]]
    tiny = plan_context(
        messages, 100, PlannerConfig(reserveTokens=0, dynamicReserveTokens=200, splitLongTurn=False)
    )
    assert not tiny.budget.valid and tiny.mandatory_only
    assert tiny.messages == [messages[0], *messages[3:]]


def test_without_a_user_request_the_last_message_stays_with_its_call() -> None:
    messages = [text("system", 300), *call(0, 9_000), *call(1, 9_000)]
    plan = plan_context(messages, 2_000, SEED)
    assert plan.mandatory_only and plan.messages == [messages[0], *messages[3:]]


def test_a_turn_longer_than_the_budget_keeps_its_request_and_newest_exchanges() -> None:
    request = text("user", 300, "fix every failing test")
    messages = [text("system", 300), text("user", 900, "old"), request]
    for k in range(6):
        messages += call(k, 1_500)  # ~520 tokens per exchange
    plan = plan_context(messages, 3_000, CONFIG)  # 2,250 tokens of history
    kept = plan.messages[1:]
    assert plan.mandatory_only and kept[0] is request
    assert kept[1:] == messages[-6:]  # the three newest exchanges, whole
    assert plan.kept_tokens <= plan.budget.tokens and pairing_violations(kept) == []
    whole = plan_context(messages, 3_000, SEED)  # the seed's planner: the whole turn
    assert whole.messages[1:] == messages[2:] and whole.kept_tokens > whole.budget.tokens


def test_a_cut_goes_below_the_budget_and_stays_while_the_history_fits() -> None:
    config = PlannerConfig(reserveTokens=1_000, safetyRatio=1.0, cutToRatio=0.6)
    messages = [text("system", 300)]
    for k in range(12):
        messages += [text("user", 600, f"request {k}"), text("assistant", 600, f"reply {k}")]
    first = plan_context(messages, 4_000, config)  # 3,000 tokens of history
    assert first.trimmed and first.kept_tokens <= 0.6 * first.budget.tokens
    grown = [*messages, text("user", 600, "request 12"), text("assistant", 600, "reply 12")]
    again = plan_context(grown, 4_000, config, anchor=first.start)
    assert again.start == first.start  # the same prefix: the provider's cache still holds it
    assert again.messages[: len(first.messages)] == first.messages
    fresh = plan_context(grown, 4_000, config)  # without the anchor the cut moves
    assert fresh.start > first.start
    seed = plan_context(grown, 4_000, CONFIG, anchor=first.start)  # 1.0 cuts to the budget
    assert seed.kept_tokens > 0.6 * seed.budget.tokens


_settings = settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("fmt", FORMATS)
def test_the_plan_never_splits_a_pair_never_touches_the_caller_and_fits_or_is_the_tail(
    fmt: str, split: bool
) -> None:
    @_settings
    @given(
        valid_conversations(fmt),
        st.integers(1, 3_000),
        st.integers(0, 2_000),
        st.sampled_from([0.5, 0.9, 1.0]),
        st.sampled_from([0.5, 0.8, 1.0]),
        st.none() | st.integers(0, 40),
    )
    def check(
        messages: list[Any], window: int, reserve: int, ratio: float, cut: float, at: int | None
    ) -> None:
        config = PlannerConfig(
            reserveTokens=reserve, safetyRatio=ratio, cutToRatio=cut, splitLongTurn=split
        )
        snapshot = copy.deepcopy(messages)
        plan = plan_context(messages, window, config, anchor=at)
        assert messages == snapshot
        infos = InfoCache()
        head = leading_system_count(messages, infos)
        history = messages[head:]
        kept = plan.messages[head:]
        assert plan.messages[:head] == messages[:head]
        assert pairing_violations(plan.messages) == []
        kept_tokens = sum(map(estimate_message_tokens, kept))
        assert kept_tokens == plan.kept_tokens
        starts = [i for i, m in enumerate(history) if is_turn_start(m, infos)]
        anchor = starts[-1] if starts else len(history) - 1
        units = tool_spans(history, infos)
        unit = next((u for u in units if anchor in u), None)
        if history:  # the latest request (or the last message) always goes
            assert any(m is history[anchor] for m in kept)
        if kept_tokens <= plan.budget.tokens:
            if not plan.mandatory_only:  # a contiguous newest stretch
                assert kept == history[len(history) - len(kept) :]
            return
        # Over budget: exactly the mandatory tail.
        assert plan.mandatory_only and kept and unit is not None
        if not split:  # the seed's: from the latest request's unit to the end
            assert kept == history[unit.start :]
        else:  # the request's unit and the last exchange, nothing else
            last = units[-1]
            expected = [*unit, *(last if last != unit else [])]
            assert kept == [history[i] for i in expected]

    check()
