"""Context strategies the replay engine compares, behind one small interface.

A strategy turns the agent's transcript into the messages of one model call
(:meth:`Strategy.prepare`), may compact the transcript when it grows too long
(:meth:`Strategy.compact`), may answer the ``memory_search`` tool, and is told when a session
ends. ``full`` and ``truncate`` are the reference points; ``memory-context`` is memctx.
The compaction issue adds ``openclaw``, ``meerkat`` and ``planner`` with
:func:`register_strategy`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memctx._anatomy import RoleKind, inspect_message, is_recalled_block, message_text
from memctx._config import MemoryContextConfig
from memctx._embeddings import Embedder, make_embedder
from memctx._llm import LLMClient, task_marker
from memctx._pairing import repair_tool_pairing
from memctx._runtime import MemoryContext
from memctx._tokens import TokenCounter

__all__ = [
    "STRATEGIES",
    "Prepared",
    "Strategy",
    "StrategySetup",
    "make_strategy",
    "register_strategy",
]

Messages = list[dict[str, Any]]
COMPACTION_PREFIX = "[Context compacted]"
# The compacted transcript keeps this share of the window as verbatim recent messages.
TAIL_SHARE = 0.25


@dataclass(frozen=True)
class StrategySetup:
    """What every strategy is built from.

    Attributes:
        window: Context window of the model (tokens).
        embedding: ``"hash"`` or ``"transformer"`` for strategies that search, else ``"-"``.
        config: memctx settings (overrides applied), ``enabled=True``.
        work_dir: A fresh directory for stores and caches of this job.
        counter: The job's token counter (shared with the engine: one cache).
        clock: Deterministic epoch seconds (the engine advances it per call).
        cross_session: The scenario has several sessions that may recall each other.
    """

    window: int
    embedding: str
    config: MemoryContextConfig
    work_dir: Path
    counter: TokenCounter
    clock: Callable[[], float]
    cross_session: bool = False


@dataclass(frozen=True)
class Prepared:
    """One call's context and what producing it cost."""

    context: Messages
    latency_ms: float = 0.0
    trimmed: bool = False
    recall_cap: int | None = None  # tokens the recalled block may use (None: no block)


class Strategy(Protocol):
    """The interface the replay engine drives."""

    name: str

    def start_session(self, session_id: str) -> None: ...

    def prepare(self, transcript: Messages) -> Prepared: ...

    def compact(self, transcript: Messages, tokens: int) -> Messages | None:
        """A replacement transcript when the strategy compacts now, else ``None``."""
        ...

    def search(self, query: str) -> list[str] | None:
        """``memory_search`` results' texts, or ``None`` when the strategy has no tool."""
        ...

    def end_session(self, transcript: Messages) -> None: ...

    def close(self) -> dict[str, Any]:
        """Release resources; return LLM usage (``prompt_tokens``, ``completion_tokens``)."""
        ...


StrategyFactory = Callable[[StrategySetup], Strategy]
STRATEGIES: dict[str, StrategyFactory] = {}


def register_strategy(name: str, factory: StrategyFactory) -> None:
    """Make ``name`` available to ``memctx eval --strategy``."""
    if not name or name in STRATEGIES:
        raise ValueError(f"strategy name {name!r} is empty or already registered")
    STRATEGIES[name] = factory


def make_strategy(name: str, setup: StrategySetup) -> Strategy:
    """Build a registered strategy (ValueError naming the valid ones otherwise)."""
    try:
        factory = STRATEGIES[name]
    except KeyError:
        valid = ", ".join(sorted(STRATEGIES))
        raise ValueError(f"unknown strategy {name!r}; valid: {valid}") from None
    return factory(setup)


class _Base:
    name = "base"

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

    def close(self) -> dict[str, Any]:
        return {}


class FullStrategy(_Base):
    """Send everything: the ceiling while it fits, an error (not fit) once it does not."""

    name = "full"

    def prepare(self, transcript: Messages) -> Prepared:
        return Prepared(list(transcript))


class TruncateStrategy(_Base):
    """Drop the oldest messages (system prompt kept) until the rest fits, then repair pairs."""

    name = "truncate"

    def prepare(self, transcript: Messages) -> Prepared:
        started = time.perf_counter()
        budget = self.setup.window - self.setup.config.reserve_tokens
        count = self.setup.counter.count_message
        head = [m for m in transcript[:1] if inspect_message(m).kind is RoleKind.SYSTEM]
        used = sum(count(m) for m in head)
        start = len(transcript)
        while start > len(head) and used + count(transcript[start - 1]) <= budget:
            start -= 1
            used += count(transcript[start])
        trimmed = start > len(head)
        context = head + transcript[start:]
        if trimmed:
            context = repair_tool_pairing(context)
        return Prepared(context, (time.perf_counter() - started) * 1000.0, trimmed)


_EMBEDDERS: dict[str, Embedder] = {}


def shared_embedder(kind: str) -> Embedder:
    """One embedder per kind per process: its in-memory cache then serves every job."""
    if kind not in _EMBEDDERS:
        _EMBEDDERS[kind] = make_embedder("transformer" if kind == "transformer" else "hash")
    return _EMBEDDERS[kind]


