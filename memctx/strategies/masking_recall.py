"""The ``masking-recall`` strategy: observation masking that forgets nothing, with no LLM call.

Observation masking is cheap and keeps the prompt cache, but what it hides is gone: a probe
about an old tool output finds a placeholder. memory-context recalls what it archived, but
compacts with a summary (an LLM call when the extraction model is one) and loses the cache
at every compaction. This strategy is the hybrid, built from the two existing parts:

1. **Masking** (:class:`~memctx.strategies.observation_masking.ObservationMaskingStrategy`):
   every tool output older than the last ``keepLast`` (10 by default) is replaced by its
   one-line placeholder, in batches: between ``keepLast / 2`` and ``keepLast`` outputs stay
   verbatim (never more than observation-masking sends), and the older ones are masked
   ``keepLast / 2`` at a time. Each masking moves the prefix, so it moves once per batch
   instead of at every call. Each masked copy is built once and sent again.
2. **Archive what is masked**: each transcript message the masking hides goes whole to
   ``MemoryContext.on_before_compact`` the call it is masked (archived verbatim, redacted,
   facts mined by the configured extractor, ``memctx/offline`` by default: rules, no LLM).
3. **Fit and recall**: while the masked context fits ``window - reserveTokens`` (the
   history budget observation-masking has) nothing is removed. Past it, the oldest
   messages are dropped at once down to ``planner.cutToRatio`` of it (0.8, the cut the
   token-budget planner makes for the same reason) and archived whole: a cut moves the
   prefix, so it moves seldom and far, like a compaction, but without a summary. The rest
   goes through ``MemoryContext.on_context``, whose ``<recalled-context>`` block brings back
   what the archive holds that is relevant to the latest request (the masked outputs'
   originals are not in the context, so they are recallable), placed just before that
   request so the prefix stays cached. The block's room (the recall cap) comes out of the
   reply's reserve (:meth:`MaskingRecallStrategy.engine_config`), so a call never exceeds
   the window. When even the latest request and its turn do not fit, the engine's smart
   trim drops more (BM25 against the request, then oldest first, pairing repaired) and
   archives it, as for any agent. There is no compaction step (:meth:`compact` returns
   ``None``), so no summariser is built and no LLM is called for the context.
4. **The state of what was dropped, pinned**: when the cut moves, the messages it drops
   (whole, not masked) and the previous snapshot are read by
   :func:`memctx.offline.state_snapshot`, the structured summary ``memctx/offline`` writes
   without a model (rules, decisions, open and done tasks, the work in progress, files and
   the last action on each, errors and fixes, commands and results, key values), newest
   state winning. It is sent as one ``[Context compacted]`` message right after the system
   prompt, within ``pinTokens`` (15 % of the window, at most ``compaction.maxSummaryTokens``;
   the cut leaves that room; when the turn since the latest request is longer than the
   cut can reach, the engine's smart trim makes room around it, the snapshot protected),
   the same dict until the cut moves
   again, so it stays in the cached prefix. It is what a compaction summary would keep, at
   no model call: rules and open tasks survive the cut, and questions about the artifact
   trail or the step in progress find their answer without a search.

Everything else (store, recall settings, ``memory_search``, the session-end archive) is
``memory-context``'s, through :class:`~memctx.strategies.memory_context.MemoryContextStrategy`.
"""

from __future__ import annotations

import time
from typing import Any

from memctx.compaction import render_messages, summary_message, with_previous_summary
from memctx.config import MemoryContextConfig
from memctx.messages import MessageInfo, RoleKind, leading_system_count
from memctx.offline import state_snapshot

from .base import Messages, Prepared, StrategySetup
from .memory_context import MemoryContextStrategy
from .observation_masking import ObservationMaskingStrategy

__all__ = [
    "PIN_SHARE",
    "PIN_TOKENS_KEY",
    "MaskingRecallStrategy",
    "parse_pin_tokens",
]

PIN_TOKENS_KEY = "pinTokens"  # ``masking-recall:pinTokens=2000``
PIN_SHARE = 0.15  # of the window, the pinned snapshot's default budget
_FRAME_TOKENS = 16  # the summary message's prefix and the message's own overhead


