"""One strategy run for one agent session, the way every framework adapter runs it.

A framework adapter (LangChain middleware, Pydantic AI history processor, OpenAI Agents SDK
input filter, inspect_ai compaction) translates the framework's messages to memctx's dicts
and back; what happens in between is the same for all of them and lives here: build the
strategy by name (or take one built already), before each model call let it compact the
history if it decides to and prepare the call (recall block, trimming), and, being a hook
inside someone else's agent, never raise into it: a failure inside memctx is logged by its
type only (an exception can quote the conversation), counted, and the history goes on to the
model as the agent had it.

Most agents keep their own history and hand over all of it on every call (the OpenAI Agents
SDK rebuilds its item list, an HTTP client resends the conversation); the strategy's
compaction would be lost the next call, and redone. So after a compaction the runner
remembers which messages it stood for and, as long as the history it is given starts with
those same messages (the same objects, or equal ones), goes on from the compacted history
plus what was added: a compaction happens once, not on every later call (with an LLM
summariser, once rather than a paid summary a call), and the prefix sent stays the same from
call to call, which keeps the provider's prompt cache warm. A history that does not start
so (the agent compacted or edited it, another conversation) is taken as it is.
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
        self._ended = False
        # After a compaction: the messages given that the compacted history stands for.
        self._covered: Messages = []
        self._compacted: Messages | None = None
        self.last_history: Messages = []
        """The history of the latest step: what :meth:`end_session` ends by default."""

    def step(self, history: Messages) -> RunnerStep:
        """Compact ``history`` if the strategy decides to, then prepare this call.

        ``history`` is the agent's whole history; when it goes on from the messages of an
        earlier compaction, the compacted history takes their place (module docstring).

        Never raises: on a failure inside memctx the step carries ``history`` unchanged as
        both the kept history and the context, with ``failed`` set.
        """
        with self._lock:
            self.stats.calls += 1
            try:
                current = self._continued(history)
                # The protocol's two calls (what BaseStrategy.step does), so any Strategy serves.
                replaced = self.strategy.compact(current)
                kept = current if replaced is None else replaced
                context = self.strategy.prepare(kept).context
            except Exception as exc:  # a hook inside the agent: log, count, pass through
                self.stats.failures += 1
                log.warning(
                    "memctx: preparing a model call failed (%s); the history goes on unchanged",
                    type(exc).__name__,
                )
                return RunnerStep(history, history, compacted=False, failed=True)
            if replaced is not None or self._compacted is not None:
                self._covered, self._compacted = list(history), kept
            if replaced is not None:
                self.stats.compactions += 1
            self.last_history = kept
            return RunnerStep(kept, context, compacted=replaced is not None)

    def _continued(self, history: Messages) -> Messages:
        """The compacted history plus what was added since, when ``history`` starts with the
        messages the last compaction stood for; else ``history`` itself."""
        if self._compacted is None:
            return history
        covered = self._covered
        if len(history) >= len(covered) and all(
            a is b or a == b for a, b in zip(covered, history, strict=False)
        ):
            # Messages the compaction kept were the caller's objects of that call; this
            # call's objects (equal ones, when the caller rebuilt them) take their place.
            position = {id(m): i for i, m in enumerate(covered)}
            swapped = [
                history[position[id(m)]] if id(m) in position else m for m in self._compacted
            ]
            return swapped + list(history[len(covered) :])
        self._covered, self._compacted = [], None
        return history

    def end_session(self, history: Messages | None = None) -> None:
        """End the session with its last history (what a strategy archives at the end):
        ``history``, else the latest step's. Once; never raises."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            try:
                self.strategy.end_session(self.last_history if history is None else history)
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
