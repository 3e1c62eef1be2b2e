"""The recall block's effective cap and the sentence saying when hardCapTokens is not it."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from memctx.config import MemoryContextConfig
from memctx.config.recall_cap import ratio_to_reach, recall_cap_note, recall_caps


def test_the_note_names_setting_cap_ratio_window_and_the_fix() -> None:
    note = recall_cap_note(MemoryContextConfig(hardCapTokens=8000), [32_000])
    assert note == (
        "hardCapTokens 8,000 is capped at 3,200 by recallWindowRatio 0.1 of the 32,000-token "
        "window; raise recallWindowRatio to 0.25 to use it"
    )


def test_several_windows_are_listed_and_the_fix_covers_the_smallest() -> None:
    config = MemoryContextConfig()  # hardCapTokens 4000, ratio 0.1
    note = recall_cap_note(config, [24_000, 200_000, 10_000, 24_000])
    assert note == (
        "hardCapTokens 4,000 is capped by recallWindowRatio 0.1 at 1,000 of the 10,000-token "
        "window and 2,400 of the 24,000-token window; raise recallWindowRatio to 0.4 to use it"
    )
    assert recall_caps(config, [24_000, 200_000, 10_000]) == {
        10_000: 1_000,
        24_000: 2_400,
        200_000: 4_000,
    }


def test_no_note_when_the_setting_is_the_cap() -> None:
    assert recall_cap_note(MemoryContextConfig(), [200_000]) is None
    assert recall_cap_note(MemoryContextConfig(hardCapTokens=2000), [24_000]) is None
    assert recall_cap_note(MemoryContextConfig(recallWindowRatio=0.5), [10_000]) is None
    assert recall_cap_note(MemoryContextConfig(hardCapTokens=8000), []) is None


def test_a_cap_larger_than_the_window_says_no_ratio_reaches_it() -> None:
    note = recall_cap_note(MemoryContextConfig(hardCapTokens=30_000), [20_000])
    assert note is not None
    assert note.endswith(
        "it is larger than the 20,000-token window itself, so no recallWindowRatio reaches it there"
    )


@given(hard=st.integers(1, 300_000), window=st.integers(1, 1_000_000))
def test_property_the_suggested_ratio_is_the_smallest_that_reaches_the_cap(
    hard: int, window: int
) -> None:
    ratio = ratio_to_reach(hard, window)
    if hard > window:
        assert ratio is None
        return
    assert ratio is not None and 0 < ratio <= 1
    assert math.floor(window * ratio) >= hard
    assert ratio <= 0.001 or math.floor(window * round(ratio - 0.001, 3)) < hard


@given(
    hard=st.integers(1, 50_000),
    ratio=st.sampled_from([0.05, 0.1, 0.2, 0.5]),
    windows=st.lists(st.integers(1_000, 400_000), min_size=1, max_size=4),
)
def test_property_following_the_note_removes_it(
    hard: int, ratio: float, windows: list[int]
) -> None:
    config = MemoryContextConfig(hardCapTokens=hard, recallWindowRatio=ratio)
    note = recall_cap_note(config, windows)
    capped = [w for w in windows if config.recall_cap_tokens(w) < hard]
    assert (note is None) == (not capped)
    if note is None or hard > min(capped):
        return
    fix = ratio_to_reach(hard, min(capped))
    assert fix is not None and f"raise recallWindowRatio to {fix:g} to use it" in note
    assert recall_cap_note(config.with_overrides({"recallWindowRatio": fix}), windows) is None