class MaskingRecallStrategy(MemoryContextStrategy):
    """Observation masking, with what it hides archived and recalled (module docstring).

    Args:
        setup: The run's window, config, store and caches; ``setup.params`` may hold
            ``keepLast`` (tool outputs sent verbatim) and ``pinTokens`` (the pinned
            snapshot's budget).

    Raises:
        ValueError: ``keepLast`` is negative, or ``pinTokens`` is negative or more than
            half the window.
    """

    name = "masking-recall"
    agent_compaction = False  # no summary: the engine trims, archives and recalls

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        # Never more verbatim outputs than observation-masking sends (keepLast), and masked
        # in batches: between keepLast/2 and keepLast stay verbatim, so the prefix changes
        # once per keepLast/2 outputs, not at every call.
        keep_last = ObservationMaskingStrategy(setup).keep_last  # parses keepLast
        self.keep_last = keep_last
        self.masking = ObservationMaskingStrategy(
            setup, keep_last=(keep_last + 1) // 2, mask_every=max(1, keep_last // 2)
        )
        given = setup.params.get(PIN_TOKENS_KEY)
        if given is None:
            # What a compaction summary may take, and no more than a share of small windows.
            pin_tokens = min(
                int(setup.window * PIN_SHARE), self.config.compaction.max_summary_tokens
            )
        else:
            pin_tokens = given if isinstance(given, int) else parse_pin_tokens(str(given))
        if pin_tokens < 0 or pin_tokens > setup.window // 2:
            raise ValueError(
                f"pinTokens must be between 0 and half the window ({setup.window // 2}), "
                f"got {pin_tokens}"
            )
        self.pin_tokens = pin_tokens
        self._cut = 0
        self._cut_at: dict[str, Any] | None = None
        self._pinned: Messages = []
        self._state = ""  # the state snapshot of the dropped messages

    def engine_config(self) -> MemoryContextConfig:
        """The engine's reply reserve less the recall cap: its smart-trim limit is then
        ``window - reserveTokens``, the history budget observation-masking has, and the
        recall block, when the history fills it, takes its room out of the reply's
        reserve (as memory-context's block does when the kept messages exceed the limit)."""
        config = self.config
        cap = config.recall_cap_tokens(self.setup.window)
        reserve = max(0, config.reserve_tokens - cap)
        return config.with_overrides({"reserveTokens": reserve})

    def start_session(self, session_id: str) -> None:
        super().start_session(session_id)
        self.masking.start_session(session_id)
        self._cut = 0  # first transcript message kept after the system prompt
        self._cut_at = None  # the message there, to tell a new transcript
        self._pinned = []  # the snapshot message sent after the system prompt
        self._state = ""

    def prepare(self, transcript: Messages) -> Prepared:
        engine = self._engine()
        started = time.perf_counter()
        masked, hidden = self.masking.mask(transcript)
        head = leading_system_count(masked, self.setup.infos)
        cut, previous = self._cut_to_fit(transcript, masked, head, engine.safe_limit)
        latency = (time.perf_counter() - started) * 1000.0
        # Archived (and settled, when the caller wants determinism) before this call's
        # search, so an output masked or dropped now is recallable now. Dropped messages go
        # whole (their masked outputs' originals are archived already and not stored twice).
        self.archive(hidden + transcript[previous:cut])
        started = time.perf_counter()
        kept = masked[:head] + self._pinned + masked[cut:]
        context = engine.on_context(kept)
        count = self.setup.counter.count_message
        over = sum(map(count, context)) - self.setup.window
        if over > 0 and self._pinned:
            # The snapshot keeps its budget through a long turn and the engine trims around
            # it; when even that leaves the call over the window (what the engine may not
            # drop is that long), this call's snapshot gives up the excess, once.
            shown = self._state_within(count(self._pinned[0]) - over)
            pinned = [summary_message(shown)] if shown else []
            context = engine.on_context(masked[:head] + pinned + masked[cut:])
        latency += (time.perf_counter() - started) * 1000.0
        self._settle(engine)  # outside the timed hook, as memory-context does
        trimmed = cut > head
        if not trimmed:
            sent = {id(m) for m in context}
            trimmed = not all(id(m) in sent for m in kept)
        recovery = "masked old tool outputs (archived)"
        if trimmed:
            recovery += ", then dropped the oldest (archived)"
        return Prepared(context, latency, trimmed, engine.recall_cap, recovery=recovery)

    def _cut_to_fit(
        self, transcript: Messages, masked: Messages, head: int, limit: int
    ) -> tuple[int, int]:
        """Where the kept messages start, and where they started at the previous call.

        While the system prompt, the pinned snapshot and the kept messages fit ``limit``
        (the engine's smart-trim limit, so the engine does not trim) the cut stays where
        it is. Past it, the oldest are dropped down to ``planner.cutToRatio`` of the limit,
        less the snapshot's budget, at once, not one message per call: every move of
        the cut changes the prefix and costs the prompt cache, so it moves seldom and far,
        as a compaction would. It stops before the latest user request (the engine trims
        further when even that does not fit) and never leaves a tool result whose call
        was dropped at the start. The snapshot is written again when it moves.
        """
        cut = self._cut
        if not head <= cut < len(masked) or masked[cut] is not self._cut_at:
            cut, self._pinned, self._state = head, [], ""  # a new transcript, or the first call
        previous = cut
        count = self.setup.counter.count_message
        tokens = sum(map(count, masked[:head])) + sum(map(count, masked[cut:]))
        if tokens + sum(map(count, self._pinned)) > limit:
            infos = self.setup.infos
            last = len(masked) - 1
            while last > cut and not _is_request(infos.info(masked[last])):
                last -= 1
            target = int(limit * self.config.planner.cut_to_ratio) - self.pin_tokens
            while tokens > target and cut < last:
                tokens -= count(masked[cut])
                cut += 1
            while cut < last and infos.info(masked[cut]).has_tool_results:
                tokens -= count(masked[cut])
                cut += 1  # a result whose call was dropped
            # The snapshot keeps its whole budget even when the cut could not reach its
            # target (the turn since the latest request is that long): the engine's smart
            # trim then brings the kept messages under the limit (the snapshot is protected
            # there, as a compaction summary is, and what it drops is archived). Shrinking
            # the snapshot to the room left instead lost the rules and open tasks for as
            # long as such a turn lasted (generated rules suite, seed 2: 85 -> 96 %).
            self._pinned = self._pinned_of(transcript[previous:cut])
        self._cut = cut
        self._cut_at = masked[cut] if cut < len(masked) else None
        return cut, previous

    def _pinned_of(self, dropped: Messages) -> Messages:
        """The state snapshot of everything dropped so far, as one message of at most
        :attr:`pin_tokens`: the previous snapshot and the messages dropped now (whole, not
        masked), read by :func:`memctx.offline.state_snapshot`, so the newest state wins."""
        infos = self.setup.infos
        text = render_messages(infos.info(m) for m in dropped)
        if self._state:
            text = with_previous_summary(text, self._state)
        self._state = self._snapshot(text, self.pin_tokens)
        return [summary_message(self._state)] if self._state else []

    def _state_within(self, tokens: int) -> str:
        """The current state snapshot cut to ``tokens``: the snapshot reads its own text
        back (as the state before an empty stretch of conversation) and keeps what ranks
        first, the rules and open tasks, as any smaller snapshot does."""
        return self._snapshot(with_previous_summary("", self._state), tokens)

    def _snapshot(self, text: str, tokens: int) -> str:
        """:func:`state_snapshot` whose message the counter puts within ``tokens`` (its
        estimate and the counter differ slightly: the budget shrinks until it fits)."""
        count = self.setup.counter.count_message
        budget = tokens - _FRAME_TOKENS
        while budget > 0:
            state = state_snapshot(text, budget)
            if not state or count(summary_message(state)) <= tokens:
                return state
            budget -= max(1, budget // 10)
        return ""


def _is_request(info: MessageInfo) -> bool:
    """A message the user wrote (not a tool result carried in a user message)."""
    return info.kind is RoleKind.USER and not info.tool_result_ids and not info.tool_call_ids


def parse_pin_tokens(text: str) -> int:
    """``pinTokens`` from the strategy's name (``masking-recall:pinTokens=2000``)."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError("want an integer >= 0 (tokens for the pinned state snapshot)") from None
    if value < 0:
        raise ValueError("want an integer >= 0 (tokens for the pinned state snapshot)")
    return value
