"""Token budgets of seed 001's compaction: the adaptive chunk ratio, oversized messages, the
reserve and output limits, and :class:`CompactionBudget`."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.compaction import (
    BASE_CHUNK_RATIO,
    MIN_CHUNK_RATIO,
    OVERSIZED_SHARE,
    SAFETY_MARGIN,
    CompactionBudget,
    compaction_reserve,
    compute_adaptive_chunk_ratio,
    is_oversized_for_summary,
    summary_message,
    summary_token_limit,
)
from memctx.config import MemoryContextConfig
from memctx.messages import COMPACTED_PREFIX, is_compaction_summary
from tests.strategies import examples


def sized(*tokens: int) -> tuple[list[dict[str, Any]], Any]:
    """Messages and a counter that gives each the listed size."""
    messages = [{"role": "user", "content": f"m{i}", "size": t} for i, t in enumerate(tokens)]
    return messages, lambda m: m["size"]


def test_the_seed_constants() -> None:
    assert (BASE_CHUNK_RATIO, MIN_CHUNK_RATIO, SAFETY_MARGIN, OVERSIZED_SHARE) == (
        0.4,
        0.15,
        1.2,
        0.5,
    )


# --- adaptive chunk ratio ------------------------------------------------------------------


def test_ratio_is_the_base_for_no_messages_and_for_small_ones() -> None:
    assert compute_adaptive_chunk_ratio([], 1000) == 0.4
    messages, count = sized(10, 50, 30)
    assert compute_adaptive_chunk_ratio(messages, 1000, count=count) == 0.4


def test_ratio_stays_at_the_base_up_to_exactly_ten_percent_padded() -> None:
    # average 100 tokens x 1.2 = 120 = 10 % of 1,200: not above it.
    messages, count = sized(100, 100)
    assert compute_adaptive_chunk_ratio(messages, 1200, count=count) == 0.4


@pytest.mark.parametrize(
    ("average", "expected"),
    [
        (110, 0.4 - 2 * 110 * 1.2 / 1200),  # 11 % padded: shrinks by twice the share
        (120, 0.4 - 2 * 120 * 1.2 / 1200),
        (125, 0.15),  # 12.5 % x 2 = 25 %: exactly the floor
        (300, 0.15),  # never below the floor
        (5000, 0.15),
    ],
)
def test_ratio_falls_toward_the_floor_when_the_average_message_is_large(
    average: int, expected: float
) -> None:
    messages, count = sized(average - 10, average + 10)  # the average counts, not each one
    ratio = compute_adaptive_chunk_ratio(messages, 1200, count=count)
    assert ratio == pytest.approx(expected)
    assert 0.15 <= ratio < 0.4


def test_ratio_uses_the_safety_margin_and_configured_bounds() -> None:
    messages, count = sized(110)
    # Without padding 110 / 1200 is under 10 %: the base ratio holds.
    assert compute_adaptive_chunk_ratio(messages, 1200, count=count, safety_margin=1.0) == 0.4
    ratio = compute_adaptive_chunk_ratio(
        messages, 1200, count=count, base_ratio=0.6, min_ratio=0.3, safety_margin=1.2
    )
    assert ratio == pytest.approx(0.6 - 2 * 110 * 1.2 / 1200)
    huge, count = sized(1000)
    floor = compute_adaptive_chunk_ratio(huge, 1200, count=count, base_ratio=0.6, min_ratio=0.3)
    assert floor == 0.3


def test_ratio_counts_with_the_default_estimate() -> None:
    small = [{"role": "user", "content": "x" * 30}] * 3
    large = [{"role": "user", "content": "x" * 3000}] * 3  # ~1,000 tokens each
    assert compute_adaptive_chunk_ratio(small, 10_000) == 0.4
    assert compute_adaptive_chunk_ratio(large, 10_000) == pytest.approx(
        0.4 - 2 * 1.2 * (1000 + 4) / 10_000, abs=0.01
    )


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.integers(0, 5000), min_size=1, max_size=8), st.integers(100, 50_000))
def test_ratio_is_bounded_and_never_grows_with_larger_messages(
    tokens: list[int], window: int
) -> None:
    messages, count = sized(*tokens)
    ratio = compute_adaptive_chunk_ratio(messages, window, count=count)
    assert MIN_CHUNK_RATIO <= ratio <= BASE_CHUNK_RATIO
    bigger, count2 = sized(*(t * 2 for t in tokens))
    assert compute_adaptive_chunk_ratio(bigger, window, count=count2) <= ratio


@pytest.mark.parametrize("window", [0, -5, True, 1.5, "1000"])
def test_ratio_and_oversize_reject_a_bad_window(window: Any) -> None:
    with pytest.raises(ValueError, match="window"):
        compute_adaptive_chunk_ratio([{"role": "user", "content": "x"}], window)
    with pytest.raises(ValueError, match="window"):
        is_oversized_for_summary(10, window)


# --- oversized messages --------------------------------------------------------------------


def test_a_message_is_oversized_when_its_padded_size_passes_half_the_window() -> None:
    # 416 x 1.2 = 499.2 <= 500; 417 x 1.2 = 500.4 > 500.
    assert not is_oversized_for_summary(416, 1000)
    assert is_oversized_for_summary(417, 1000)
    assert not is_oversized_for_summary(500, 1000, safety_margin=1.0)
    assert is_oversized_for_summary(501, 1000, safety_margin=1.0)


# --- reserve, output limit, budget ---------------------------------------------------------


def test_reserve_is_the_floor_capped_at_a_quarter_of_the_window() -> None:
    config = MemoryContextConfig()
    assert compaction_reserve(config, 200_000) == 20_000
    assert compaction_reserve(config, 40_000) == 10_000
    small_floor = MemoryContextConfig(compaction={"reserve_tokens_floor": 500})
    assert compaction_reserve(small_floor, 40_000) == 500


def test_summary_limit_is_the_configured_one_at_most_a_sixteenth_of_the_window() -> None:
    config = MemoryContextConfig()
    assert summary_token_limit(config, 200_000) == 4096
    assert summary_token_limit(config, 16_000) == 1000
    assert summary_token_limit(config, 10) == 1  # never zero


def test_summary_message_is_a_compaction_summary() -> None:
    message = summary_message("the parser was fixed")
    assert message == {"role": "user", "content": f"{COMPACTED_PREFIX} the parser was fixed"}
    assert is_compaction_summary(message)


def test_budget_from_the_default_config() -> None:
    b = CompactionBudget.from_config(MemoryContextConfig(), 200_000)
    assert b.window == b.summarizer_window == 200_000
    assert b.target_tokens == 180_000
    assert b.keep_recent_tokens == 50_000  # a quarter of the window
    assert b.summary_tokens == 4096
    assert (b.base_chunk_ratio, b.min_chunk_ratio, b.safety_margin) == (0.4, 0.15, 1.2)
    assert b.max_history_share == 0.5
    assert b.safeguard is False


def test_budget_reads_every_configured_value() -> None:
    config = MemoryContextConfig(
        compaction={
            "mode": "safeguard",
            "reserve_tokens_floor": 1000,
            "max_history_share": 0.3,
            "base_chunk_ratio": 0.5,
            "min_chunk_ratio": 0.2,
            "safety_margin": 1.5,
            "max_summary_tokens": 300,
        }
    )
    b = CompactionBudget.from_config(config, 64_000, summarizer_window=8000, keep_recent_tokens=7)
    assert b.safeguard and b.max_history_share == 0.3
    assert (b.base_chunk_ratio, b.min_chunk_ratio, b.safety_margin) == (0.5, 0.2, 1.5)
    assert b.target_tokens == 63_000 and b.keep_recent_tokens == 7
    assert b.summarizer_window == 8000
    assert b.summary_tokens == 300
    # The output limit follows the smaller window.
    tiny = CompactionBudget.from_config(config, 64_000, summarizer_window=1600)
    assert tiny.summary_tokens == 100


@pytest.mark.parametrize("keep", [-1, True, 2.5])
def test_budget_rejects_a_bad_tail(keep: Any) -> None:
    with pytest.raises(ValueError, match="keep_recent_tokens"):
        CompactionBudget.from_config(MemoryContextConfig(), 1000, keep_recent_tokens=keep)


def test_budget_rejects_a_bad_summariser_window() -> None:
    with pytest.raises(ValueError, match="window"):
        CompactionBudget.from_config(MemoryContextConfig(), 1000, summarizer_window=0)


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(20, 300_000), st.integers(1, 5000))
def test_input_room_is_the_largest_input_a_request_may_carry(window: int, limit: int) -> None:
    b = CompactionBudget(
        window=window,
        summarizer_window=window,
        target_tokens=window,
        keep_recent_tokens=0,
        summary_tokens=limit,
    )
    room = b.input_room()
    if limit >= window:
        assert room == 0
        assert not b.request_fits(1)
        return
    assert b.request_fits(room)
    assert not b.request_fits(room + 1)
