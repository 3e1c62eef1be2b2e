"""The ``openclaw`` strategy: seed 001's compaction with the memory flush and memory files.

How OpenClaw manages a coding agent's context, as seeds 001 and 003 describe it, with no
memctx recall:

- **Memory flush.** When the transcript reaches ``window - reserve - softThreshold`` and has
  not been flushed in this compaction cycle, a silent turn asks ``extractionModel`` for
  durable notes and appends them to ``memory/YYYY-MM-DD.md`` in the workspace
  (:mod:`memctx.compaction.flush`); the turn never enters the transcript.
- **Compaction.** Past ``window - reserve`` the agent compacts
  (:class:`memctx.compaction.AgentCompactor`: staged summaries, fallback ladder, rolling
  previous summary, the ``compaction.mode`` safeguard sections when configured); the
  discarded messages are gone, except what the flush wrote down.
- **Pruning** (seed 003's ``contextPruning``; this strategy's own default mode is
  ``cache-ttl``, as the seed's example sets it, where the config does not set one): old tool
  results are soft-trimmed or cleared in the copy sent once the prompt cache has gone cold,
  and the same pruned copies are sent while it is warm (:class:`memctx.trim.PruningSession`).
  The harness clock advances one minute per call, so with the default 5-minute TTL it runs
  only when a session starts; ``contextPruning.ttl=1m`` prunes before every call, and
  ``openclaw:pruning=off`` (or ``contextPruning.mode=off``) turns it off.
- **Recall** only through the ``memory_search`` tool over the memory files
  (:class:`memctx.store.MemoryFiles`; the harness models it as the agent calling it with the
  probe's question): OpenClaw injects nothing by itself.

The workspace (``<store>/workspace``) is shared by the sessions of one agent, so a later
session can search what an earlier one flushed. When a call would still exceed the window
(one huge tool output, a compaction the loop guard deferred), the provider would refuse it
and seed 001's overflow ladder runs (:mod:`.overflow`: compact up to three times, then cut
oversized tool results); if that fails too, the oldest messages are dropped as
:class:`~.truncate.TruncateStrategy` drops them and the call is marked as trimmed: no call
over the window is ever sent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import ClassVar

from memctx.compaction import AgentCompactor, CompactionSetup, FlushTracker, run_flush
from memctx.llm import LLMClient
from memctx.retrieval import make_embedder
from memctx.store import MemoryFiles
from memctx.trim import PruningSession

from .base import BaseStrategy, Messages, Prepared, StrategySetup, llm_usage
from .overflow import OverflowRecoverer, with_recovery
from .truncate import TruncateStrategy, send_whole

__all__ = ["OpenClawStrategy"]


class OpenClawStrategy(BaseStrategy):
    """Seed 001's compaction + flush + memory files (see the module docstring).

    Args:
        setup: Window, config, store directory and shared caches.
    """

    name = "openclaw"
    searches = True  # memory_search ranks with the embedder
    # Seed 003's example.
    config_defaults: ClassVar[Mapping[str, object]] = {"contextPruning.mode": "cache-ttl"}

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        # No disk cache: the summariser's prompts hold the unredacted history.
        self.client = LLMClient(self.config.extraction_model)
        self.compaction = CompactionSetup(
            client=self.client,
            config=self.config,
            window=setup.window,
            counter=setup.counter,
            infos=setup.infos,
        )
        self.compactor = AgentCompactor(self.compaction)
        self.memory = MemoryFiles(
            setup.store_dir / "workspace",
            embedder=setup.embedder
            or make_embedder(self.config.embedding_model, model=self.config.transformer_model),
            clock=setup.clock,
            config=self.config.memory_search,
        )
        self._fitter = TruncateStrategy(self.setup)
        self.overflow = OverflowRecoverer(self.compaction)
        self.pruning = PruningSession(self.config.context_pruning, setup.window, infos=setup.infos)
        self._flush: FlushTracker | None = None
        self._turn = 0  # model calls of the session, for the compactor's loop guard
        self.counts = {
            "flushes": 0,
            "compaction_failures": 0,
            "over_window_calls": 0,
            "prunings": 0,
        }

    def start_session(self, session_id: str) -> None:
        self._turn = 0
        self.compactor.guard.reset()  # turns count from 0 again
        self._fitter.start_session(session_id)
        self.pruning.reset()
        # One compaction cycle counter per session, kept beside the workspace.
        self._flush = FlushTracker(
            self.setup.store_dir / "flush" / session_id, store_dir=self.setup.store_dir
        )

    def compact(self, transcript: Messages, tokens: int | None = None) -> Messages | None:
        if self._flush is None:
            raise RuntimeError(f"{self.name}: start_session() was not called")
        tokens = self.count(transcript, tokens)
        if self._flush.check(tokens, self.setup.window, self.config).flush:
            at = self.setup.clock()
            now = dt.datetime.fromtimestamp(at, tz=dt.UTC)
            flushed = run_flush(transcript, self.compaction, self.memory, now)
            if flushed.ran:  # a failed call is retried at the next turn
                self._flush.note_flush(at)
                self.counts["flushes"] += 1
        turn = self._turn
        self._turn += 1  # one turn per model call
        asked = tokens
        before = self.compactor.failures
        result = self.compactor.maybe_compact(transcript, tokens, turn=turn)
        self.counts["compaction_failures"] += self.compactor.failures - before
        replaced: Messages | None = None
        if result is not None:
            self._flush.note_compaction(tokens)
            replaced, tokens = result.messages, result.tokens_after
        # Still over the window (one huge tool output, a deferred compaction): the provider
        # refuses the call, and seed 001's overflow ladder runs.
        final = self.overflow.after_compaction(asked, transcript, replaced, tokens)
        if final is not replaced:  # the ladder compacted (or cut) too: a new cycle
            self._flush.note_compaction(tokens)
        return final

    def prepare(self, transcript: Messages) -> Prepared:
        pruned = self.pruning.apply(transcript, self.setup.clock())
        if pruned.pruned_now:
            self.counts["prunings"] += 1
        prepared, whole = send_whole(self.setup, pruned.messages, self._fitter)
        self.counts["over_window_calls"] += whole is None
        return with_recovery(prepared, self.overflow.call_path)

    def search(self, query: str) -> list[str] | None:
        return [hit.text for hit in self.memory.search(query, limit=5)]

    def close(self) -> dict[str, float]:
        return llm_usage([self.client])
