"""Seed 001's four compaction triggers, as decisions a caller asks before it compacts.

| trigger | when | what runs |
|---|---|---|
| ``overflow`` | the provider refused the prompt as too long | :func:`recover_from_overflow` |
| ``manual`` | the user typed ``/compact [instructions]`` | :func:`manual_compact` (or
  :func:`trim_transcript_file`, the gateway's transcript trim) |
| ``cache_ttl`` | the prompt cache has gone cold | :class:`CacheTtlTrigger` decides |
| ``safeguard`` | the context passed ``window - reserve`` | :class:`SafeguardTrigger` decides,
  :func:`compact_with_safeguard` runs |

The decisions are pure: tokens, window, reserve and the clock come in as arguments, a
:class:`TriggerDecision` with the reason goes out, so an agent loop (or the harness's
deterministic clock) can log why it did or did not compact. Running several compactions of
one session, or of many, is :mod:`memctx.runtime`'s lanes' job.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from memctx.config import MemoryContextConfig

from .history import CompactionResult, compact_history
from .setup import CompactionSetup

__all__ = [
    "COMPACTION_TRIGGERS",
    "COMPACT_COMMAND",
    "CacheTtlTrigger",
    "CompactCommand",
    "CompactionTrigger",
    "SafeguardTrigger",
    "TriggerDecision",
    "compact_with_safeguard",
    "manual_compact",
    "parse_compact_command",
]

CompactionTrigger = Literal["overflow", "manual", "cache_ttl", "safeguard"]
COMPACTION_TRIGGERS: tuple[CompactionTrigger, ...] = (
    "overflow",
    "manual",
    "cache_ttl",
    "safeguard",
)
COMPACT_COMMAND = "/compact"
# A cold cache is a chance to compact cheaply, not a reason to: below this share of the
# budget a compaction would buy little room for an LLM call's price.
_DEFAULT_MIN_FILL = 0.5


@dataclass(frozen=True, slots=True)
class TriggerDecision:
    """Whether a trigger says to compact now, and why (one line for a log).

    Truthy when ``compact`` is.
    """

    trigger: CompactionTrigger
    compact: bool
    reason: str

    def __bool__(self) -> bool:
        return self.compact


def _budget(window: int, reserve: int) -> int:
    for name, value in (("window", window), ("reserve", reserve)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an int >= 0 tokens, got {value!r}")
    if reserve >= window:
        raise ValueError(
            f"reserve ({reserve}) must be smaller than the window ({window}): pass "
            "compaction_reserve(config, window)"
        )
    return window - reserve


@dataclass(frozen=True, slots=True)
class SafeguardTrigger:
    """Preventive compaction: compact once the context passes ``window - reserve``.

    The point the agent's own compactor uses (:class:`~memctx.compaction.AgentCompactor`),
    with ``reserve = compaction_reserve(config, window)``; what runs is
    :func:`compact_with_safeguard` (tool failures, file lists, history pruning).
    """

    def decide(self, *, tokens: int, window: int, reserve: int) -> TriggerDecision:
        """Compact when ``tokens > window - reserve``.

        Raises:
            ValueError: ``window`` or ``reserve`` is negative, or ``reserve >= window``.
        """
        budget = _budget(window, reserve)
        if tokens > budget:
            why = f"{tokens:,} tokens exceed window {window:,} minus reserve {reserve:,}"
            return TriggerDecision("safeguard", True, why)
        why = f"{tokens:,} tokens within {budget:,} (window {window:,} minus reserve {reserve:,})"
        return TriggerDecision("safeguard", False, why)


@dataclass(frozen=True, slots=True)
class CacheTtlTrigger:
    """Compact (or prune) only once the prompt cache has gone cold (seed 001 ``cache_ttl``).

    Anthropic keeps a prompt's cached prefix for a TTL after each call; compacting inside
    it rewrites the prefix and pays the whole prompt again, so this trigger waits until
    ``ttl_s`` has passed since the last provider call. Pressure beyond ``window - reserve``
    is not its business: that is :class:`SafeguardTrigger`'s (and a warm cache is lost then
    anyway).

    Attributes:
        ttl_s: The cache's lifetime in seconds (``contextPruning.ttl``, 5 minutes).
        min_fill: Compact only when the context takes at least this share of
            ``window - reserve``: a small context is not worth an LLM call.
        enabled: ``contextPruning.mode == "cache-ttl"``; when False the trigger never fires.
    """

    ttl_s: float = 300.0
    min_fill: float = _DEFAULT_MIN_FILL
    enabled: bool = True

    def __post_init__(self) -> None:
        if not (isinstance(self.ttl_s, int | float) and math.isfinite(self.ttl_s)) or (
            self.ttl_s <= 0
        ):
            raise ValueError(f"ttl_s must be a positive number of seconds, got {self.ttl_s!r}")
        if not 0 <= self.min_fill <= 1:
            raise ValueError(f"min_fill must be a share in [0, 1], got {self.min_fill!r}")

    @classmethod
    def from_config(
        cls, config: MemoryContextConfig, *, min_fill: float = _DEFAULT_MIN_FILL
    ) -> CacheTtlTrigger:
        """The trigger of ``config.context_pruning``: its ``ttl``, on when ``mode`` is
        ``cache-ttl``."""
        pruning = config.context_pruning
        return cls(
            ttl_s=pruning.ttl_seconds, min_fill=min_fill, enabled=pruning.mode == "cache-ttl"
        )

    def cold_at(self, last_call_at: float | None) -> float | None:
        """When the cache of a call at ``last_call_at`` expires (``None``: no call, no cache)."""
        return None if last_call_at is None else last_call_at + self.ttl_s

    def decide(
        self,
        *,
        tokens: int,
        window: int,
        reserve: int,
        now: float,
        last_call_at: float | None,
    ) -> TriggerDecision:
        """Compact when enabled, the cache is cold and the context is worth compacting.

        Args:
            tokens: Tokens of the context now.
            window: The model's context window.
            reserve: Tokens kept free for the reply.
            now: The clock now (any monotonic clock, in seconds).
            last_call_at: The same clock at the last provider call; ``None`` if none yet.

        Raises:
            ValueError: ``window`` or ``reserve`` is negative, or ``reserve >= window``.
        """
        budget = _budget(window, reserve)
        if not self.enabled:
            return TriggerDecision("cache_ttl", False, "contextPruning.mode is not cache-ttl")
        if tokens < self.min_fill * budget:
            return TriggerDecision(
                "cache_ttl",
                False,
                f"{tokens:,} tokens are under {self.min_fill:.0%} of {budget:,}: not worth it",
            )
        if last_call_at is None:
            return TriggerDecision("cache_ttl", True, "no provider call yet: no cache to keep")
        idle = now - last_call_at
        if idle < self.ttl_s:
            return TriggerDecision(
                "cache_ttl",
                False,
                f"cache warm: {max(idle, 0.0):.1f}s since the last call, ttl {self.ttl_s:g}s",
            )
        return TriggerDecision(
            "cache_ttl", True, f"cache cold: {idle:.1f}s since the last call, ttl {self.ttl_s:g}s"
        )


@dataclass(frozen=True, slots=True)
class CompactCommand:
    """A parsed ``/compact`` command: the instructions after it, ``None`` when none."""

    instructions: str | None


def parse_compact_command(text: str) -> CompactCommand | None:
    """``/compact [instructions]`` as a :class:`CompactCommand`; ``None`` for other text.

    ``/compact`` must be the whole first word (``/compaction`` is not it); the rest,
    stripped, is the instructions.
    """
    stripped = text.strip()
    if not stripped.startswith(COMPACT_COMMAND):
        return None
    rest = stripped[len(COMPACT_COMMAND) :]
    if rest and not rest[0].isspace():
        return None
    return CompactCommand(rest.strip() or None)


def manual_compact(
    messages: Sequence[Any],
    setup: CompactionSetup,
    instructions: str | None = None,
    *,
    previous_summary: str | None = None,
    keep_recent_tokens: int | None = None,
) -> CompactionResult:
    """The ``manual`` trigger: :func:`compact_history` with the user's ``/compact`` focus.

    Args:
        messages: The history; not modified.
        setup: As for :func:`compact_history`.
        instructions: What the summary should focus on, or the whole ``/compact …`` command
            as typed (the command word is removed); blank means none.
        previous_summary, keep_recent_tokens: As for :func:`compact_history`.

    Returns:
        The compaction (``compacted`` False when nothing was old enough to summarise).

    Raises:
        CompactionError: The history cannot be made to fit (see :func:`compact_history`).
    """
    focus = instructions
    if focus is not None:
        command = parse_compact_command(focus)
        focus = command.instructions if command is not None else (focus.strip() or None)
    return compact_history(
        messages,
        setup,
        previous_summary=previous_summary,
        instructions=focus,
        keep_recent_tokens=keep_recent_tokens,
    )


def compact_with_safeguard(
    messages: Sequence[Any],
    setup: CompactionSetup,
    *,
    previous_summary: str | None = None,
    instructions: str | None = None,
    keep_recent_tokens: int | None = None,
) -> CompactionResult:
    """The ``safeguard`` trigger's compaction: :func:`compact_history` in safeguard mode.

    Whatever ``setup.config.compaction.mode`` says, the summary gets the safeguard sections
    (tool failures, read/modified files, the split-turn prefix) and history pruning to
    ``maxHistoryShare``. Arguments as for :func:`compact_history`.
    """
    config = setup.config
    if config.compaction.mode != "safeguard":
        setup = replace(setup, config=config.with_overrides({"compaction.mode": "safeguard"}))
    return compact_history(
        messages,
        setup,
        previous_summary=previous_summary,
        instructions=instructions,
        keep_recent_tokens=keep_recent_tokens,
    )
