"""The ``masking-recall`` strategy: observation masking that forgets nothing, with no LLM call.

Observation masking is cheap and keeps the prompt cache, but what it hides is gone: a probe
about an old tool output finds a placeholder. memory-context recalls what it archived, but
compacts with a summary (an LLM call when the extraction model is one) and loses the cache
at every compaction. This strategy is the hybrid, built from the two existing parts:

1. **Masking** (:class:`~memctx.strategies.observation_masking.ObservationMaskingStrategy`):
   every tool output older than the last ``keepLast`` (10 by default) is replaced by its
   one-line placeholder. Each masked copy is built once and sent again, so the prefix stays
   cached.
2. **Archive what is masked**: each transcript message the masking hides goes whole to
   ``MemoryContext.on_before_compact`` the call it is masked (archived verbatim, redacted,
   facts mined by the configured extractor, ``memctx/offline`` by default: rules, no LLM).
3. **Fit and recall**: the masked context goes through ``MemoryContext.on_context``. While
   it fits, nothing is removed; the ``<recalled-context>`` block brings back what the archive
   holds that is relevant to the latest request (the masked outputs' originals are not in
   the context, so they are recallable), placed just before that request so the prefix stays
   cached. When masking alone no longer fits, the engine's smart trim drops messages
   (BM25 against the request, then oldest first, pairing repaired) and archives them, as it
   does for any agent: trim with archive and recall, never a summary. There is no
   compaction step (:meth:`compact` returns ``None``), so no summariser is built.
4. **Pinned rules and open tasks**: a user message that states a rule or a task ("never
   X", "always run Y", "make sure", "TODO", "still need to") is pinned: when the trim drops
   it, it is sent again verbatim (the same dict, so cached) after the system prompt, the
   newest pinned first within ``pinTokens`` (5 % of the window by default, kept out of the
   engine's window so the call still fits). Later revisions of a rule are later messages,
   so they stay pinned before the older ones are.

Everything else (store, recall settings, ``memory_search``, the session-end archive) is
``memory-context``'s, through :class:`~memctx.strategies.memory_context.MemoryContextStrategy`.
"""

from __future__ import annotations

import re
import time
from typing import Any

from memctx.messages import MessageInfo, RoleKind, leading_system_count

from .base import Messages, Prepared, StrategySetup
from .memory_context import MemoryContextStrategy
from .observation_masking import ObservationMaskingStrategy

__all__ = [
    "PIN_SHARE",
    "PIN_TOKENS_KEY",
    "TRIM_TARGET",
    "MaskingRecallStrategy",
    "parse_pin_tokens",
    "states_rule",
]

PIN_TOKENS_KEY = "pinTokens"  # ``masking-recall:pinTokens=2000``
PIN_SHARE = 0.05  # of the window, the pinned messages' default budget
# Past the limit, the kept messages are cut down to this share of it: a cut costs the cache
# once, and the next one comes only after half the limit of new messages.
TRIM_TARGET = 0.5

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
        ValueError: ``keepLast`` is negative, or ``pinTokens`` is negative or leaves the
            engine less than half the window.
    """

    name = "masking-recall"
    agent_compaction = False  # no summary: the engine trims, archives and recalls

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        self.masking = ObservationMaskingStrategy(setup)
        # Masked in batches of keepLast: the prefix changes once per keepLast outputs, not
        # at every call (each output leaving the last N would otherwise move it).
        self.masking.mask_every = max(1, self.masking.keep_last)
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

    def engine_window(self) -> int:
        return self.setup.window - self.pin_tokens  # the pinned messages' room kept out

    def start_session(self, session_id: str) -> None:
        super().start_session(session_id)
        self.masking.start_session(session_id)
        self._pinnable = {}
        self._cut = 0  # first transcript message kept after the system prompt
        self._cut_at = None  # the message there, to tell a new transcript

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
        kept = masked[:head] + masked[cut:]
        context = engine.on_context(kept)
        sent = {id(m) for m in context}
        trimmed = cut > head or not all(id(m) in sent for m in kept)
        context = self._with_pinned(transcript[head:], context, sent)
        latency += (time.perf_counter() - started) * 1000.0
        self._settle(engine)  # outside the timed hook, as memory-context does
        recovery = "masked old tool outputs (archived)"
        if trimmed:
            recovery += ", then dropped the oldest (archived)"
        return Prepared(context, latency, trimmed, engine.recall_cap, recovery=recovery)

    def _cut_to_fit(self, masked: Messages, head: int, limit: int) -> tuple[int, int]:
        """Where the kept messages start, and where they started at the previous call.

        While the masked messages fit ``limit`` the cut stays where it is. Past it, the
        oldest are dropped down to :data:`TRIM_TARGET` of the limit at once, not one
        message per call: every move of the cut changes the prefix and costs the prompt
        cache, so it moves seldom and far, as a compaction would. It stops before the
        latest user request (the engine trims further when even that does not fit) and
        never leaves a tool result whose call was dropped at the start.
        """
        cut = self._cut
        if not head <= cut < len(masked) or masked[cut] is not self._cut_at:
            cut = head  # a different transcript (or the first call): nothing dropped yet
        previous = cut
        count = self.setup.counter.count_message
        tokens = sum(map(count, masked[:head])) + sum(map(count, masked[cut:]))
        if tokens > limit:
            infos = self.setup.infos
            last = len(masked) - 1
            while last > cut and not _is_request(infos.info(masked[last])):
                last -= 1
            target = int(limit * TRIM_TARGET)
            while tokens > target and cut < last:
                tokens -= count(masked[cut])
                cut += 1
            while cut < last and infos.info(masked[cut]).has_tool_results:
                cut += 1  # a result whose call was dropped
        self._cut = cut
        self._cut_at = masked[cut] if cut < len(masked) else None
        return cut, previous

    def _with_pinned(self, history: Messages, context: Messages, sent: set[int]) -> Messages:
        """``context`` with the pinned user messages that were dropped (by the cut, or by the
        engine's trim) sent again after the system prompt, the newest first within
        :attr:`pin_tokens`, in the transcript's order."""
        if not self.pin_tokens:
            return context
        count = self.setup.counter.count_message
        budget = self.pin_tokens
        chosen: list[dict[str, Any]] = []
        for message in reversed(history):
            if id(message) in sent or not self._is_pinnable(message):
                continue
            tokens = count(message)
            if tokens <= budget:
                chosen.append(message)
                budget -= tokens
        if not chosen:
            return context
        head = leading_system_count(context, self.setup.infos)
        return context[:head] + chosen[::-1] + context[head:]

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
