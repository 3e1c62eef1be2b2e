"""The ``meerkat`` strategy: seed 002's turn-based compactor, recall only through ``memory_search``.

How Meerkat manages an agent's context, as seed 002 describes it:

- **Compaction** at turn boundaries (:class:`memctx.compaction.TurnCompactor`): when the
  input tokens of the last call or the estimated history reach the threshold, everything
  but at most the last ``recentTurnBudget`` (4) complete turns becomes one ``[Context
  compacted]`` message, the oldest turn always included (Meerkat's rule: one long agent
  turn is compacted too); never on turn 0, at least ``minTurnsBetweenCompactions`` turns
  apart, backing off when a compaction does not bring the context under the threshold (the
  loop guard); a failed compaction leaves the history unchanged.
- **Memory**: the discarded messages are indexed, and the agent can call ``memory_search``;
  nothing is injected into the context. The harness models the tool as the agent calling it
  with the probe's question (the ``tool`` column of the report). The index is memctx's raw
  store, used through ``MemoryContext.on_before_compact`` and ``memory_search`` only: the
  seed's HNSW index is a different vector index over the same kind of records, and
  comparing stores is not what this strategy is for. Knowledge extraction is off by this
  strategy's own default (Meerkat has none; ``knowledgeExtraction=true`` turns it on).

The seed's threshold is an absolute 100,000 tokens; a Meerkat agent on a smaller window
would set it under the window, so the strategy uses ``min(autoCompactThreshold, window -
reserve)`` with the compaction reserve of the other strategies. When a call would still
exceed the window (the guard is waiting, one tool output larger than the window), the
provider would refuse it and seed 001's overflow ladder runs (:mod:`.overflow`); if that
fails too, the oldest messages are dropped as :class:`~.truncate.TruncateStrategy` drops
them and the call is marked as trimmed: no call over the window is ever sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from memctx.compaction import CompactionSetup, TurnCompactor, compaction_reserve
from memctx.llm import LLMClient
from memctx.runtime import MemoryContext

from .base import BaseStrategy, Messages, Prepared, StrategySetup, llm_usage
from .memory_context import BACKGROUND_WAIT_S
from .overflow import OverflowRecoverer, with_recovery
from .truncate import TruncateStrategy, send_whole

__all__ = ["MeerkatStrategy"]


class MeerkatStrategy(BaseStrategy):
    """Seed 002's turn-based compactor with ``memory_search`` (see the module docstring).

    Args:
        setup: Window, config, store directory and shared caches.
    """

    name = "meerkat"
    searches = True  # memory_search ranks with the embedder
    # Meerkat extracts no facts.
    config_defaults: ClassVar[Mapping[str, object]] = {"knowledgeExtraction": False}

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        window = setup.window
        threshold = min(
            self.config.compaction.auto_compact_threshold,
            max(window - compaction_reserve(self.config, window), 1),
        )
        self.config = self.config.with_overrides({"compaction.autoCompactThreshold": threshold})
        # No disk cache: the summariser's prompts hold the unredacted history.
        self.client = LLMClient(self.config.extraction_model)
        self.compaction = CompactionSetup(
            client=self.client,
            config=self.config,
            window=window,
            counter=setup.counter,
            infos=setup.infos,
        )
        self.compactor: TurnCompactor | None = None
        self.index: MemoryContext | None = None
        self._fitter = TruncateStrategy(self.setup)
        self.overflow = OverflowRecoverer(self.compaction)
        self._turn = 0
        self._last_input: int | None = None
        self.counts = {"compaction_failures": 0, "over_window_calls": 0, "hook_failures": 0}
        self.guard_stats: dict[str, int] = {}

    def _index(self) -> MemoryContext:
        if self.index is None:
            raise RuntimeError(f"{self.name}: start_session() was not called")
        return self.index

    def start_session(self, session_id: str) -> None:
        if self.index is not None:
            self.end_session([])  # an agent that starts a new session without ending one
        self._turn, self._last_input = 0, None
        self._fitter.start_session(session_id)
        self.compactor = TurnCompactor(self.compaction)  # a new loop guard per session
        self.index = MemoryContext(
            self.config,
            store_dir=self.setup.store_dir,
            session_id=session_id,
            context_window_tokens=self.setup.window,
            embedder=self.setup.embedder,
            clock=self.setup.clock,
        )

    def _archive(self, messages: Messages) -> None:
        """Index what a compaction discarded (seed 002: for ``memory_search``)."""
        if messages:
            index = self._index()
            index.on_before_compact(messages)
            if self.setup.wait_for_background:
                index.wait_idle(BACKGROUND_WAIT_S)

    def compact(self, transcript: Messages, tokens: int | None = None) -> Messages | None:
        if self.compactor is None:
            raise RuntimeError(f"{self.name}: start_session() was not called")
        tokens = self.count(transcript, tokens)
        turn = self._turn
        self._turn += 1  # one turn per model call
        asked = tokens
        result = self.compactor.maybe_compact(
            transcript, turn=turn, last_input_tokens=self._last_input, estimated_tokens=tokens
        )
        self.counts["compaction_failures"] += result.failed
        replaced: Messages | None = None
        if result.compacted:
            self._archive(result.to_index)
            replaced, tokens = result.messages, result.tokens_after
        # Still over the window: the provider refuses, and the overflow ladder runs. What
        # its compactions replace is indexed too, as after any compaction.
        return self.overflow.after_compaction(
            asked,
            transcript,
            replaced,
            tokens,
            archive=self._archive,
        )

    def prepare(self, transcript: Messages) -> Prepared:
        prepared, whole = send_whole(self.setup, transcript, self._fitter)
        prepared = with_recovery(prepared, self.overflow.call_path)
        self.counts["over_window_calls"] += whole is None
        # What the provider reports as the call's input: the trigger's first threshold.
        sent = whole if whole is not None else self.setup.counter.count_messages(prepared.context)
        self._last_input = sent
        return prepared

    def search(self, query: str) -> list[str] | None:
        hits = self._index().memory_search(query, limit=5)
        return [str(hit.get("content", "")) for hit in hits]

    def end_session(self, transcript: Messages) -> None:
        index = self.index
        if index is None:
            return
        index.wait_idle(BACKGROUND_WAIT_S)
        counts: Mapping[str, Any] = index.stats().get("counts", {})
        self.counts["hook_failures"] += sum(
            int(v) for k, v in counts.items() if k.endswith("_failures")
        )
        if self.compactor is not None:
            self.guard_stats = self.compactor.stats()
        index.close()
        self.index = None

    def close(self) -> dict[str, float]:
        self.end_session([])
        return llm_usage([self.client], self.counts["hook_failures"])
