"""Context strategies for the evaluation harness, behind one small protocol and a registry.

The replay engine (:mod:`memctx.harness.engine`) plays an agent loop and asks a strategy, before
every model call, whether to compact the agent's transcript (:meth:`Strategy.compact`) and
which messages to send (:meth:`Strategy.prepare`). Built in:

- ``full``: sends the whole transcript and never compacts: the upper bound while it fits; a
  call over the window is "not fit" (the provider would refuse it), not a violation.
- ``truncate``: drops the oldest messages (leading system messages kept) until the rest fits
  ``window - reserveTokens``, then repairs tool pairing.
- ``memory-context``: memctx on top of agent-level compaction. ``on_context`` runs before
  every call; when the transcript passes ``window - reserve`` the agent compacts: the old
  part goes to ``on_before_compact`` and is replaced by one ``[Context compacted] ...``
  summary written by the configured LLM (``extractionModel``, ``memctx/offline`` by
  default), a pairing-safe tail stays verbatim. At the end of a session the rest of the
  transcript goes to ``on_before_compact`` (the session-end hook) so that later sessions can
  recall it. ``reserve = min(compaction.reserveTokensFloor, window // 4)``: OpenClaw's
  compaction reserve, capped so that small windows still keep three quarters for history.
  It lives in :mod:`memctx.harness.strategies.memory_context` and is imported on first use.
- ``memory-context-hook``: the same hooks without agent compaction: ``on_context`` alone
  keeps every call within the window; compactions recorded in the transcript (a compaction
  summary after its start) are replayed through ``on_before_compact``. ``memctx replay``
  uses it by default on real sessions.

Later issues add ``openclaw``, ``meerkat`` and ``planner`` with :func:`register_strategy`.
Every strategy must be deterministic given its :class:`StrategySetup` (the engine supplies
a deterministic clock and waits for background work outside the timed hooks).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memctx.config import MemoryContextConfig
from memctx.messages import (
    InfoCache,
    RoleKind,
    TokenCounter,
    is_recalled_block,
    leading_system_count,
)

__all__ = [
    "HOOK_STRATEGY",
    "STRATEGIES",
    "BaseStrategy",
    "FullStrategy",
    "Messages",
    "Prepared",
    "Strategy",
    "StrategyFactory",
    "StrategySetup",
    "TruncateStrategy",
    "leading_blocks",
    "make_strategy",
    "register_strategy",
]

Messages = list[dict[str, Any]]


@dataclass(frozen=True)
class StrategySetup:
    """What every strategy is built from.

    Attributes:
        window: The model's context window (tokens).
        embedding: ``"hash"`` or ``"transformer"``; strategies that never search ignore it.
        config: memctx settings with the run's overrides applied (``enabled=True``;
            ``crossSession`` on when the scenario has several sessions).
        work_dir: A fresh directory for this job's stores; everything under it is scanned
            for planted secrets at the end.
        counter: The job's token counter, shared with the engine (one cache).
        infos: The job's anatomy cache, shared with the engine.
        clock: Deterministic epoch seconds (the engine advances it per call).
    """

    window: int
    embedding: str
    config: MemoryContextConfig
    work_dir: Path
    counter: TokenCounter
    infos: InfoCache
    clock: Callable[[], float]


@dataclass(frozen=True)
class Prepared:
    """One call's context and what producing it took.

    Attributes:
        context: The messages to send (a new list; never the transcript object itself).
        latency_ms: Wall time of the context hook (0 when there is none).
        trimmed: The strategy removed transcript messages from this call's context.
        recall_cap: Tokens a recalled block may take, or ``None`` when there is no block.
    """

    context: Messages
    latency_ms: float = 0.0
    trimmed: bool = False
    recall_cap: int | None = None


class Strategy(Protocol):
    """The interface the replay engine drives (one instance per scenario replay)."""

    name: str
    searches: bool  # True when results depend on the embedder (reported per embedding)

    def start_session(self, session_id: str) -> None:
        """A session begins; its transcript starts empty."""
        ...

    def compact(self, transcript: Messages, tokens: int) -> Messages | None:
        """A replacement transcript if the agent compacts before this call, else ``None``."""
        ...

    def prepare(self, transcript: Messages) -> Prepared:
        """The context of one model call from the transcript so far."""
        ...

    def search(self, query: str) -> list[str] | None:
        """Texts the ``memory_search`` tool returns, or ``None`` without such a tool."""
        ...

    def end_session(self, transcript: Messages) -> None:
        """The session ended with ``transcript`` (its final, possibly compacted, form)."""
        ...

    def close(self) -> dict[str, float]:
        """Release resources; return LLM usage: ``prompt_tokens``, ``completion_tokens``,
        ``cost_usd`` (summaries and extraction), ``hook_failures``."""
        ...


StrategyFactory = Callable[[StrategySetup], Strategy]
STRATEGIES: dict[str, StrategyFactory] = {}
HOOK_STRATEGY = "memory-context-hook"  # memctx's hooks without agent compaction


def register_strategy(name: str, factory: StrategyFactory, *, replace: bool = False) -> None:
    """Make ``name`` available to the engine and to ``memctx eval --strategy``.

    Raises:
        ValueError: The name is empty, or taken and ``replace`` is false.
    """
    if not name or (name in STRATEGIES and not replace):
        raise ValueError(f"strategy name {name!r} is empty or already registered")
    STRATEGIES[name] = factory


def make_strategy(name: str, setup: StrategySetup) -> Strategy:
    """Build a registered strategy.

    Raises:
        ValueError: Unknown name; the message lists the valid ones.
    """
    factory = STRATEGIES.get(name)
    if factory is None:
        raise ValueError(f"unknown strategy {name!r}; valid: {', '.join(sorted(STRATEGIES))}")
    return factory(setup)


def leading_blocks(context: Messages, infos: InfoCache) -> int:
    """Recalled blocks before the first assistant message (where memctx inserts them)."""
    found = 0
    for message in context:
        if infos.info(message).kind is RoleKind.ASSISTANT:
            break
        found += is_recalled_block(message)
    return found


class BaseStrategy:
    """No-op defaults for the optional parts of :class:`Strategy`."""

    name = "base"
    searches = False

    def __init__(self, setup: StrategySetup) -> None:
        self.setup = setup

    def start_session(self, session_id: str) -> None:
        return None

    def compact(self, transcript: Messages, tokens: int) -> Messages | None:
        return None

    def search(self, query: str) -> list[str] | None:
        return None

    def end_session(self, transcript: Messages) -> None:
        return None

    def close(self) -> dict[str, float]:
        return {}


class FullStrategy(BaseStrategy):
    """Send everything, never compact: the ceiling while it fits."""

    name = "full"

    def prepare(self, transcript: Messages) -> Prepared:
        return Prepared(list(transcript))


class TruncateStrategy(BaseStrategy):
    """Drop the oldest messages until the rest fits ``window - reserveTokens``.

    Leading system messages are always kept. The kept part is the longest suffix of the
    transcript that fits, then cut forward past tool results whose call fell off (the pairing
    repair a drop-oldest agent needs), so the context may be a little under the budget.

    An agent only appends to its transcript, so the cut is found with two pointers: each
    call adds the new messages' tokens and moves the start forward, O(1) amortized, instead
    of re-walking the kept messages (a transcript that is not an extension of the previous
    one is measured from scratch).
    """

    name = "truncate"

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        self._seen: Messages = []  # the previous transcript's messages (shallow copy)
        self._start = 0  # first kept index of it
        self._used = 0  # tokens of transcript[start:]

    def start_session(self, session_id: str) -> None:
        self._seen, self._start, self._used = [], 0, 0

    def prepare(self, transcript: Messages) -> Prepared:
        started = time.perf_counter()
        setup = self.setup
        count = setup.counter.count_message
        head = leading_system_count(transcript, setup.infos)
        budget = setup.window - setup.config.reserve_tokens - sum(map(count, transcript[:head]))
        seen = len(self._seen)
        extends = (
            seen <= len(transcript)
            and self._start >= head
            and (seen == 0 or transcript[seen - 1] is self._seen[-1])
            and (self._start >= seen or transcript[self._start] is self._seen[self._start])
        )
        if not extends:
            seen, self._start, self._used = head, head, 0
        start, used = max(self._start, head), self._used
        used += sum(map(count, transcript[max(seen, head) :]))
        while used > budget and start < len(transcript):
            used -= count(transcript[start])
            start += 1
        # A probe's question is remembered too; the next transcript then does not extend
        # this one and is measured from scratch (probes are few).
        self._seen, self._start, self._used = list(transcript), start, used
        cut = start
        infos = setup.infos
        while cut < len(transcript) and cut > head and infos.info(transcript[cut]).has_tool_results:
            cut += 1  # a result whose call was dropped
        latency = (time.perf_counter() - started) * 1000.0
        if cut == head:
            return Prepared(list(transcript), latency)
        return Prepared(transcript[:head] + transcript[cut:], latency, trimmed=True)


def _memory_context(setup: StrategySetup) -> Strategy:
    # Imported on use: the runtime is heavy and only these strategies need it.
    from .memory_context import MemoryContextStrategy

    return MemoryContextStrategy(setup)


def _memory_context_hook(setup: StrategySetup) -> Strategy:
    from .memory_context import MemoryContextStrategy

    return MemoryContextStrategy(setup, agent_compaction=False)


for _name, _factory in (
    ("full", FullStrategy),
    ("truncate", TruncateStrategy),
    ("memory-context", _memory_context),
    (HOOK_STRATEGY, _memory_context_hook),
):
    register_strategy(_name, _factory)
