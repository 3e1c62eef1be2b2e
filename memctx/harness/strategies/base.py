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
- ``observation-masking``: the last N tool outputs verbatim, older ones replaced by a
  one-line placeholder, no LLM (:mod:`memctx.harness.strategies.observation_masking`).
- ``openclaw``: seed 001's compaction with the pre-compaction memory flush into memory
  files, recall only through ``memory_search`` over them
  (:mod:`memctx.harness.strategies.openclaw`).
- ``meerkat``: seed 002's turn-based compactor with its loop guard, the discarded messages
  indexed for ``memory_search``, nothing injected (:mod:`memctx.harness.strategies.meerkat`).

- ``planner``: seed 004 as one pipeline: oversized tool results as file refs, the session
  summary sidecar, pruning, the token-budget planner, the summary injected under pressure
  (:mod:`memctx.harness.strategies.planner`).

A strategy name may carry settings, ``NAME:KEY=VALUE[,KEY=VALUE]`` (e.g.
``observation-masking:keepLast=5``): the keys a strategy takes are declared when it is
registered, parsed by :func:`parse_strategy` and handed over in :attr:`StrategySetup.params`.
memctx's config (``--set``) has no place for a harness-only knob, and a name-borne setting
lets two variants run side by side in one ``memctx eval`` as two records.
Every strategy must be deterministic given its :class:`StrategySetup` (the engine supplies
a deterministic clock and waits for background work outside the timed hooks).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
from memctx.trim import PruningSession

