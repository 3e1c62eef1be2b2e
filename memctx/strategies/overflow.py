"""Seed 001's overflow recovery for the compacting strategies.

An agent whose history no longer fits the window (one tool output larger than the window
itself, a compaction the loop guard deferred) sends it, and the provider refuses: ``prompt
is too long: 207547 tokens > 200000 maximum``. The strategy knows the window, so it does not
wait for the refusal: :class:`OverflowRecoverer` raises it itself before the call
(:class:`ProviderRefusal`, which :func:`memctx.compaction.is_context_overflow_error`
recognises like the real message) and climbs seed 001's ladder with
:func:`memctx.compaction.recover_from_overflow`: compact (up to three times, with a smaller
verbatim tail each time), then cut the oversized tool results, then give up with a
:class:`~memctx.compaction.ContextOverflowError` that says what the user can do. The path
taken is reported with the call (``Prepared.recovery``), so ``memctx replay`` can print it.

``openclaw``, ``meerkat`` and ``memory-context`` use it; ``truncate`` and
``observation-masking`` have no LLM and recover by dropping, ``full`` does not recover.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from memctx.compaction import (
    CompactionSetup,
    ContextOverflowError,
    archivable,
    describe_recovery_steps,
    recover_from_overflow,
)

from .base import Messages, Prepared

__all__ = ["OverflowRecoverer", "ProviderRefusal", "with_recovery"]


class ProviderRefusal(Exception):
    """What a provider raises for a prompt over the window (Anthropic's wording)."""

    def __init__(self, tokens: int, window: int) -> None:
        super().__init__(f"prompt is too long: {tokens} tokens > {window} maximum")


class OverflowRecoverer:
    """Recovers a transcript over the window the way seed 001's agent loop does.

    Args:
        compaction: What the recovery compactions run with: the client that writes their
            summaries, the config (``compaction`` gives the reserve, ratios and margin), the
            window, the counter and the anatomy cache.

    Attributes:
        path: How the last recovery went (``"compacted x1"``, ``"compacted x3, truncated 1
            tool result of 450,000 chars"``, or why it failed); ``""`` before any.
        call_path: How the current call's transcript was fitted (:meth:`after_compaction`).
        recoveries: Recoveries that brought a transcript under the window.
        failures: Recoveries that could not (the caller falls back to dropping).
    """

    def __init__(self, compaction: CompactionSetup):
        self.compaction = compaction
        self.path = ""
        self.call_path = ""
        self.recoveries = 0
        self.failures = 0

    def _send(self, messages: Messages) -> int:
        window = self.compaction.window
        tokens = self.compaction.counter.count_messages(messages)
        if tokens > window:
            raise ProviderRefusal(tokens, window)
        return tokens

    def recover(self, transcript: Messages, tokens: int) -> Messages | None:
        """The transcript to continue with when ``tokens`` exceed the window, else ``None``
        (also ``None`` when recovery failed: :attr:`path` says why)."""
        if tokens <= self.compaction.window:
            return None
        try:
            recovered = recover_from_overflow(transcript, self.compaction, self._send)
        except ContextOverflowError as exc:
            self.failures += 1
            done = describe_recovery_steps(exc.steps) if exc.steps else "no step that helped"
            self.path = f"overflow recovery failed after {done}"
            return None
        self.recoveries += 1
        self.path = f"overflow recovery: {recovered.path}"
        return recovered.messages

    def after_compaction(
        self,
        asked: int,
        transcript: Messages,
        compacted: Messages | None,
        tokens: int,
        *,
        archive: Callable[[Messages], None] | None = None,
    ) -> Messages | None:
        """The step a compacting strategy runs after its threshold compaction.

        Sets :attr:`call_path`: how this call's transcript was brought under the window, empty
        unless ``asked`` exceeded it (what the strategy's next :meth:`prepare` reports).

        Args:
            asked: Tokens of the transcript the call began with.
            transcript: That transcript.
            compacted: The threshold compaction's result, or ``None`` when it did not run.
            tokens: Tokens of the transcript now (after the compaction, if any).
            archive: Receives what the recovery's compactions replaced (``None``: nothing
                is kept). A cut tool result's original goes too: the search can still find
                what the cut left out.

        Returns:
            The transcript to continue with, or ``None`` when nothing changed.
        """
        current = compacted if compacted is not None else transcript
        recovered = self.recover(current, tokens)
        steps = ["compacted past the threshold"] if compacted is not None else []
        window = self.compaction.window
        if tokens > window:
            steps.append(self.path)
        self.call_path = ", then ".join(steps) if asked > window else ""
        if recovered is None:
            return compacted
        if archive is not None:
            kept = {id(m) for m in recovered}
            archive([m for m in archivable(current) if id(m) not in kept])
        return recovered


def with_recovery(prepared: Prepared, earlier: str) -> Prepared:
    """``prepared`` with the path of the recovery before it (``earlier``) put first."""
    if not earlier:
        return prepared
    path = f"{earlier}, then {prepared.recovery}" if prepared.recovery else earlier
    return dataclasses.replace(prepared, recovery=path)
