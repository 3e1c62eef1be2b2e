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
4. **Pinned rules and open tasks**: a user message that states a rule or a task ("never
   X", "always run Y", "make sure", "TODO", "still need to") is pinned: when the cut drops
   it, it is sent again verbatim (the same dict, so cached) right after the system prompt,
   the newest pinned first within ``pinTokens`` (5 % of the window by default; the cut
   leaves that room, so the call still fits). A later revision of a rule is a later
   message, so it stays pinned before the older one does.

Everything else (store, recall settings, ``memory_search``, the session-end archive) is
``memory-context``'s, through :class:`~memctx.strategies.memory_context.MemoryContextStrategy`.
"""

from __future__ import annotations

import re
import time
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.messages import MessageInfo, RoleKind, leading_system_count

from .base import Messages, Prepared, StrategySetup
from .memory_context import MemoryContextStrategy
from .observation_masking import ObservationMaskingStrategy

__all__ = [
    "PIN_SHARE",
    "PIN_TOKENS_KEY",
    "MaskingRecallStrategy",
    "parse_pin_tokens",
    "states_rule",
]

PIN_TOKENS_KEY = "pinTokens"  # ``masking-recall:pinTokens=2000``
PIN_SHARE = 0.05  # of the window, the pinned messages' default budget

# Cue words of a standing instruction or an open task, not of a one-off request.
_RULE_CUES = re.compile(
    r"\b(?:never|always|must(?:n't| not)?|do not|don't|make sure|remember to|from now on|"
    r"going forward|under no circumstances|avoid|only ever|todo|to-do|still need|not yet|"
    r"next step|open task|remaining tasks?)\b",
    re.IGNORECASE,
)


def states_rule(text: str) -> bool:
    """Whether a user's text states a rule or an open task (a cue word says so)."""
    return _RULE_CUES.search(text) is not None


class MaskingRecallStrategy(MemoryContextStrategy):
    """Observation masking, with what it hides archived and recalled (module docstring).

    Args:
        setup: The run's window, config, store and caches; ``setup.params`` may hold
            ``keepLast`` (tool outputs sent verbatim) and ``pinTokens`` (the pinned
            messages' budget).

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
            pin_tokens = int(setup.window * PIN_SHARE)
        else:
            pin_tokens = given if isinstance(given, int) else parse_pin_tokens(str(given))
        if pin_tokens < 0 or pin_tokens > setup.window // 2:
            raise ValueError(
                f"pinTokens must be between 0 and half the window ({setup.window // 2}), "
                f"got {pin_tokens}"
            )
        self.pin_tokens = pin_tokens
        self._pinnable: dict[int, bool] = {}  # id of a transcript message -> it is pinnable
        self._cut = 0
        self._cut_at: dict[str, Any] | None = None
        self._pinned: Messages = []

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
        self._pinnable = {}
        self._cut = 0  # first transcript message kept after the system prompt
        self._cut_at = None  # the message there, to tell a new transcript
        self._pinned = []  # dropped user messages sent again, in the transcript's order

    def prepare(self, transcript: Messages) -> Prepared:
        engine = self._engine()
        started = time.perf_counter()
        masked, hidden = self.masking.mask(transcript)
        head = leading_system_count(masked, self.setup.infos)
        cut, previous = self._cut_to_fit(masked, head, engine.safe_limit)
        latency = (time.perf_counter() - started) * 1000.0
        # Archived (and settled, when the caller wants determinism) before this call's
        # search, so an output masked or dropped now is recallable now. Dropped messages go
        # whole (their masked outputs' originals are archived already and not stored twice).
        self.archive(hidden + transcript[previous:cut])
        started = time.perf_counter()
        kept = masked[:head] + self._pinned + masked[cut:]
        context = engine.on_context(kept)
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

    def _cut_to_fit(self, masked: Messages, head: int, limit: int) -> tuple[int, int]:
        """Where the kept messages start, and where they started at the previous call.

        While the system prompt, the pinned messages and the kept ones fit ``limit``
        (the engine's smart-trim limit, so the engine does not trim) the cut stays where
        it is. Past it, the oldest are dropped down to ``planner.cutToRatio`` of the limit,
        less the pinned messages' budget, at once, not one message per call: every move of
        the cut changes the prefix and costs the prompt cache, so it moves seldom and far,
        as a compaction would. It stops before the latest user request (the engine trims
        further when even that does not fit) and never leaves a tool result whose call
        was dropped at the start. The pinned messages are chosen again when it moves.
        """
        cut = self._cut
        if not head <= cut < len(masked) or masked[cut] is not self._cut_at:
            cut, self._pinned = head, []  # a new transcript (or the first call)
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
                cut += 1  # a result whose call was dropped
            self._pinned = self._pinned_of(masked[head:cut])
        self._cut = cut
        self._cut_at = masked[cut] if cut < len(masked) else None
        return cut, previous

    def _pinned_of(self, dropped: Messages) -> Messages:
        """The dropped user messages that state a rule or a task, the newest first within
        :attr:`pin_tokens`, in the transcript's order."""
        count = self.setup.counter.count_message
        budget = self.pin_tokens
        chosen: Messages = []
        for message in reversed(dropped):
            if budget > 0 and self._is_pinnable(message):
                tokens = count(message)
                if tokens <= budget:
                    chosen.append(message)
                    budget -= tokens
        return chosen[::-1]

    def _is_pinnable(self, message: dict[str, Any]) -> bool:
        key = id(message)
        known = self._pinnable.get(key)
        if known is None:
            info = self.setup.infos.info(message)
            known = _is_request(info) and states_rule(info.text)
            self._pinnable[key] = known
        return known


def _is_request(info: MessageInfo) -> bool:
    """A message the user wrote (not a tool result carried in a user message)."""
    return info.kind is RoleKind.USER and not info.tool_result_ids and not info.tool_call_ids


def parse_pin_tokens(text: str) -> int:
    """``pinTokens`` from the strategy's name (``masking-recall:pinTokens=2000``)."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError("want an integer >= 0 (tokens for pinned rules and tasks)") from None
    if value < 0:
        raise ValueError("want an integer >= 0 (tokens for pinned rules and tasks)")
    return value
