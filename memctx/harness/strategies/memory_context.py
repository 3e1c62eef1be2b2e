"""The ``memory-context`` strategy: memctx's hooks inside an agent loop that compacts.

Before every call the agent sends ``MemoryContext.on_context(transcript)``. When the
transcript passes ``window - reserve`` with ``reserve = min(compaction.reserveTokensFloor,
window // 4)`` (OpenClaw's compaction reserve, capped so that small windows keep three
quarters for history), the agent compacts: the newest messages up to :data:`TAIL_SHARE` of
the window stay verbatim (:func:`tail_start` never separates a result from its call), the
older part goes to ``on_before_compact`` (archive + background extraction) and is replaced
by one ``[Context compacted] ...`` message written by the configured LLM
(``extractionModel``; ``memctx/offline`` by default) as a rolling summary: the previous
summary is part of what gets summarized. At the end of each session the rest of the
transcript goes to ``on_before_compact`` as the session-end hook, so later sessions can
recall it (``crossSession`` is switched on by the engine for multi-session scenarios).

Determinism: the engine's clock is passed to ``MemoryContext`` and every hook is followed by
``wait_idle()`` outside the timed section, so background embedding and extraction finish
before the next call and what a call recalls never depends on thread timing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

from memctx.config.model import MemoryContextConfig
from memctx.harness.strategies.base import (
    BaseStrategy,
    Messages,
    Prepared,
    StrategySetup,
    head_length,
    leading_blocks,
)
from memctx.llm.client import LLMClient, task_marker
from memctx.messages.anatomy import RoleKind, token_text
from memctx.messages.markers import COMPACTED_PREFIX, is_compaction_summary, is_recalled_block
from memctx.messages.pairing import repair_tool_pairing
from memctx.retrieval.embeddings import Embedder, make_embedder
from memctx.runtime.engine import MemoryContext

__all__ = [
    "TAIL_SHARE",
    "MemoryContextStrategy",
    "compaction_reserve",
    "shared_embedder",
    "tail_start",
]

# After a compaction the newest messages up to this share of the window stay verbatim.
TAIL_SHARE = 0.25
_WAIT_S = 600.0  # background work of one hook never takes this long; a hang fails loudly


_EMBEDDERS: dict[str, Embedder] = {}


def shared_embedder(kind: str) -> Embedder:
    """One embedder per kind per process (the transformer loads once; its cache is shared)."""
    if kind not in _EMBEDDERS:
        chosen: Literal["hash", "transformer"] = "transformer" if kind == "transformer" else "hash"
        _EMBEDDERS[kind] = make_embedder(chosen)
    return _EMBEDDERS[kind]


def compaction_reserve(config: MemoryContextConfig, window: int) -> int:
    """Tokens kept free by agent compaction: ``min(compaction.reserveTokensFloor, window//4)``."""
    return min(config.compaction.reserve_tokens_floor, window // 4)


def tail_start(transcript: Messages, head: int, budget: int, setup: StrategySetup) -> int:
    """Index of the first message of the verbatim tail kept by a compaction.

    The newest messages within ``budget`` tokens, extended backwards (never forwards, the
    latest request must stay) to the nearest message that is not a tool result, so that no
    kept result loses its call. Returns ``len(transcript)`` when nothing fits and no earlier
    boundary exists after ``head``.
    """
    count = setup.counter.count_message
    used = 0
    start = len(transcript)
    while start > head + 1:  # at least one message is left to compact
        size = count(transcript[start - 1])
        if used + size > budget:
            break
        used += size
        start -= 1
    while start < len(transcript) and start > head + 1:
        if not setup.infos.info(transcript[start]).has_tool_results:
            break
        start -= 1
    return start


class MemoryContextStrategy(BaseStrategy):
    """memctx's hooks in an agent loop that compacts (see the module docstring)."""

    name = "memory-context"
    searches = True

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        self.config = setup.config.with_overrides({"embeddingModel": setup.embedding})
        self.embedder = shared_embedder(setup.embedding)
        self.store = setup.work_dir / "store"
        # One extraction client for every session: one usage tally, one response cache in
        # the store (scanned for secrets like the rest of it).
        self.extractor = LLMClient(self.config.extraction_model, cache_dir=self.store / "llm-cache")
        # The agent's own summarizer: no disk cache (its prompts hold unredacted history).
        self.summarizer = LLMClient(self.config.extraction_model)
        self.reserve = compaction_reserve(self.config, setup.window)
        self.engine: MemoryContext | None = None
        self.failures = 0

    def _engine(self) -> MemoryContext:
        if self.engine is None:
            raise RuntimeError("start_session was not called")
        return self.engine

    def start_session(self, session_id: str) -> None:
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
        started = time.perf_counter()
        context = engine.on_context(transcript)
        latency = (time.perf_counter() - started) * 1000.0
        # Outside the timed hook: archiving/embedding queued by this call finishes before
        # the next one, so what the next call can recall never depends on thread timing.
        engine.wait_idle(_WAIT_S)
        kept = len(context) - leading_blocks(context, self.setup.infos)
        return Prepared(context, latency, kept < len(transcript), engine.recall_cap)

    def compact(self, transcript: Messages, tokens: int) -> Messages | None:
        window = self.setup.window
        if tokens <= window - self.reserve:
            return None
        infos = self.setup.infos
        head = head_length(transcript, infos)
        cut = tail_start(transcript, head, int(window * TAIL_SHARE), self.setup)
        old = transcript[head:cut]
        fresh = [m for m in old if not is_recalled_block(m) and not is_compaction_summary(m)]
        if not old or (not fresh and len(old) == 1):
            return None  # nothing new to compact: only the previous summary is old
        engine = self._engine()
        if fresh:
            engine.on_before_compact(fresh)
            engine.wait_idle(_WAIT_S)
        summary = {"role": "user", "content": f"{COMPACTED_PREFIX} {self._summarize(old)}"}
        return repair_tool_pairing([*transcript[:head], summary, *transcript[cut:]], cache=infos)

    def _summarize(self, old: Messages) -> str:
        """The compaction summary of ``old`` (a rolling summary: earlier ones are inputs)."""
        lines = []
        for message in old:
            kind = self.setup.infos.info(message).kind
            text = token_text(message).strip()
            if is_compaction_summary(message):
                lines.append(f"previous summary: {text.removeprefix(COMPACTED_PREFIX).strip()}")
            elif text:
                lines.append(f"{kind.value}: {text}")
        budget = min(self.config.compaction.max_summary_tokens, self.setup.window // 16)
        reply = self.summarizer.complete(
            [
                {"role": "system", "content": task_marker("summarize")},
                {
                    "role": "user",
                    "content": "Summarize this coding session so that the work can continue: "
                    "decisions, configuration, open tasks, files touched, errors.\n"
                    "<conversation>\n" + "\n".join(lines) + "\n</conversation>",
                },
            ],
            task="summarize",
            max_tokens=max(budget, 1),
        )
        return reply.text.strip()

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
        usage: dict[str, float] = {"hook_failures": float(self.failures)}
        for client in (self.extractor, self.summarizer):
            tally = client.usage()
            usage["prompt_tokens"] = usage.get("prompt_tokens", 0) + tally.prompt_tokens
            usage["completion_tokens"] = usage.get("completion_tokens", 0) + tally.completion_tokens
            usage["cost_usd"] = usage.get("cost_usd", 0.0) + tally.cost_usd
        return usage
