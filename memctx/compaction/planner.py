"""Seed 004's token-budget context planner: which history one model call carries.

Turn-count trimming keeps "the last N turns" whatever they weigh; the planner keeps what a
token budget allows, deterministically:

1. **Budget.** ``history = (window - reserve - static prompt - dynamic reserve - extra) x
   safetyRatio``. The reserve is the reply's (``planner.reserveTokens``, at most a quarter
   of the window, so that a small window still has room for history), the static prompt the
   leading system messages (always sent, never trimmed), the dynamic reserve what a turn adds
   besides history (``planner.dynamicReserveTokens``), ``extra`` what the caller injects this
   call (the session summary), and the safety ratio covers the estimate's error.
2. **Within budget**: the whole history.
3. **Mandatory tail**: from the latest user request (:func:`memctx.messages.is_turn_start`)
   to the end; without one, the last message with its tool calls. When it alone exceeds the
   budget, or the budget is not positive (a window smaller than its reserves), exactly the
   mandatory tail is kept: the call must still carry the request (the seed's invalid-budget
   fallback keeps at least the last message).
4. **Backfill**: older messages, newest first, while they fit; a tool call and its results
   are added or left together (:func:`memctx.messages.tool_spans`), so no pair is ever
   split, and the kept history is one contiguous stretch, trimmed from the oldest end.

Two additions of memctx's, each a setting:

- **A cut that stays** (``planner.cutToRatio``, 0.8). Cutting exactly to the budget on every
  call moves the start of the history with every call once the budget is reached, and the
  provider's prompt cache, which keys on the prefix, then misses every time. So a cut goes
  down to ``cutToRatio`` of the budget, and the caller passes its start back
  (``anchor``): while the history from there fits, the cut stays and the next calls only
  append. 1.0 is the seed's behaviour.
- **A turn longer than the budget** (``planner.splitLongTurn``, on). An agent's turn can run
  to hundreds of tool calls; its mandatory tail then exceeds the window itself and the
  provider refuses the call. Then the request is kept with the newest tool exchanges that
  fit (at least the last one), the older exchanges of the turn left out. Off is the
  seed's behaviour: the whole turn.

The caller's list and dicts are never changed: the plan holds the caller's own dicts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memctx.config import PlannerConfig
from memctx.messages import (
    InfoCache,
    estimate_message_tokens,
    is_turn_start,
    leading_system_count,
    tool_spans,
)

__all__ = ["ContextPlan", "HistoryBudget", "history_budget", "plan_context"]


@dataclass(frozen=True, slots=True)
class HistoryBudget:
    """The tokens a call's history may take, and what they were computed from.

    Attributes:
        window: The model's context window.
        reserve: Tokens kept for the reply (``min(reserveTokens, window // 4)``).
        static_tokens: The static prompt (leading system messages).
        dynamic_reserve: ``planner.dynamicReserveTokens`` plus what the caller injects.
        safety_ratio: The share of what is left that history may use.
        tokens: The history budget; zero or less means no history fits (invalid budget).
    """

    window: int
    reserve: int
    static_tokens: int
    dynamic_reserve: int
    safety_ratio: float
    tokens: int

    @property
    def valid(self) -> bool:
        """Whether any history fits at all."""
        return self.tokens > 0


@dataclass(frozen=True, slots=True)
class ContextPlan:
    """One call's planned context.

    Attributes:
        messages: The static prompt, then the kept history (the caller's dicts).
        budget: The budget it was planned against.
        history_tokens: Tokens of the whole history before planning.
        kept_tokens: Tokens of the kept history.
        dropped: Oldest history messages left out.
        mandatory_only: Only the mandatory tail was kept, because it alone exceeds the
            budget or the budget is invalid (with ``splitLongTurn``, cut to the request and
            the newest tool exchanges that fit).
        start: Index in the planned ``messages``' source where the kept history starts
            (pass it back as ``anchor`` next call).
    """

    messages: list[Any]
    budget: HistoryBudget
    history_tokens: int
    kept_tokens: int
    dropped: int
    mandatory_only: bool = False
    start: int = 0

    @property
    def trimmed(self) -> bool:
        """Whether history was left out."""
        return self.dropped > 0

    @property
    def pressure(self) -> float:
        """History tokens over the budget (``inf`` for an invalid budget): the share of the
        budget the full history would use."""
        if not self.budget.valid:
            return math.inf
        return self.history_tokens / self.budget.tokens


def history_budget(
    window: int, config: PlannerConfig, static_tokens: int, extra_tokens: int = 0
) -> HistoryBudget:
    """The history budget of one call (module docstring, step 1).

    Raises:
        ValueError: ``window`` is not a positive int, or a token count is negative.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ValueError(f"window must be a positive number of tokens, got {window!r}")
    if static_tokens < 0 or extra_tokens < 0:
        raise ValueError(
            f"token counts must be >= 0, got static {static_tokens!r}, extra {extra_tokens!r}"
        )
    reserve = min(config.reserve_tokens, window // 4)
    dynamic = config.dynamic_reserve_tokens + extra_tokens
    room = window - reserve - static_tokens - dynamic
    tokens = math.floor(room * config.safety_ratio) if room > 0 else room
    return HistoryBudget(window, reserve, static_tokens, dynamic, config.safety_ratio, tokens)


def plan_context(
    messages: Sequence[Any],
    window: int,
    config: PlannerConfig,
    *,
    count: Callable[[Any], int] = estimate_message_tokens,
    infos: InfoCache | None = None,
    extra_tokens: int = 0,
    anchor: int | None = None,
) -> ContextPlan:
    """Plan one call's context from ``messages`` (module docstring).

    Args:
        messages: The transcript to send, in any supported format; not modified.
        window: The model's context window in tokens.
        config: ``planner``: reserve, dynamic reserve, safety ratio, cut ratio, long turns.
        count: Tokens of one message (the caller's counter; memctx's estimate by default).
        infos: Anatomy cache to share with the caller.
        extra_tokens: Tokens the caller injects into this call besides the messages.
        anchor: Index in ``messages`` where the previous plan's history started
            (:attr:`ContextPlan.start`), when ``messages`` extends that call's: the cut
            stays there while the history from it fits.

    Returns:
        The plan: its history fits the budget, or is exactly the mandatory tail (with
        ``splitLongTurn``: the latest request and its last tool exchange).

    Raises:
        ValueError: ``window`` is not a positive int.
    """
    infos = infos if infos is not None else InfoCache()
    head = leading_system_count(messages, infos)
    static = list(messages[:head])
    history = list(messages[head:])
    sizes = [count(m) for m in history]
    total = sum(sizes)
    budget = history_budget(window, config, sum(map(count, static)), extra_tokens)

    def plan(kept: list[int], mandatory_only: bool = False) -> ContextPlan:
        chosen = [history[i] for i in kept]
        used = sum(sizes[i] for i in kept)
        first = kept[0] if kept else len(history)
        return ContextPlan(
            [*static, *chosen],
            budget,
            total,
            used,
            len(history) - len(kept),
            mandatory_only,
            head + first,
        )

    if total <= budget.tokens or not history:
        return plan(list(range(len(history))))
    if anchor is not None and head <= anchor < len(messages):
        at = anchor - head
        # The previous cut still fits: keep it. Checked without the units of the whole
        # history, the costly part of a plan on a long session.
        if (
            sum(sizes[at:]) <= budget.tokens
            and _starts_unit(history, at, infos)
            and _keeps_latest_request(history, at, infos)
        ):
            return plan(list(range(at, len(history))))
    units = tool_spans(history, infos)
    first = _mandatory_unit(history, units, infos)
    tail = units[first].start
    used = sum(sizes[tail:])
    if used > budget.tokens:  # also every invalid budget
        if config.split_long_turn:
            return plan(_split_turn(units, first, sizes, budget.tokens), True)
        return plan(list(range(tail, len(history))), True)
    target = min(budget.tokens, max(used, math.floor(budget.tokens * config.cut_to_ratio)))
    start = tail
    for unit in reversed(units[:first]):
        size = sum(sizes[unit.start : unit.stop])
        if used + size > target:
            break
        used += size
        start = unit.start
    return plan(list(range(start, len(history))))


def _split_turn(units: Sequence[range], first: int, sizes: Sequence[int], budget: int) -> list[int]:
    """The latest turn cut to ``budget``: its request unit, then its newest units that fit,
    at least the last one."""
    kept = list(units[first])
    used = sum(sizes[i] for i in kept)
    newest: list[int] = []
    for k in range(len(units) - 1, first, -1):
        size = sum(sizes[i] for i in units[k])
        if newest and used + size > budget:
            break
        used += size
        newest[:0] = units[k]
    return kept + newest


def _starts_unit(history: Sequence[Any], at: int, infos: InfoCache) -> bool:
    """Whether no tool result from ``at`` on may answer a call before ``at`` (so cutting
    there splits no pair). Conservative: a result whose call is not found after ``at`` counts
    as one, as does a result without an id before any call (Gemini pairs those by order)."""
    calls: set[str] = set()
    caller = False
    for message in history[at:]:
        info = infos.info(message)
        for rid in info.tool_result_ids:
            if (rid is None and not caller) or (rid is not None and rid not in calls):
                return False
        if info.has_tool_calls:
            caller = True
            calls.update(cid for cid in info.tool_call_ids if cid is not None)
    return True


def _keeps_latest_request(history: Sequence[Any], at: int, infos: InfoCache) -> bool:
    """Whether ``history[at:]`` holds the latest request (or there is none at all)."""
    for k in range(len(history) - 1, -1, -1):
        if is_turn_start(history[k], infos):
            return k >= at
    return True


def _mandatory_unit(history: Sequence[Any], units: Sequence[range], infos: InfoCache) -> int:
    """Index in ``units`` where the mandatory tail starts: the unit holding the latest user
    request, or the last unit when there is none."""
    for k in range(len(units) - 1, -1, -1):
        if any(is_turn_start(history[i], infos) for i in units[k]):
            return k
    return len(units) - 1
