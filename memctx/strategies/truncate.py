"""The ``truncate`` strategy: drop the oldest messages until the rest fits.

Also the fallback of every strategy that sends its whole history and relies on its own
compaction to keep it under the window (:func:`send_whole`): when that fails (one tool output
larger than the window, a compaction its loop guard deferred), the oldest messages are
dropped exactly as ``truncate`` drops them, so no call the provider would refuse is sent.
"""

from __future__ import annotations

import time

from memctx.messages import leading_system_count

from .base import BaseStrategy, Messages, Prepared, StrategySetup

__all__ = ["TruncateStrategy", "send_whole"]


class TruncateStrategy(BaseStrategy):
    """Drop the oldest messages until the rest fits ``window - reserveTokens``.

    Leading system messages are always kept. The kept part is the longest suffix of the
    history that fits, then cut forward past tool results whose call fell off (the pairing
    repair a drop-oldest agent needs), so the context may be a little under the budget.

    An agent only appends to its history, so the cut is found with two pointers: each call
    adds the new messages' tokens and moves the start forward, O(1) amortized, instead of
    re-walking the kept messages (a history that is not an extension of the previous one is
    measured from scratch).
    """

    name = "truncate"

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        self._seen: Messages = []  # the previous history's messages (shallow copy)
        self._start = 0  # first kept index of it
        self._used = 0  # tokens of history[start:]

    def start_session(self, session_id: str) -> None:
        self._seen, self._start, self._used = [], 0, 0

    def prepare(self, transcript: Messages) -> Prepared:
        started = time.perf_counter()
        setup = self.setup
        count = setup.counter.count_message
        head = leading_system_count(transcript, setup.infos)
        budget = setup.window - setup.config.reserve_tokens - sum(map(count, transcript[:head]))
        seen = len(self._seen)
        extends = (
            seen <= len(transcript)
            and self._start >= head
            and (seen == 0 or transcript[seen - 1] is self._seen[-1])
            and (self._start >= seen or transcript[self._start] is self._seen[self._start])
        )
        if not extends:
            seen, self._start, self._used = head, head, 0
        start, used = max(self._start, head), self._used
        used += sum(map(count, transcript[max(seen, head) :]))
        while used > budget and start < len(transcript):
            used -= count(transcript[start])
            start += 1
        # A harness probe's question is remembered too; the next history then does not
        # extend this one and is measured from scratch (probes are few).
        self._seen, self._start, self._used = list(transcript), start, used
        cut = start
        infos = setup.infos
        while cut < len(transcript) and cut > head and infos.info(transcript[cut]).has_tool_results:
            cut += 1  # a result whose call was dropped
        latency = (time.perf_counter() - started) * 1000.0
        if cut == head:
            return Prepared(list(transcript), latency)
        dropped = "dropped the oldest messages"
        return Prepared(transcript[:head] + transcript[cut:], latency, True, recovery=dropped)


def send_whole(
    setup: StrategySetup, transcript: Messages, fitter: TruncateStrategy
) -> tuple[Prepared, int | None]:
    """An agent that sends its whole history (its own compaction keeps it under the
    window): as it is while it fits the window, else ``fitter``'s cut, so no call the
    provider would refuse is sent. memctx's ``reserveTokens`` is memctx's own trim budget,
    not such an agent's. Returns the call and the tokens it sent whole, ``None`` when it had
    to be cut."""
    started = time.perf_counter()
    tokens = setup.counter.count_messages(transcript)
    if tokens <= setup.window:
        return Prepared(list(transcript), (time.perf_counter() - started) * 1000.0), tokens
    fitted = fitter.prepare(transcript)
    latency = (time.perf_counter() - started) * 1000.0
    return Prepared(fitted.context, latency, fitted.trimmed, recovery=fitted.recovery), None
