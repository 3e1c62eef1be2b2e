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
  comparing stores is not what this strategy is for. Knowledge extraction is off: Meerkat has
  none.

The seed's threshold is an absolute 100,000 tokens; a Meerkat agent on a smaller window
would set it under the window, so the harness uses ``min(autoCompactThreshold, window -
reserve)`` with the compaction reserve of the other strategies. When a call would still
exceed the window (the guard is waiting, one tool output larger than the window), the
provider refuses it and seed 001's overflow ladder runs
(:mod:`~memctx.harness.strategies.overflow`); if that fails too, the oldest messages are
dropped by :class:`~memctx.harness.strategies.base.TruncateStrategy` itself and the call is
marked as trimmed: the harness measures what the agent would have sent, never an overflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memctx.compaction import TurnCompactor, compaction_reserve
from memctx.llm import LLMClient
from memctx.runtime import MemoryContext

from .base import (
    BaseStrategy,
    Messages,
    Prepared,
    StrategySetup,
    TruncateStrategy,
    client_usage,
    send_whole,
)
from .memory_context import archive_compacted, shared_embedder
from .overflow import OverflowRecoverer, with_recovery

__all__ = ["MeerkatStrategy"]

_WAIT_S = 600.0  # background indexing of one batch never takes this long


class MeerkatStrategy(BaseStrategy):
    """Seed 002's turn-based compactor with ``memory_search`` (see the module docstring).

    Args:
        setup: The run's window, embedding, config, work directory and shared caches.
    """

    name = "meerkat"
    searches = True  # memory_search ranks with the embedder

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        window = setup.window
        threshold = min(
            setup.config.compaction.auto_compact_threshold,
            max(window - compaction_reserve(setup.config, window), 1),
        )
        self.config = setup.config.with_overrides(
            {
                "embeddingModel": setup.embedding,
                "knowledgeExtraction": False,
                "compaction.autoCompactThreshold": threshold,
            }
        )
        # No disk cache: the summariser's prompts hold the unredacted history.
        self.client = LLMClient(self.config.extraction_model)
        self.compactor: TurnCompactor | None = None
        self.index: MemoryContext | None = None
        self._fitter = TruncateStrategy(setup)
        self.overflow = OverflowRecoverer(setup, self.config, self.client)
        self._turn = 0
        self._last_input: int | None = None
        self.counts = {"compaction_failures": 0, "over_window_calls": 0, "hook_failures": 0}
        self.guard_stats: dict[str, int] = {}

    def _index(self) -> MemoryContext:
        if self.index is None:
            raise RuntimeError("start_session was not called")
        return self.index

    def start_session(self, session_id: str) -> None:
        self._turn, self._last_input = 0, None
        self._fitter.start_session(session_id)
        self.compactor = TurnCompactor(
            self.config,
            self.client,
            window=self.setup.window,
            counter=self.setup.counter,
            infos=self.setup.infos,
        )
        self.index = MemoryContext(
            self.config,
            store_dir=self.setup.work_dir / "store",
            session_id=session_id,
            context_window_tokens=self.setup.window,
            embedder=shared_embedder(self.setup.embedding),
            clock=self.setup.clock,
        )

    def compact(self, transcript: Messages, tokens: int) -> Messages | None:
        if self.compactor is None:
            raise RuntimeError("start_session was not called")
        turn = self._turn
        self._turn += 1  # one turn per model call
        asked = tokens
        result = self.compactor.maybe_compact(
            transcript, turn=turn, last_input_tokens=self._last_input, estimated_tokens=tokens
        )
        self.counts["compaction_failures"] += result.failed
        replaced: Messages | None = None
        if result.compacted:
            archive_compacted(self._index(), result.to_index)
            replaced, tokens = result.messages, result.tokens_after
        # Still over the window: the provider refuses, and the overflow ladder runs. What
        # its compactions replace is indexed too, as after any compaction.
        return self.overflow.after_compaction(
            asked,
            transcript,
            replaced,
            tokens,
            archive=lambda dropped: archive_compacted(self._index(), dropped),
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
        index = self._index()
        index.wait_idle(_WAIT_S)
        counts: Mapping[str, Any] = index.stats().get("counts", {})
        self.counts["hook_failures"] += sum(
            int(v) for k, v in counts.items() if k.endswith("_failures")
        )
        if self.compactor is not None:
            self.guard_stats = self.compactor.stats()
        index.close()
        self.index = None

    def close(self) -> dict[str, float]:
        if self.index is not None:
            self.index.close()
            self.index = None
        return client_usage([self.client], self.counts["hook_failures"])
