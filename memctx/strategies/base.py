"""The strategy protocol: what an agent calls around each model call.

A *strategy* is one design of context management (seed 001's compaction with a memory flush,
seed 002's turn compactor, memctx's recall, observation masking, ...) packaged so that any
agent loop can run it and the evaluation harness can measure it through the same code.

Around each model call the agent hands over its history (the messages it keeps, in its own
provider's shape) and gets back what to send::

    step = strategy.step(history)     # compaction when the strategy decides, then the call
    history = step.history            # the agent keeps the compacted history
    reply = call_model(step.messages) # what this call sends

:meth:`BaseStrategy.step` is the two protocol methods in order: :meth:`Strategy.compact` (a
replacement history when the strategy compacts before this call, else ``None``) and
:meth:`Strategy.prepare` (the messages of this call, as a :class:`Prepared`). Strategies that
give the model a memory tool answer :meth:`Strategy.search`; :meth:`Strategy.end_session`
and :meth:`Strategy.close` finish the work.

A strategy is built from a :class:`StrategySetup` (window, config, store directory, token
counter, clock, name settings) by a factory registered with
:func:`memctx.strategies.register_strategy`; :func:`memctx.make_strategy` builds one by name.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from memctx.config import MemoryContextConfig
from memctx.messages import InfoCache, TokenCounter

if TYPE_CHECKING:
    from memctx.retrieval import Embedder

__all__ = [
    "HOOK_STRATEGY",
    "USAGE_KEYS",
    "BaseStrategy",
    "Messages",
    "Prepared",
    "Step",
    "Strategy",
    "StrategySetup",
    "llm_usage",
]

Messages = list[dict[str, Any]]
# memctx's hooks in an agent that compacts by its own rules (what ``memctx replay`` runs).
HOOK_STRATEGY = "memory-context-hook"
# What :meth:`Strategy.close` reports, each a number (missing keys count as 0).
USAGE_KEYS = (
    "prompt_tokens",  # LLM tokens the strategy's own calls sent (summaries, extraction, notes)
    "completion_tokens",  # and received
    "cost_usd",  # their price (litellm's price table)
    "largest_prompt_tokens",  # the largest single prompt among them
    "hook_failures",  # hook calls that failed and fell back (counted, never raised)
)


@dataclass(frozen=True)
class StrategySetup:
    """What a strategy is built from.

    Attributes:
        window: The model's context window in tokens.
        config: memctx settings (``embeddingModel`` says which embedder a searching strategy
            uses). A strategy applies its own defaults (:attr:`BaseStrategy.config_defaults`)
            where this config does not set them explicitly.
        store_dir: The directory the strategy keeps its files in (raw store, memory files,
            sidecars, tool payloads), shared by the sessions of one agent or project.
        counter: Token counter (one cache of message sizes, shared with the caller).
        infos: Message anatomy cache, shared with the caller.
        clock: Epoch seconds; the harness passes a deterministic one.
        params: Settings given after the strategy's name (``observation-masking:keepLast=5``),
            parsed by the parsers it registered.
        embedder: An embedder to use instead of the one ``config.embeddingModel`` names (the
            harness shares one per process, so a transformer loads once).
        wait_for_background: Wait for background work (archiving, embedding, extraction)
            after each hook, so what the next call recalls never depends on thread timing:
            the harness's determinism. An agent leaves it off and the work stays off its path.
    """

    window: int
    config: MemoryContextConfig
    store_dir: Path
    counter: TokenCounter
    infos: InfoCache
    clock: Callable[[], float] = time.time
    params: Mapping[str, object] = field(default_factory=dict)
    embedder: Embedder | None = None
    wait_for_background: bool = False


@dataclass(frozen=True)
class Prepared:
    """One call's messages and what producing them took (what :meth:`Strategy.prepare` returns).

    Attributes:
        context: The messages to send: a new list (never the history object itself), in the
            history's own provider shape.
        latency_ms: Wall time the strategy spent preparing them (0 when nothing was done).
        trimmed: Messages of the history were left out of this call.
        recall_cap: Tokens a recalled block may take, or ``None`` when there is no block.
        recovery: What the strategy did to fit the window on this call (``"dropped the oldest
            messages"``, ``"overflow recovery: compacted x1"``); the harness shows it for calls
            whose history exceeded the window.
    """

    context: Messages
    latency_ms: float = 0.0
    trimmed: bool = False
    recall_cap: int | None = None
    recovery: str = ""


@dataclass(frozen=True)
class Step:
    """One model call of an agent loop (what :meth:`BaseStrategy.step` returns).

    Attributes:
        history: The history the agent keeps from now on: the one it passed, or the
            strategy's compacted replacement.
        messages: What to send on this call (``prepared.context``).
        compacted: The strategy compacted the history before this call.
        prepared: The call's details (latency, trimming, recall cap, recovery path).
    """

    history: Messages
    messages: Messages
    compacted: bool
    prepared: Prepared


@runtime_checkable
class Strategy(Protocol):
    """The interface an agent loop (or the harness's replay engine) drives.

    One instance serves the sessions of one agent, one after the other:
    ``start_session`` → (``compact`` → ``prepare``) per model call → ``end_session``, and
    ``close`` once at the end.
    """

    name: str
    searches: bool  # results depend on the embedder (the harness runs it once per embedder)

    def start_session(self, session_id: str) -> None:
        """A session begins; its history starts empty."""
        ...

    def compact(self, transcript: Messages, tokens: int | None = None) -> Messages | None:
        """A replacement history when the strategy compacts before this call, else ``None``.

        ``tokens`` is the history's size when the caller already counted it (else the
        strategy counts)."""
        ...

    def prepare(self, transcript: Messages) -> Prepared:
        """The messages of one model call, from the history so far."""
        ...

    def search(self, query: str) -> list[str] | None:
        """What the strategy's memory tool returns for ``query`` (texts, best first), or
        ``None`` when the strategy gives the model no such tool."""
        ...

    def end_session(self, transcript: Messages) -> None:
        """The session ended with ``transcript`` (its final, possibly compacted, form)."""
        ...

    def close(self) -> Mapping[str, float]:
        """Release resources; return the strategy's LLM usage (:data:`USAGE_KEYS`)."""
        ...


class BaseStrategy:
    """Defaults for the optional parts of :class:`Strategy`, and :meth:`step`.

    A subclass sets :attr:`name`, implements :meth:`prepare`, and overrides what it does
    beyond sending: :meth:`compact`, :meth:`search`, :meth:`start_session`,
    :meth:`end_session`, :meth:`close`.

    Attributes:
        name: The strategy's name.
        searches: Its results depend on the embedder.
        config_defaults: The strategy's own values for config settings (dotted camelCase
            keys, as ``--set`` takes them), used where the config it is given leaves them
            unset: ``openclaw`` prunes with ``cache-ttl`` as seed 003's example does unless
            ``contextPruning.mode`` is set. What the config sets explicitly always wins.
        setup: The set-up, its config with :attr:`config_defaults` applied.
        config: ``setup.config``.
    """

    name = "base"
    searches = False
    config_defaults: ClassVar[Mapping[str, object]] = {}

    def __init__(self, setup: StrategySetup) -> None:
        explicit = setup.config.explicit_settings()
        own = {k: v for k, v in self.config_defaults.items() if k not in explicit}
        if own:
            setup = dataclasses.replace(setup, config=setup.config.with_overrides(own))
        self.setup = setup
        self.config = setup.config

    def start_session(self, session_id: str) -> None:
        return None

    def compact(self, transcript: Messages, tokens: int | None = None) -> Messages | None:
        return None

    def prepare(self, transcript: Messages) -> Prepared:
        raise NotImplementedError(f"{type(self).__name__} must implement prepare()")

    def search(self, query: str) -> list[str] | None:
        return None

    def end_session(self, transcript: Messages) -> None:
        return None

    def close(self) -> Mapping[str, float]:
        return {}

    def step(self, history: Messages) -> Step:
        """Compact if the strategy decides to, then prepare this call (see the module doc)."""
        replaced = self.compact(history, self.setup.counter.count_messages(history))
        kept = history if replaced is None else replaced
        prepared = self.prepare(kept)
        return Step(kept, prepared.context, replaced is not None, prepared)

    def __enter__(self) -> BaseStrategy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def count(self, transcript: Messages, tokens: int | None) -> int:
        """``tokens`` when the caller counted the history, else its count."""
        return tokens if tokens is not None else self.setup.counter.count_messages(transcript)


def llm_usage(clients: Sequence[Any], hook_failures: int = 0) -> dict[str, float]:
    """What :meth:`Strategy.close` returns for a strategy whose LLM calls go through
    ``clients`` (:class:`memctx.llm.LLMClient`; ``None`` skipped): their usage summed, the
    largest prompt any of them sent, and the hook failures."""
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