class MemoryContextStrategy(_Base):
    """memctx: ``on_context`` every call, agent compaction with ``on_before_compact``.

    The agent compacts when its transcript passes ``window - reserve`` (the compaction
    reserve, at most a quarter of the window): the old part goes to ``on_before_compact``
    (archive + background extraction) and is replaced by one ``[Context compacted]`` summary
    written by the configured LLM (``memctx/offline`` by default); the newest messages up to
    :data:`TAIL_SHARE` of the window stay verbatim, cut at a user turn so no tool pair is
    split. The engine waits for background work after every hook so that results do not
    depend on thread timing.
    """

    name = "memory-context"

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        config = setup.config
        if setup.cross_session and not config.cross_session:
            config = config.with_overrides({"crossSession": True})
        self.config = config.with_overrides({"embeddingModel": setup.embedding})
        self.embedder = shared_embedder(setup.embedding)
        self.engine: MemoryContext | None = None
        self.summarizer = LLMClient(config.extraction_model, cache_dir=setup.work_dir / "llm")
        self.usage: dict[str, float] = {}

    def start_session(self, session_id: str) -> None:
        self.engine = MemoryContext(
            self.config,
            store_dir=self.setup.work_dir / "store",
            session_id=session_id,
            context_window_tokens=self.setup.window,
            embedder=self.embedder,
            clock=self.setup.clock,
        )

    def _engine(self) -> MemoryContext:
        if self.engine is None:
            raise RuntimeError("start_session was not called")
        return self.engine

    def prepare(self, transcript: Messages) -> Prepared:
        engine = self._engine()
        before = engine.stats()["counts"].get("trimmed_messages", 0)
        started = time.perf_counter()
        context = engine.on_context(transcript)
        latency = (time.perf_counter() - started) * 1000.0
        engine.wait_idle(600)  # outside the timed hook: background work never races a call
        trimmed = engine.stats()["counts"].get("trimmed_messages", 0) > before
        return Prepared(context, latency, trimmed, engine.recall_cap)

    def compact(self, transcript: Messages, tokens: int) -> Messages | None:
        window = self.setup.window
        reserve = min(self.config.compaction.reserve_tokens_floor, window // 4)
        if tokens <= window - reserve:
            return None
        cut = _tail_start(transcript, int(window * TAIL_SHARE), self.setup.counter)
        head = 1 if transcript and inspect_message(transcript[0]).kind is RoleKind.SYSTEM else 0
        old = [m for m in transcript[head:cut] if not is_recalled_block(m)]
        if not old:
            return None
        engine = self._engine()
        engine.on_before_compact(old)
        engine.wait_idle(600)
        summary = self._summarize(old)
        kept = transcript[cut:]
        message = {"role": "user", "content": f"{COMPACTION_PREFIX} {summary}"}
        return repair_tool_pairing([*transcript[:head], message, *kept])

    def _summarize(self, old: Messages) -> str:
        lines = []
        for message in old:
            if message_text(message).startswith(COMPACTION_PREFIX):
                lines.append(f"previous summary: {message_text(message)}")
                continue
            info = inspect_message(message)
            text = message_text(message).strip()
            if text:
                lines.append(f"{info.kind.value}: {text}")
        budget = min(self.config.compaction.max_summary_tokens, self.setup.window // 16)
        reply = self.summarizer.complete(
            [
                {"role": "system", "content": task_marker("summarize")},
                {
                    "role": "user",
                    "content": "Summarize this coding session for continuation: decisions, "
                    "configuration, open tasks, files touched, errors.\n<conversation>\n"
                    + "\n".join(lines)
                    + "\n</conversation>",
                },
            ],
            task="summarize",
            max_tokens=budget,
        )
        return reply.text

    def search(self, query: str) -> list[str] | None:
        hits = self._engine().memory_search(query, limit=5)
        return [str(hit.get("content", "")) for hit in hits]

    def end_session(self, transcript: Messages) -> None:
        engine = self._engine()
        # The session-end hook: what is still only in the transcript is archived too, so a
        # later session can recall it.
        engine.on_before_compact([m for m in transcript if not is_recalled_block(m)])
        engine.wait_idle(600)
        self._add_usage(engine.stats().get("llm") or {})
        engine.close()
        self.engine = None

    def _add_usage(self, usage: Mapping[str, Any]) -> None:
        for key in ("prompt_tokens", "completion_tokens", "cost_usd"):
            self.usage[key] = self.usage.get(key, 0) + float(usage.get(key, 0) or 0)

    def close(self) -> dict[str, Any]:
        if self.engine is not None:
            self.engine.close()
            self.engine = None
        self._add_usage(self.summarizer.usage().as_dict())
        return dict(self.usage)


def _tail_start(transcript: Messages, budget: int, counter: TokenCounter) -> int:
    """Index of the first kept message: newest messages within ``budget``, at a user turn."""
    used = 0
    start = len(transcript)
    for index in range(len(transcript) - 1, 0, -1):
        used += counter.count_message(transcript[index])
        if used > budget:
            break
        start = index
    # Move forward to a plain user message so that no call is separated from its result.
    for index in itertools.chain(range(start, len(transcript)), range(start - 1, 0, -1)):
        info = inspect_message(transcript[index])
        if info.kind is RoleKind.USER and not info.tool_result_ids:
            return index
    return start


for _name, _factory in (
    ("full", FullStrategy),
    ("truncate", TruncateStrategy),
    ("memory-context", MemoryContextStrategy),
):
    register_strategy(_name, _factory)
