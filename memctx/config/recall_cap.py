"""When ``hardCapTokens`` is not the recall block's cap, in one sentence.

The cap is ``min(hardCapTokens, floor(window x recallWindowRatio))``
(:meth:`MemoryContextConfig.recall_cap_tokens`): with the default ratio 0.1, a
``hardCapTokens`` above a tenth of the window changes nothing. A sweep or a run that sets it
there measures the ratio's cap, not the setting, and must say so; the sweep and the report
both use :func:`recall_cap_note`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .model import MemoryContextConfig

__all__ = ["ratio_to_reach", "recall_cap_note", "recall_caps"]


def recall_caps(config: MemoryContextConfig, windows: Iterable[int]) -> dict[int, int]:
    """The recall block's effective cap at each window (distinct windows, ascending)."""
    return {window: config.recall_cap_tokens(window) for window in sorted(set(windows))}


def ratio_to_reach(hard_cap: int, window: int) -> float | None:
    """The smallest ``recallWindowRatio`` (to 3 decimals) whose cap at ``window`` is
    ``hard_cap``; ``None`` when the cap exceeds the window (no ratio in (0, 1] reaches it)."""
    if hard_cap > window:
        return None
    ratio = math.ceil(hard_cap / window * 1000) / 1000
    while math.floor(window * ratio) < hard_cap:  # float rounding: step up to the next 0.001
        ratio = round(ratio + 0.001, 3)
    return min(ratio, 1.0)


def recall_cap_note(config: MemoryContextConfig, windows: Iterable[int]) -> str | None:
    """The sentence saying ``hardCapTokens`` is capped by ``recallWindowRatio`` at the
    windows given, e.g. "hardCapTokens 8,000 is capped at 3,200 by recallWindowRatio 0.1 of
    the 32,000-token window; raise recallWindowRatio to 0.25 to use it"; ``None`` when the cap
    is ``hardCapTokens`` at every one of them (or there are none)."""
    hard, ratio = config.hard_cap_tokens, config.recall_window_ratio
    capped = {w: cap for w, cap in recall_caps(config, windows).items() if cap < hard}
    if not capped:
        return None
    if len(capped) == 1:
        ((window, cap),) = capped.items()
        text = (
            f"hardCapTokens {hard:,} is capped at {cap:,} by recallWindowRatio {ratio:g} of "
            f"the {window:,}-token window"
        )
    else:
        where = " and ".join(f"{cap:,} of the {w:,}-token window" for w, cap in capped.items())
        text = f"hardCapTokens {hard:,} is capped by recallWindowRatio {ratio:g} at {where}"
    smallest = min(capped)  # the window that needs the largest ratio
    needed = ratio_to_reach(hard, smallest)
    if needed is None:
        return (
            f"{text}; it is larger than the {smallest:,}-token window itself, so no "
            "recallWindowRatio reaches it there"
        )
    return f"{text}; raise recallWindowRatio to {needed:g} to use it"
