"""The loop guard every compaction trigger goes through: no configuration compacts every turn.

A compaction that does not bring the context clearly under the threshold that triggered it
would be triggered again at once, and again the turn after: an LLM call per turn that buys
nothing (a threshold smaller than the turns kept verbatim, a huge tool result in the newest
turn). :class:`LoopGuard` is the one rule against that, shared by the turn-based trigger of
seed 002, seed 001's threshold and safeguard triggers and overflow recovery:

- **Spacing.** After a compaction at turn ``t`` the next one waits until turn
  ``t + spacing``, ``spacing = max(min_turns_between_compactions, MIN_SPACING)``. Seed 002's
  ``minTurnsBetweenCompactions`` (default 3) is the configured part; :data:`MIN_SPACING` (2)
  is the floor no configuration lowers, so two compactions never run on consecutive turns
  (``0`` and ``1`` in the config read as 2).
- **Effectiveness.** A compaction is effective when it leaves at most
  ``threshold × (1 − margin)`` tokens; the margin (:data:`DEFAULT_MARGIN`, 10 % of the
  threshold) is the room the next turns need before the same trigger fires again. A
  compaction that is not effective, or fails, is *ineffective*.
- **Back-off.** After ``k`` ineffective compactions in a row the next waits
  ``spacing × 2**k`` turns, at most ``max(MAX_BACKOFF_TURNS, spacing)``; an effective one
  resets ``k``. An endless run of useless compactions thus costs at most about one call per
  :data:`MAX_BACKOFF_TURNS` turns once the back-off is at its cap, while a trigger that keeps
  wanting to compact is refused (*deferred*) and can fall back to cheaper recovery.

Seed 002's "never on turn 0" is a rule of the turn-based trigger, not of the guard: overflow
recovery may need to compact a first request that is already too large.

The guard is plain state (a small dataclass), no clock and no I/O: turns are the caller's
turn numbers, which never decrease within a session (:meth:`LoopGuard.reset` starts over).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memctx.config import MemoryContextConfig

__all__ = [
    "DEFAULT_MARGIN",
    "MAX_BACKOFF_TURNS",
    "MAX_URGENT_STREAK",
    "MIN_SPACING",
    "GuardDecision",
    "LoopGuard",
]

DEFAULT_MARGIN = 0.10
MIN_SPACING = 2
MAX_BACKOFF_TURNS = 32
# Ineffective compactions in a row after which an overflow waits too (seed 001: 3 attempts).
MAX_URGENT_STREAK = 3


@dataclass(frozen=True, slots=True)
class GuardDecision:
    """Whether a compaction may run at a turn.

    Attributes:
        allowed: It may run now.
        reason: Why (or why not), for logs and stats.
        waiting_until_turn: The first turn at which a compaction may run.
    """

    allowed: bool
    reason: str
    waiting_until_turn: int


def _check_int(name: str, value: object, minimum: int, fix: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}: {fix}")


@dataclass(slots=True)
class LoopGuard:
    """Spacing and back-off between compactions (see the module docstring for the rule).

    Attributes:
        min_turns_between: Seed 002's ``minTurnsBetweenCompactions`` (0 leaves only the
            :data:`MIN_SPACING` floor).
        margin: Share of the threshold a compaction must get under it by to count as
            effective (in ``[0, 1)``).
        max_backoff_turns: Cap of the back-off, in turns (at least 1; the spacing wins if
            larger).
        compactions: Compactions recorded (effective, ineffective and failed).
        deferred: Compactions a trigger wanted and the guard refused.
        ineffective: Compactions that left the context over ``threshold × (1 − margin)``.
        failed: Compactions that failed (also counted as ineffective).
        streak: Ineffective compactions in a row (0 after an effective one).
        last_turn: Turn of the last recorded compaction, ``None`` before the first.
        waiting_until_turn: First turn at which a compaction may run.
        reason: Human-readable state: what the last compaction did and what follows.
    """

    min_turns_between: int = 3
    margin: float = DEFAULT_MARGIN
    max_backoff_turns: int = MAX_BACKOFF_TURNS
    compactions: int = 0
    deferred: int = 0
    ineffective: int = 0
    failed: int = 0
    streak: int = 0
    last_turn: int | None = None
    waiting_until_turn: int = 0
    reason: str = "no compaction yet"

    def __post_init__(self) -> None:
        _check_int(
            "min_turns_between",
            self.min_turns_between,
            0,
            "set compaction.minTurnsBetweenCompactions to 0 or more turns",
        )
        _check_int("max_backoff_turns", self.max_backoff_turns, 1, "pass a cap such as 32")
        margin = self.margin
        if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin < 1:
            raise ValueError(
                f"margin must be a share of the threshold in [0, 1), got {margin!r}: "
                "pass e.g. 0.1 for 10 %"
            )

    @classmethod
    def from_config(
        cls,
        config: MemoryContextConfig,
        *,
        margin: float = DEFAULT_MARGIN,
        max_backoff_turns: int = MAX_BACKOFF_TURNS,
    ) -> LoopGuard:
        """A guard with ``compaction.minTurnsBetweenCompactions`` from ``config``."""
        return cls(
            min_turns_between=config.compaction.min_turns_between_compactions,
            margin=margin,
            max_backoff_turns=max_backoff_turns,
        )

    # --- the rule ----------------------------------------------------------------------------

    @property
    def spacing(self) -> int:
        """Turns from one compaction to the next when the first was effective."""
        return max(self.min_turns_between, MIN_SPACING)

    def backoff_turns(self, streak: int) -> int:
        """Turns to wait after ``streak`` ineffective compactions in a row (0: the spacing)."""
        if streak <= 0:
            return self.spacing
        cap = max(self.max_backoff_turns, self.spacing)
        # The shift is bounded: the cap is reached long before, and huge ints cost time.
        return min(self.spacing << min(streak, 32), cap)

    def effective_limit(self, threshold: int) -> int:
        """Most tokens an effective compaction may leave under ``threshold``."""
        return math.floor(threshold * (1 - self.margin))

    def max_compactions(self, turns: int) -> int:
        """At most this many compactions run in ``turns`` consecutive turns."""
        return 0 if turns <= 0 else math.ceil(turns / self.spacing)

    def allows(self, turn: int, *, urgent: bool = False) -> bool:
        """Whether a compaction may run at ``turn`` (changes nothing).

        ``urgent``: the context would not fit the window at all (an overflow, not a
        threshold): deferring would send a call the provider refuses. An urgent compaction
        need not wait out the spacing or a back-off while fewer than
        :data:`MAX_URGENT_STREAK` compactions in a row failed to help (seed 001's three
        overflow attempts); after that it waits like any other, so a context no compaction
        can shrink costs three summaries, not one per turn. Never twice in one turn.
        """
        self._check_turn(turn)
        later = self.last_turn is None or turn > self.last_turn
        if urgent and later and self.streak < MAX_URGENT_STREAK:
            return True
        return turn >= self.waiting_until_turn

    def admit(self, turn: int, *, urgent: bool = False) -> GuardDecision:
        """A trigger wants to compact at ``turn``: may it? A refusal is counted as deferred.
        ``urgent`` as in :meth:`allows`.

        Raises:
            ValueError: ``turn`` is negative or before the last compaction.
        """
        if self.allows(turn, urgent=urgent):
            why = "first compaction" if self.last_turn is None else self.reason
            return GuardDecision(True, why, self.waiting_until_turn)
        self.deferred += 1
        why = (
            f"compaction deferred at turn {turn}: waiting until turn "
            f"{self.waiting_until_turn} ({self.reason})"
        )
        return GuardDecision(False, why, self.waiting_until_turn)

    def record(self, turn: int, *, tokens_after: int, threshold: int) -> bool:
        """A compaction ran at ``turn`` and left ``tokens_after`` tokens.

        Args:
            turn: The caller's turn number.
            tokens_after: Tokens of the compacted context.
            threshold: The threshold of the trigger that started it.

        Returns:
            Whether it was effective.

        Raises:
            ValueError: ``turn`` is negative or before the last compaction, or the
                threshold is not positive.
        """
        self._check_turn(turn)
        _check_int("threshold", threshold, 1, "pass the trigger's threshold in tokens")
        limit = self.effective_limit(threshold)
        if tokens_after <= limit:
            self._advance(turn, effective=True)
            self.reason = (
                f"compaction at turn {turn} left {tokens_after:,} tokens, at most "
                f"{limit:,} (threshold {threshold:,} less the {self.margin:.0%} margin); "
                f"the next may run from turn {self.waiting_until_turn}"
            )
            return True
        self._advance(turn, effective=False)
        self.reason = (
            f"compaction at turn {turn} left {tokens_after:,} tokens, over {limit:,} "
            f"(threshold {threshold:,} less the {self.margin:.0%} margin): "
            f"{self._backoff_text(turn)}"
        )
        return False

    def record_failure(self, turn: int, error: str) -> None:
        """A compaction at ``turn`` failed (``error`` says why): ineffective, with back-off."""
        self._check_turn(turn)
        self.failed += 1
        self._advance(turn, effective=False)
        self.reason = f"compaction at turn {turn} failed ({error}): {self._backoff_text(turn)}"

    def reset(self) -> None:
        """Start over (a new session, or turn numbers restarting after a rewind)."""
        self.compactions = self.deferred = self.ineffective = self.failed = self.streak = 0
        self.last_turn = None
        self.waiting_until_turn = 0
        self.reason = "no compaction yet"

    def stats(self) -> dict[str, int]:
        """Counters for ``stats()``: compactions, deferred, ineffective, failed, the current
        ineffective streak and the first turn a compaction may run."""
        return {
            "compactions": self.compactions,
            "deferred": self.deferred,
            "ineffective": self.ineffective,
            "failed": self.failed,
            "streak": self.streak,
            "waiting_until_turn": self.waiting_until_turn,
        }

    # --- internals ---------------------------------------------------------------------------

    def _advance(self, turn: int, *, effective: bool) -> None:
        self.compactions += 1
        if effective:
            self.streak = 0
        else:
            self.ineffective += 1
            self.streak += 1
        self.last_turn = turn
        self.waiting_until_turn = turn + self.backoff_turns(self.streak)

    def _backoff_text(self, turn: int) -> str:
        wait = self.waiting_until_turn - turn
        return (
            f"{self.streak} ineffective in a row, the next waits {wait} turns, "
            f"until turn {self.waiting_until_turn}"
        )

    def _check_turn(self, turn: int) -> None:
        _check_int("turn", turn, 0, "pass the agent loop's turn number, counting from 0")
        if self.last_turn is not None and turn < self.last_turn:
            raise ValueError(
                f"turn {turn} is before the last compaction at turn {self.last_turn}: turn "
                "numbers must not decrease within a session; call reset() when it restarts"
            )