__all__ = [
    "HOOK_STRATEGY",
    "STRATEGIES",
    "STRATEGY_PARAMS",
    "SUMMARY_STRATEGIES",
    "BaseStrategy",
    "FullStrategy",
    "Messages",
    "ParamParser",
    "Prepared",
    "Strategy",
    "StrategyFactory",
    "StrategySetup",
    "TruncateStrategy",
    "client_usage",
    "leading_blocks",
    "make_strategy",
    "parse_strategy",
    "pruning_session",
    "register_strategy",
    "send_whole",
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
        params: Settings given with the strategy's name (``observation-masking:keepLast=5``),
            parsed by the parsers the strategy registered; empty when none are given.
    """

    window: int
    embedding: str
    config: MemoryContextConfig
    work_dir: Path
    counter: TokenCounter
    infos: InfoCache
    clock: Callable[[], float]
    params: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Prepared:
    """One call's context and what producing it took.

    Attributes:
        context: The messages to send (a new list; never the transcript object itself).
        latency_ms: Wall time of the context hook (0 when there is none).
        trimmed: The strategy removed transcript messages from this call's context.
        recall_cap: Tokens a recalled block may take, or ``None`` when there is no block.
        recovery: What the strategy did to this call, and the compaction before it, to fit
            the window (``"dropped the oldest messages"``, ``"overflow recovery: compacted
            x1, truncated 1 tool result of 150,000 chars"``); the engine keeps it for calls
            whose transcript exceeded the window (``CallRow.recovery``).
    """

    context: Messages
    latency_ms: float = 0.0
    trimmed: bool = False
    recall_cap: int | None = None
    recovery: str = ""


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
        ``cost_usd`` (summaries and extraction), ``largest_prompt_tokens`` (one call's
        largest input), ``hook_failures``."""
        ...


StrategyFactory = Callable[[StrategySetup], Strategy]
ParamParser = Callable[[str], object]  # a setting's text -> its value; ValueError when bad
STRATEGIES: dict[str, StrategyFactory] = {}
STRATEGY_PARAMS: dict[str, dict[str, ParamParser]] = {}  # name -> {key: parser}
# Strategies whose compaction summaries are written by ``extractionModel`` (the report says
# which model that was: with memctx/offline they are extractive, not an LLM's).
SUMMARY_STRATEGIES: set[str] = set()
HOOK_STRATEGY = "memory-context-hook"  # memctx's hooks without agent compaction
_SPEC_SYNTAX = "NAME:KEY=VALUE[,KEY=VALUE...], e.g. observation-masking:keepLast=5"


def register_strategy(
    name: str,
    factory: StrategyFactory,
    *,
    replace: bool = False,
    params: Mapping[str, ParamParser] | None = None,
    summaries: bool = False,
) -> None:
    """Make ``name`` available to the engine and to ``memctx eval --strategy``.

    Args:
        name: The strategy's name (no ``:``: that starts its settings).
        factory: Builds one instance from a :class:`StrategySetup`.
        replace: Allow replacing a registered name.
        params: The settings the strategy takes after its name (``NAME:KEY=VALUE``), each
            with a parser from text; they reach the factory as ``setup.params``.
        summaries: The strategy compacts with summaries written by ``extractionModel``.

    Raises:
        ValueError: The name is empty, holds ``:``, or is taken and ``replace`` is false.
    """
    if not name or ":" in name or (name in STRATEGIES and not replace):
        raise ValueError(f"strategy name {name!r} is empty, holds ':' or is already registered")
    STRATEGIES[name] = factory
    STRATEGY_PARAMS[name] = dict(params or {})
    if summaries:
        SUMMARY_STRATEGIES.add(name)
    else:
        SUMMARY_STRATEGIES.discard(name)


def parse_strategy(spec: str) -> tuple[str, dict[str, object]]:
    """Split ``"observation-masking:keepLast=5"`` into the name and its parsed settings.

    Raises:
        ValueError: Unknown name (the message lists the valid ones), a malformed setting,
            a key the strategy does not take, or a value its parser refuses.
    """
    name, has_params, text = spec.partition(":")
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {spec!r}; valid: {', '.join(sorted(STRATEGIES))}")
    params: dict[str, object] = {}
    if not has_params:
        return name, params
    accepted = STRATEGY_PARAMS.get(name, {})
    for item in text.split(","):
        key, has_value, value = (part.strip() for part in item.partition("="))
        if not key or not has_value:
            raise ValueError(f"strategy {spec!r}: bad setting {item!r}; expected {_SPEC_SYNTAX}")
        if key not in accepted:
            takes = f"it takes {', '.join(sorted(accepted))}" if accepted else "it takes none"
            raise ValueError(f"strategy {spec!r}: {name} has no setting {key!r}; {takes}")
        try:
            params[key] = accepted[key](value)
        except ValueError as exc:
            raise ValueError(f"strategy {spec!r}: {key}={value!r}: {exc}") from None
    return name, params


def make_strategy(name: str, setup: StrategySetup) -> Strategy:
    """Build a registered strategy (``name`` may carry settings: :func:`parse_strategy`).

    Raises:
        ValueError: Unknown name (the message lists the valid ones) or bad settings.
    """
    base, params = parse_strategy(name)
    if params:
        setup = dataclasses.replace(setup, params={**setup.params, **params})
    return STRATEGIES[base](setup)


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
        # The engine keeps the path only for calls whose transcript exceeded the window.
        return Prepared(list(transcript), recovery="none: sent whole")


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
        dropped = "dropped the oldest messages"
        return Prepared(transcript[:head] + transcript[cut:], latency, True, recovery=dropped)


def pruning_session(setup: StrategySetup, config: MemoryContextConfig) -> PruningSession:
    """Seed 003's pruning for a strategy that takes ``NAME:pruning=off|cache-ttl``
    (``cache-ttl`` unless its name says otherwise; the rest of ``contextPruning`` from
    ``config``)."""
    mode = setup.params.get("pruning", "cache-ttl")
    pruning = config.with_overrides({"contextPruning.mode": mode}).context_pruning
    return PruningSession(pruning, setup.window, infos=setup.infos)


def send_whole(
    setup: StrategySetup, transcript: Messages, fitter: TruncateStrategy
) -> tuple[Prepared, int | None]:
    """An agent that sends its whole transcript (its own compaction keeps it under the
    window): as it is while it fits the window, else ``fitter``'s cut, so no call the
    provider would refuse is measured. memctx's ``reserveTokens`` is memctx's own trim
    budget, not such an agent's. Returns the call and the tokens it sent whole, ``None``
    when it had to be cut."""
    started = time.perf_counter()
    tokens = setup.counter.count_messages(transcript)
    if tokens <= setup.window:
        return Prepared(list(transcript), (time.perf_counter() - started) * 1000.0), tokens
    fitted = fitter.prepare(transcript)
    latency = (time.perf_counter() - started) * 1000.0
    return Prepared(fitted.context, latency, fitted.trimmed, recovery=fitted.recovery), None


def client_usage(clients: Sequence[Any], hook_failures: int = 0) -> dict[str, float]:
    """What :meth:`Strategy.close` returns: the LLM usage of ``clients`` (``None`` skipped)
    summed, the largest prompt any of them sent, and the hook failures."""
    usage = {"prompt_tokens": 0.0, "completion_tokens": 0.0, "cost_usd": 0.0}
    largest = 0
    for client in clients:
        if client is None:
            continue
        tally = client.usage()
        usage["prompt_tokens"] += tally.prompt_tokens
        usage["completion_tokens"] += tally.completion_tokens
        usage["cost_usd"] += tally.cost_usd
        largest = max(largest, tally.largest_prompt_tokens)
    usage["largest_prompt_tokens"] = float(largest)
    return {**usage, "hook_failures": float(hook_failures)}


def _memory_context(setup: StrategySetup) -> Strategy:
    # Imported on use: the runtime is heavy and only these strategies need it.
    from .memory_context import MemoryContextStrategy

    return MemoryContextStrategy(setup)


def _openclaw(setup: StrategySetup) -> Strategy:
    from .openclaw import OpenClawStrategy

    return OpenClawStrategy(setup)


def _meerkat(setup: StrategySetup) -> Strategy:
    from .meerkat import MeerkatStrategy

    return MeerkatStrategy(setup)


def _memory_context_hook(setup: StrategySetup) -> Strategy:
    from .memory_context import MemoryContextStrategy

    return MemoryContextStrategy(setup, agent_compaction=False)


def _planner(setup: StrategySetup) -> Strategy:
    from .planner import PlannerStrategy

    return PlannerStrategy(setup)


def _pruning_mode(text: str) -> str:
    if text not in ("off", "cache-ttl"):
        raise ValueError("pruning must be 'off' or 'cache-ttl'")
    return text


# memory-context's agent summarises the compacted part; the hook strategy only replays the
# compactions a transcript records (their summaries were written by the recorded agent).
_BUILT_IN: tuple[tuple[str, StrategyFactory, bool, dict[str, ParamParser]], ...] = (
    ("full", FullStrategy, False, {}),
    ("truncate", TruncateStrategy, False, {}),
    ("memory-context", _memory_context, True, {}),
    ("openclaw", _openclaw, True, {"pruning": _pruning_mode}),
    ("meerkat", _meerkat, True, {}),
    (HOOK_STRATEGY, _memory_context_hook, False, {}),
    ("planner", _planner, False, {"pruning": _pruning_mode}),
)
for _name, _factory, _summaries, _params in _BUILT_IN:
    register_strategy(_name, _factory, summaries=_summaries, params=_params)
