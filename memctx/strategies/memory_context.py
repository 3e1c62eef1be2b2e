"""The ``memory-context`` strategy: memctx's hooks around an agent that compacts.

Before every call the agent sends ``MemoryContext.on_context(history)``: smart trim, tool
pairing repair, and the ``<recalled-context>`` block of what memctx archived that is relevant
to the latest request. When the history passes the compaction threshold (``window -
min(compaction.reserveTokensFloor, window / 4)``), the agent compacts with
:class:`memctx.compaction.AgentCompactor` (seed 001's staged summary with its fallbacks,
written by ``extractionModel``, ``memctx/offline`` by default), and the part it replaces goes
to ``on_before_compact`` (archived verbatim, redacted, and mined for facts in the background)
before the summary takes its place. When even the compacted history exceeds the window, seed
001's overflow ladder runs (:mod:`.overflow`). At the end of each session the rest of the
history goes to ``on_before_compact`` as the session-end hook, so later sessions can recall
it (with ``crossSession`` on). The model can also search the archive itself
(:meth:`MemoryContextStrategy.search`, the ``memory_search`` tool).

:mod:`.memory_context_hook` is the same hooks without the agent's own compaction.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from memctx.compaction import AgentCompactor, CompactionSetup, archivable
from memctx.config import MemoryContextConfig
from memctx.llm import LLMClient
from memctx.messages import RoleKind, is_compaction_summary, is_recalled_block
from memctx.runtime import MemoryContext

from .base import BaseStrategy, Messages, Prepared, StrategySetup, llm_usage
from .overflow import OverflowRecoverer, with_recovery

__all__ = ["BACKGROUND_WAIT_S", "MemoryContextStrategy"]

BACKGROUND_WAIT_S = 600.0  # background work of one hook never takes this long; a hang fails loudly


class MemoryContextStrategy(BaseStrategy):
    """memctx's hooks in an agent loop that compacts (see the module docstring).

    Args:
        setup: Window, config (``embeddingModel``, ``extractionModel``, ...), store directory
            and shared caches.
    """

    name = "memory-context"
    searches = True
    agent_compaction = True

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        self.store = setup.store_dir
        # One extraction client for every session: one usage tally, one response cache in
        # the store (redacted prompts only: extraction sees archived, redacted text).
        self.extractor = LLMClient(self.config.extraction_model, cache_dir=self.store / "llm-cache")
        self.summarizer: LLMClient | None = None
        self.compactor: AgentCompactor | None = None
        self.overflow: OverflowRecoverer | None = None
        self._over = False  # the history the next on_context gets exceeds the window
        if self.agent_compaction:
            # The agent's own summarizer: no disk cache (its prompts hold unredacted history).
            self.summarizer = LLMClient(self.config.extraction_model)
            compaction = CompactionSetup(
                client=self.summarizer,
                config=self.config,
                window=setup.window,
                counter=setup.counter,
                infos=setup.infos,
            )
            self.compactor = AgentCompactor(compaction)
            self.overflow = OverflowRecoverer(compaction)
        self.engine: MemoryContext | None = None
        self.failures = 0
        self._turn = 0  # model calls of the session, for the compactor's loop guard

    def _engine(self) -> MemoryContext:
        if self.engine is None:
            raise RuntimeError(f"{self.name}: start_session() was not called")
        return self.engine

    def _settle(self, engine: MemoryContext) -> None:
        """Wait for the hook's background work when the caller wants determinism."""
        if self.setup.wait_for_background:
            engine.wait_idle(BACKGROUND_WAIT_S)

    def start_session(self, session_id: str) -> None:
        if self.engine is not None:
            self.end_session([])  # an agent that starts a new session without ending one
        self._turn = 0
        if self.compactor is not None:
            self.compactor.guard.reset()  # turns count from 0 again
        self.engine = MemoryContext(
            self.engine_config(),
            store_dir=self.store,
            session_id=session_id,
            context_window_tokens=self.setup.window,
            embedder=self.setup.embedder,
            llm=self.extractor,
            clock=self.setup.clock,
        )

    def engine_config(self) -> MemoryContextConfig:
        """The settings the session's engine runs with (a subclass may adjust them)."""
        return self.config

    def prepare(self, transcript: Messages) -> Prepared:
        engine = self._engine()
        # Only a history over the window needs its recovery told (a rare, costlier path).
        before = engine.stats()["counts"] if self._over else {}
        started = time.perf_counter()
        context = engine.on_context(transcript)
        latency = (time.perf_counter() - started) * 1000.0
        # Outside the timed hook: archiving queued by this call finishes before the next
        # one when the caller asks for determinism (the harness).
        self._settle(engine)
        recovery = _on_context_path(before, engine.stats()["counts"]) if self._over else ""
        prepared = Prepared(
            context, latency, _trimmed(context, transcript), engine.recall_cap, recovery=recovery
        )
        return with_recovery(prepared, self.overflow.call_path if self.overflow else "")

    def compact(self, transcript: Messages, tokens: int | None = None) -> Messages | None:
        tokens = self.count(transcript, tokens)
        final = self.replace_history(transcript, tokens)
        # Counted again only after a compaction (rare): otherwise ``tokens`` is the size.
        size = tokens if final is None else self.setup.counter.count_messages(final)
        self._over = size > self.setup.window
        return final

    def replace_history(self, transcript: Messages, tokens: int) -> Messages | None:
        """The compaction itself (:meth:`compact` adds the bookkeeping): the agent's
        compaction past the threshold, then the overflow ladder when still over the window."""
        if self.compactor is None or self.overflow is None:
            return None
        turn = self._turn
        self._turn += 1  # one turn per model call
        asked = tokens
        result = self.compactor.maybe_compact(transcript, tokens, turn=turn)
        replaced: Messages | None = None
        if result is not None:
            self.archive(archivable(result.dropped))
            replaced, tokens = result.messages, result.tokens_after
        # Still over the window: the provider would refuse, and the overflow ladder runs.
        # What its compactions replace is archived too, as on any compaction.
        return self.overflow.after_compaction(
            asked, transcript, replaced, tokens, archive=self.archive
        )

    def archive(self, messages: Messages) -> None:
        """Hand what a compaction replaced to ``on_before_compact`` (the pre-compaction hook)."""
        if messages:
            engine = self._engine()
            engine.on_before_compact(messages)
            self._settle(engine)

    def search(self, query: str) -> list[str] | None:
        hits = self._engine().memory_search(query, limit=5)
        return [str(hit.get("content", "")) for hit in hits]

    def end_session(self, transcript: Messages) -> None:
        engine = self.engine
        if engine is None:
            return
        # The session-end hook: what is still only in the history (the tail since the last
        # compaction) is archived, so later sessions can recall it.
        rest = [
            m
            for m in transcript
            if self.setup.infos.info(m).kind is not RoleKind.SYSTEM
            and not is_recalled_block(m)
            and not is_compaction_summary(m)
        ]
        if rest:
            engine.on_before_compact(rest)
        engine.wait_idle(BACKGROUND_WAIT_S)  # the session's work is done before it closes
        counts: Mapping[str, Any] = engine.stats().get("counts", {})
        self.failures += sum(int(v) for k, v in counts.items() if k.endswith("_failures"))
        engine.close()
        self.engine = None

    def close(self) -> Mapping[str, float]:
        if self.engine is not None:
            self.end_session([])
        return llm_usage([self.extractor, self.summarizer], self.failures)


def _trimmed(context: Messages, transcript: Messages) -> bool:
    """Whether ``on_context`` left out history messages. It adds at most one recalled block
    (the history holds none: an agent never keeps one), so only equal lengths need a look
    for the block: one message out and a block in."""
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
