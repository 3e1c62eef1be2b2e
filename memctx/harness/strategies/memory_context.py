"""The ``memory-context`` and ``memory-context-hook`` strategies: memctx's hooks in an agent loop.

Before every call the agent sends ``MemoryContext.on_context(transcript)``. Under
``memory-context``, when the transcript passes the compaction threshold, the agent compacts
with :class:`memctx.compaction.AgentCompactor` (seed 001's staged summary with its
fallbacks, written by ``extractionModel``, ``memctx/offline`` by default), and the part it
replaces goes to ``on_before_compact`` (archive + background extraction) before the
summary takes its place. Under
``memory-context-hook`` the agent never compacts by itself: the context hook alone keeps
every call within the window, and only the compactions the transcript records (a compaction
summary after its start, e.g. Claude Code's ``compact_boundary``) are replayed, the history
before the summary going to ``on_before_compact``; that is what ``memctx replay`` measures
on a real session by default. At the end of each session the rest of the transcript goes to
``on_before_compact`` as the session-end hook, so later sessions can recall it
(``crossSession`` is switched on by the engine for multi-session scenarios).

Determinism: the engine's clock is passed to ``MemoryContext`` and every hook is followed by
``wait_idle()`` outside the timed section, so background embedding and extraction finish
before the next call and what a call recalls never depends on thread timing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from memctx.compaction import AgentCompactor, archivable
from memctx.llm import LLMClient
from memctx.messages import (
    RoleKind,
    is_compaction_summary,
    is_recalled_block,
    leading_system_count,
)
from memctx.retrieval import CachedEmbedder, Embedder, make_embedder
from memctx.runtime import MemoryContext

from .base import (
    HOOK_STRATEGY,
    BaseStrategy,
    Messages,
    Prepared,
    StrategySetup,
    client_usage,
)
from .overflow import OverflowRecoverer, with_recovery

__all__ = [
    "MemoryContextStrategy",
    "archive_compacted",
    "shared_embedder",
]

_WAIT_S = 600.0  # background work of one hook never takes this long; a hang fails loudly


_EMBEDDERS: dict[str, Embedder] = {}


def shared_embedder(kind: str) -> Embedder:
    """One embedder per kind per process: the transformer loads once, and each stored text
    is embedded once per worker (an in-memory cache by text hash), so the strategies that
    archive the same messages of a scenario (memory-context, meerkat, openclaw's notes) do
    not embed them again. Search queries are never served from it (``cache_queries=False``):
    a query warmed by the previous strategy would make the next one's hook latency that of a
    lookup, not of the embedding the agent pays for. Each memory-context run keeps its own
    query cache on top, as memctx's store does (the calls of one turn ask the same query).
    Hash needs no cache: hashing is the embedding."""
    if kind not in _EMBEDDERS:
        if kind == "transformer":
            _EMBEDDERS[kind] = CachedEmbedder(make_embedder("transformer"), cache_queries=False)
        else:
            _EMBEDDERS[kind] = make_embedder("hash")
    return _EMBEDDERS[kind]


class MemoryContextStrategy(BaseStrategy):
    """memctx's hooks in an agent loop (see the module docstring).

    Args:
        setup: The run's window, embedding, config, work directory and shared caches.
        agent_compaction: ``True`` for ``memory-context`` (the agent compacts when the
            transcript passes the threshold); ``False`` for ``memory-context-hook`` (it
            only replays the compactions recorded in the transcript).
    """

    name = "memory-context"
    searches = True

    def __init__(self, setup: StrategySetup, *, agent_compaction: bool = True) -> None:
        super().__init__(setup)
        self.config = setup.config.with_overrides({"embeddingModel": setup.embedding})
        shared = shared_embedder(setup.embedding)
        # This agent's own query cache, as the product's store keeps one (its embedder is a
        # CachedEmbedder): the calls of one turn ask the same query, embedded once. Warmed
        # by this strategy only, never by another's run.
        self.embedder: Embedder = (
            CachedEmbedder(shared, cache_queries=True)
            if setup.embedding == "transformer"
            else shared
        )
        self.store = setup.work_dir / "store"
        # One extraction client for every session: one usage tally, one response cache in
        # the store (scanned for secrets like the rest of it).
        self.extractor = LLMClient(self.config.extraction_model, cache_dir=self.store / "llm-cache")
        self.summarizer: LLMClient | None = None
        self.compactor: AgentCompactor | None = None
        self.overflow: OverflowRecoverer | None = None
        self._over = False  # the transcript the next on_context gets exceeds the window
        if agent_compaction:
            # The agent's own summarizer: no disk cache (its prompts hold unredacted history).
            self.summarizer = LLMClient(self.config.extraction_model)
            self.compactor = AgentCompactor(
                self.config,
                setup.window,
                self.summarizer,
                counter=setup.counter,
                infos=setup.infos,
            )
            self.overflow = OverflowRecoverer(setup, self.config, self.summarizer)
        else:
            self.name = HOOK_STRATEGY
        self.engine: MemoryContext | None = None
        self.failures = 0
        self._scanned = 0  # transcript messages already searched for a recorded compaction
        self._turn = 0  # model calls of the session, for the compactor's loop guard

    def _engine(self) -> MemoryContext:
        if self.engine is None:
            raise RuntimeError("start_session was not called")
        return self.engine

    def start_session(self, session_id: str) -> None:
        self._scanned = 0
        self._turn = 0
        if self.compactor is not None:
            self.compactor.guard.reset()  # turns count from 0 again
        self.engine = MemoryContext(
            self.config,
            store_dir=self.store,
            session_id=session_id,
            context_window_tokens=self.setup.window,
            embedder=self.embedder,
            llm=self.extractor,
            clock=self.setup.clock,
        )

    def prepare(self, transcript: Messages) -> Prepared:
        engine = self._engine()
        # Only a transcript over the window needs its recovery told (a rare, costlier path).
        before = engine.stats()["counts"] if self._over else {}
        started = time.perf_counter()
        context = engine.on_context(transcript)
        latency = (time.perf_counter() - started) * 1000.0
        # Outside the timed hook: archiving/embedding queued by this call finishes before
        # the next one, so what the next call can recall never depends on thread timing.
        engine.wait_idle(_WAIT_S)
        recovery = _on_context_path(before, engine.stats()["counts"]) if self._over else ""
        prepared = Prepared(
            context, latency, _trimmed(context, transcript), engine.recall_cap, recovery=recovery
        )
        return with_recovery(prepared, self.overflow.call_path if self.overflow else "")

    def compact(self, transcript: Messages, tokens: int) -> Messages | None:
        final = self._compact(transcript, tokens)
        # Counted again only after a compaction (rare): otherwise ``tokens`` is the size.
        size = tokens if final is None else self.setup.counter.count_messages(final)
        self._over = size > self.setup.window
        return final

    def _compact(self, transcript: Messages, tokens: int) -> Messages | None:
        if self.compactor is None or self.overflow is None:
            return self._recorded_compaction(transcript)
        turn = self._turn
        self._turn += 1  # one turn per model call
        asked = tokens
        result = self.compactor.maybe_compact(transcript, tokens, turn=turn)
        replaced: Messages | None = None
        if result is not None:
            archive_compacted(self._engine(), archivable(result.dropped))
            replaced, tokens = result.messages, result.tokens_after
        # Still over the window: the provider refuses, and the overflow ladder runs. What
        # its compactions replace is archived too, as on any compaction.
        return self.overflow.after_compaction(
            asked,
            transcript,
            replaced,
            tokens,
            archive=lambda dropped: archive_compacted(self._engine(), dropped),
        )

    def _recorded_compaction(self, transcript: Messages) -> Messages | None:
        """Replay the last compaction the transcript records since the previous call.

        The agent that wrote the transcript compacted where a compaction summary follows
        other messages: its hook got the history before the summary, and the model saw
        only the leading system messages, the summary and what came after it from then on.
        An agent only appends, so each call searches the new messages only.
        """
        infos = self.setup.infos
        head = leading_system_count(transcript, infos)
        new = range(max(self._scanned, head + 1), len(transcript))
        self._scanned = len(transcript)
        found = [i for i in new if is_compaction_summary(transcript[i], infos.info(transcript[i]))]
        if not found:
            return None
        at = found[-1]
        archive_compacted(self._engine(), transcript[head:at])
        replaced = transcript[:head] + transcript[at:]
        self._scanned = len(replaced)
        return replaced

    def search(self, query: str) -> list[str] | None:
        hits = self._engine().memory_search(query, limit=5)
        return [str(hit.get("content", "")) for hit in hits]

    def end_session(self, transcript: Messages) -> None:
        engine = self._engine()
        # The session-end hook: what is still only in the transcript (the tail since the
        # last compaction) is archived, so later sessions can recall it.
        rest = [
            m
            for m in transcript
            if self.setup.infos.info(m).kind is not RoleKind.SYSTEM
            and not is_recalled_block(m)
            and not is_compaction_summary(m)
        ]
        if rest:
            engine.on_before_compact(rest)
        engine.wait_idle(_WAIT_S)
        counts: Mapping[str, Any] = engine.stats().get("counts", {})
        self.failures += sum(int(v) for k, v in counts.items() if k.endswith("_failures"))
        engine.close()
        self.engine = None

    def close(self) -> dict[str, float]:
        if self.engine is not None:
            self.engine.close()
            self.engine = None
        return client_usage([self.extractor, self.summarizer], self.failures)


def archive_compacted(engine: MemoryContext, messages: Messages) -> None:
    """Hand what a compaction replaced to ``on_before_compact`` and wait for the archive
    (outside any timed hook), so what the next call can recall never depends on timing."""
    if messages:
        engine.on_before_compact(messages)
        engine.wait_idle(_WAIT_S)


def _trimmed(context: Messages, transcript: Messages) -> bool:
    """Whether ``on_context`` left out transcript messages. It adds at most one recalled
    block (the transcript holds none: the engine never appends one), so only equal lengths
    need a look for the block: one message out and a block in."""
    if len(context) != len(transcript):
        return len(context) < len(transcript)
    return any(map(is_recalled_block, context))


def _on_context_path(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What one ``on_context`` call did to fit, from its counters before and after."""
    dropped = int(after.get("trims", 0)) - int(before.get("trims", 0))
    cut = int(after.get("tool_results_cut", 0)) - int(before.get("tool_results_cut", 0))
    steps = ["trimmed"] if dropped else []
    steps += [f"cut {cut} oversized tool result{'s' if cut > 1 else ''}"] if cut else []
    return "on_context " + (", ".join(steps) if steps else "changed nothing")
