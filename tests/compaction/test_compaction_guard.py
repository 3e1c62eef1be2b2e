"""LoopGuard: spacing with its floor, the effectiveness margin, back-off and its cap, the
counters and reasons, argument errors, and a property over random timelines: no settings
let two compactions run on consecutive turns, and the count stays within the guard's bound."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings

from memctx.compaction import (
    DEFAULT_MARGIN,
    MAX_BACKOFF_TURNS,
    MAX_URGENT_STREAK,
    MIN_SPACING,
    GuardDecision,
    LoopGuard,
)
from memctx.config import MemoryContextConfig
from tests.strategies import GuardTimeline, examples, guard_timelines

_settings = settings(
    max_examples=examples(60, thorough_at_most=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
THRESHOLD = 100_000
EFFECTIVE = 90_000  # exactly threshold x (1 - 10 %)


def test_defaults_follow_the_seed_and_the_documented_margin() -> None:
    guard = LoopGuard.from_config(MemoryContextConfig())
    assert guard.min_turns_between == 3 and guard.spacing == 3
    assert guard.margin == DEFAULT_MARGIN == 0.10
    assert guard.max_backoff_turns == MAX_BACKOFF_TURNS
    assert guard.stats() == {
        "compactions": 0,
        "deferred": 0,
        "ineffective": 0,
        "failed": 0,
        "streak": 0,
        "waiting_until_turn": 0,
    }
    assert guard.reason == "no compaction yet"
    custom = LoopGuard.from_config(
        MemoryContextConfig(compaction={"min_turns_between_compactions": 5}),
        margin=0.2,
        max_backoff_turns=8,
    )
    assert (custom.spacing, custom.margin, custom.max_backoff_turns) == (5, 0.2, 8)


def test_effective_compactions_are_spaced_by_min_turns_between() -> None:
    guard = LoopGuard(min_turns_between=3)
    assert guard.admit(1) == GuardDecision(True, "first compaction", 0)
    assert guard.record(1, tokens_after=EFFECTIVE, threshold=THRESHOLD) is True
    assert guard.waiting_until_turn == 4 and guard.streak == 0
    assert "at most 90,000" in guard.reason and "from turn 4" in guard.reason
    for turn in (1, 2, 3):
        decision = guard.admit(turn)
        assert not decision.allowed and decision.waiting_until_turn == 4
        assert f"deferred at turn {turn}" in decision.reason and "until turn 4" in decision.reason
    assert guard.allows(4) and guard.admit(4).allowed
    assert guard.stats()["deferred"] == 3 and guard.stats()["compactions"] == 1


@pytest.mark.parametrize("configured", [0, 1])
def test_no_setting_lets_compactions_run_on_consecutive_turns(configured: int) -> None:
    guard = LoopGuard(min_turns_between=configured)
    assert guard.spacing == MIN_SPACING == 2
    guard.record(5, tokens_after=0, threshold=THRESHOLD)  # as effective as can be
    assert not guard.allows(5) and not guard.allows(6)
    assert guard.allows(7)


def test_the_margin_decides_what_is_effective() -> None:
    guard = LoopGuard(min_turns_between=3)
    assert guard.effective_limit(THRESHOLD) == EFFECTIVE
    assert guard.record(1, tokens_after=EFFECTIVE + 1, threshold=THRESHOLD) is False
    assert guard.ineffective == 1 and guard.streak == 1
    assert "over 90,000" in guard.reason and "threshold 100,000" in guard.reason
    assert "1 ineffective in a row" in guard.reason and "until turn 7" in guard.reason
    assert LoopGuard(margin=0.0).effective_limit(THRESHOLD) == THRESHOLD
    assert LoopGuard(margin=0.5).effective_limit(999) == 499


def test_back_off_doubles_per_ineffective_compaction_up_to_the_cap() -> None:
    guard = LoopGuard(min_turns_between=3, max_backoff_turns=32)
    assert [guard.backoff_turns(k) for k in range(6)] == [3, 6, 12, 24, 32, 32]
    turn, waits = 1, []
    for _ in range(6):
        assert guard.admit(turn).allowed
        guard.record(turn, tokens_after=THRESHOLD, threshold=THRESHOLD)
        waits.append(guard.waiting_until_turn - turn)
        assert not guard.allows(guard.waiting_until_turn - 1)
        turn = guard.waiting_until_turn
    assert waits == [6, 12, 24, 32, 32, 32]
    assert guard.streak == 6 and guard.ineffective == 6
    # An effective compaction resets the back-off to the plain spacing.
    guard.record(turn, tokens_after=1, threshold=THRESHOLD)
    assert guard.streak == 0 and guard.waiting_until_turn == turn + 3
    # A spacing larger than the cap wins over the cap.
    assert LoopGuard(min_turns_between=50, max_backoff_turns=32).backoff_turns(3) == 50
    assert LoopGuard().backoff_turns(10**9) == MAX_BACKOFF_TURNS  # huge streaks stay cheap


def test_a_failure_is_ineffective_and_backs_off_with_its_reason() -> None:
    guard = LoopGuard(min_turns_between=2)
    guard.record_failure(3, "LLMError: provider unavailable")
    assert guard.stats() == {
        "compactions": 1,
        "deferred": 0,
        "ineffective": 1,
        "failed": 1,
        "streak": 1,
        "waiting_until_turn": 7,
    }
    assert "failed (LLMError: provider unavailable)" in guard.reason
    assert "until turn 7" in guard.reason
    refused = guard.admit(4)
    assert not refused.allowed and "provider unavailable" in refused.reason


def test_one_guard_serves_triggers_with_different_thresholds() -> None:
    guard = LoopGuard(min_turns_between=1)
    # Seed 002's turn trigger at 100k, then seed 001's safeguard at window - reserve.
    assert guard.record(2, tokens_after=80_000, threshold=100_000)
    assert not guard.admit(3).allowed  # the overflow trigger waits too
    assert not guard.record(4, tokens_after=170_000, threshold=180_000)  # 170k > 162k
    assert guard.compactions == 2 and guard.ineffective == 1 and guard.deferred == 1


def test_max_compactions_is_the_bound_of_the_spacing() -> None:
    guard = LoopGuard(min_turns_between=3)
    assert [guard.max_compactions(t) for t in (0, 1, 3, 4, 10)] == [0, 1, 1, 2, 4]


def test_reset_starts_over() -> None:
    guard = LoopGuard()
    guard.record(9, tokens_after=THRESHOLD, threshold=THRESHOLD)
    guard.admit(10)
    guard.reset()
    assert guard.stats() == LoopGuard().stats() and guard.last_turn is None
    assert guard.admit(0).allowed and guard.reason == "no compaction yet"


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"min_turns_between": -1}, "minTurnsBetweenCompactions"),
        ({"min_turns_between": True}, "min_turns_between must be an int"),
        ({"margin": 1.0}, "margin must be a share"),
        ({"margin": -0.1}, "e.g. 0.1 for 10 %"),
        ({"max_backoff_turns": 0}, "pass a cap"),
    ],
)
def test_bad_settings_name_the_problem_and_the_fix(
    kwargs: dict[str, object], fragment: str
) -> None:
    with pytest.raises(ValueError, match=fragment):
        LoopGuard(**kwargs)  # type: ignore[arg-type]


def test_bad_turns_and_thresholds_are_refused() -> None:
    guard = LoopGuard()
    with pytest.raises(ValueError, match="counting from 0"):
        guard.admit(-1)
    guard.record(5, tokens_after=1, threshold=10)
    with pytest.raises(ValueError, match="call reset"):
        guard.allows(4)
    with pytest.raises(ValueError, match="trigger's threshold"):
        guard.record(9, tokens_after=1, threshold=0)


@_settings
@given(guard_timelines())
def test_no_timeline_compacts_on_consecutive_turns_or_beyond_the_bound(
    timeline: GuardTimeline,
) -> None:
    guard = LoopGuard(
        min_turns_between=timeline.min_turns_between,
        margin=timeline.margin,
        max_backoff_turns=timeline.max_backoff_turns,
    )
    turn, ran, wanted, refused = 0, [], 0, 0
    for advance, wants, outcome in timeline.steps:
        turn += advance
        if not wants:
            continue
        wanted += 1
        decision = guard.admit(turn)
        if not decision.allowed:
            refused += 1
            assert turn < guard.waiting_until_turn == decision.waiting_until_turn
            continue
        streak_before = guard.streak
        if ran:
            previous, previous_streak = ran[-1]
            # The gap the guard promised after the previous compaction.
            assert turn - previous >= guard.backoff_turns(previous_streak) >= MIN_SPACING
        if outcome is None:
            guard.record_failure(turn, "scripted failure")
            assert guard.streak == streak_before + 1
        else:
            effective = guard.record(turn, tokens_after=outcome, threshold=timeline.threshold)
            assert effective == (outcome <= guard.effective_limit(timeline.threshold))
            assert guard.streak == (0 if effective else streak_before + 1)
        assert guard.waiting_until_turn == turn + guard.backoff_turns(guard.streak)
        ran.append((turn, guard.streak))
    turns = [t for t, _ in ran]
    assert all(b - a >= MIN_SPACING for a, b in pairwise(turns))
    assert len(ran) <= guard.max_compactions(turn + 1)
    stats = guard.stats()
    assert stats["compactions"] == len(ran) and stats["deferred"] == refused
    assert wanted == len(ran) + refused
    assert stats["ineffective"] >= stats["failed"]


def test_an_urgent_compaction_skips_spacing_and_back_off_for_three_attempts_at_most() -> None:
    guard = LoopGuard(min_turns_between=3)
    guard.record(10, tokens_after=EFFECTIVE, threshold=THRESHOLD)  # effective
    assert not guard.allows(11) and guard.allows(11, urgent=True)
    assert not guard.allows(10, urgent=True)  # never twice in one turn
    assert guard.admit(11, urgent=True).allowed and guard.deferred == 0
    # Ineffective ones: an overflow may still try, up to MAX_URGENT_STREAK in a row ...
    for turn in range(11, 11 + MAX_URGENT_STREAK):
        assert guard.admit(turn, urgent=True).allowed
        guard.record(turn, tokens_after=EFFECTIVE + 1, threshold=THRESHOLD)
    # ... then it waits out the back-off like any other trigger.
    last = 10 + MAX_URGENT_STREAK
    waiting = guard.waiting_until_turn
    assert waiting > last + 1
    assert not guard.admit(last + 1, urgent=True).allowed and guard.deferred == 1
    assert guard.allows(waiting, urgent=True)
