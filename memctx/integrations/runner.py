"""One strategy run for one agent session, the way every framework adapter runs it.

A framework adapter (LangChain middleware, Pydantic AI history processor, OpenAI Agents SDK
input filter, inspect_ai compaction) translates the framework's messages to memctx's dicts
and back; what happens in between is the same for all of them and lives here: build the
strategy by name (or take one built already), before each model call let it compact the
history if it decides to and prepare the call (recall block, trimming), and, being a hook
inside someone else's agent, never raise into it: a failure inside memctx is logged by its
type only (an exception can quote the conversation), counted, and the history goes on to the
model as the agent had it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memctx.config import MemoryContextConfig
from memctx.strategies import Messages, Strategy, make_strategy

__all__ = ["RunnerStats", "RunnerStep", "StrategyRunner"]

log = logging.getLogger("memctx.integrations")


@dataclass(frozen=True)
class RunnerStep:
    """What one model call gets.

    Attributes:
        history: The history the agent keeps from now on: the compacted one when the
            strategy compacted, else the history it gave (the same list).
        context: The messages to send to the model for this call.
        compacted: Whether the strategy replaced the history.
        failed: Whether memctx failed and ``context`` is the history unchanged.
    """

    history: Messages
    context: Messages
    compacted: bool
    failed: bool = False


@dataclass
class RunnerStats:
    """Counters of one runner: calls prepared, compactions, memctx failures passed over."""

    calls: int = 0
    compactions: int = 0
    failures: int = 0


class StrategyRunner:
    """A strategy for one agent session, stepped before every model call.

    Args:
        strategy: A registered strategy name (``memory-context`` by default, maybe with
            settings: ``"observation-masking:keepLast=5"``), or a strategy built already
            (whose session the caller started).
        store_dir: Where the strategy keeps its files; sessions sharing it share memory.
            Required with a strategy name.
        session_id: The agent session (letters, digits, ``._-``).
        window: The model's context window in tokens.
        config: memctx settings (:func:`memctx.load_config`); ``None`` means the defaults.

    Raises:
        ValueError, ConfigError, StoreError: Bad arguments, at construction only (the agent
            has not started yet, so a wrong setting is the caller's to fix, not to hide).
    """

    def __init__(
        self,
        strategy: str | Strategy = "memory-context",
        *,
        store_dir: str | Path | None = None,
        session_id: str = "default",
        window: int = 128_000,
        config: MemoryContextConfig | None = None,
    ) -> None:
        if isinstance(strategy, str):
            if store_dir is None:
                raise ValueError(
                    f"strategy {strategy!r} needs a store: pass store_dir=<a folder memctx "
                    "may write>, the same one for every session that should share memory"
                )
            strategy = make_strategy(
                strategy,
                store_dir=store_dir,
                session_id=session_id,
                window=window,
                config=config,
            )
        self.strategy: Strategy = strategy
        self.stats = RunnerStats()
        self._lock = threading.Lock()
        self._closed = False

    def step(self, history: Messages) -> RunnerStep:
        """Compact ``history`` if the strategy decides to, then prepare this call.

        Never raises: on a failure inside memctx the step carries ``history`` unchanged as
        both the kept history and the context, with ``failed`` set.
        """
        with self._lock:
            self.stats.calls += 1
            try:
                # The protocol's two calls (what BaseStrategy.step does), so any Strategy serves.
                replaced = self.strategy.compact(history)
                kept = history if replaced is None else replaced
                context = self.strategy.prepare(kept).context
            except Exception as exc:  # a hook inside the agent: log, count, pass through
                self.stats.failures += 1
                log.warning(
                    "memctx: preparing a model call failed (%s); the history goes on unchanged",
                    type(exc).__name__,
                )
                return RunnerStep(history, history, compacted=False, failed=True)
            if replaced is not None:
                self.stats.compactions += 1
            return RunnerStep(kept, context, compacted=replaced is not None)

    def end_session(self, history: Messages) -> None:
        """End the session with its last history (what a strategy archives at the end);
        never raises."""
        with self._lock:
            try:
                self.strategy.end_session(history)
            except Exception as exc:
                self.stats.failures += 1
                log.warning("memctx: ending the session failed (%s)", type(exc).__name__)

    def close(self) -> Mapping[str, float]:
        """Close the strategy (idempotent); its usage counters, or ``{}`` when it failed."""
        with self._lock:
            if self._closed:
                return {}
            self._closed = True
            try:
                return self.strategy.close()
            except Exception as exc:
                self.stats.failures += 1
                log.warning("memctx: closing the strategy failed (%s)", type(exc).__name__)
                return {}

    def __enter__(self) -> StrategyRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
