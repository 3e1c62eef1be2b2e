"""The ``observation-masking`` strategy: the last N tool outputs verbatim, older ones masked.

The baseline every context-management design must beat: on SWE-bench Verified, plain
observation masking matched LLM summarisation's solve rate at about half the cost of no
management (JetBrains, "The Complexity Trap", 2025). Before every call each tool output older
than the last ``keepLast`` (10 by default; ``observation-masking:keepLast=5`` sets it) is
replaced by one line naming the tool and the size, ``[output of bash omitted: 12,345 chars]``;
everything else is sent as it is. No LLM, no search, no compaction.

- Every provider shape: OpenAI ``role: tool`` and Pi ``toolResult`` messages, Anthropic
  ``tool_result`` blocks, Gemini ``functionResponse`` parts. Each tool result block is one
  output (three parallel calls are three). Only the payload is replaced: ids, names and error
  flags stay, so pairing is exactly the transcript's. The caller's dicts are never modified:
  a masked message is a copy, sharing everything but the containers on the way to the payload.
- An output no longer than its placeholder stays verbatim: masking it would save nothing.
- Cached prefix: an agent only appends, so an output leaves the last N once and stays masked;
  its masked copy is built once and sent again (the same dict) at every later call, and the
  context changes only from the output masked last. The ledger prices the rest as cache reads.
- Window: when even the masked context exceeds ``window - reserveTokens``, the oldest
  messages are dropped by :class:`~memctx.strategies.truncate.TruncateStrategy` itself,
  so no call is sent over the window.

The work per call is proportional to the new messages (and the outputs newly masked): the
masked context is kept between calls and only extended, as ``truncate`` keeps its cut.
"""

from __future__ import annotations

import operator
import time
from typing import Any

from memctx.messages import BlockKind, BlockRef, with_tool_result_text

from .base import BaseStrategy, Messages, Prepared, StrategySetup
from .truncate import TruncateStrategy

__all__ = [
    "DEFAULT_KEEP_LAST",
    "KEEP_LAST_KEY",
    "ObservationMaskingStrategy",
    "masked_placeholder",
    "parse_keep_last",
]

DEFAULT_KEEP_LAST = 10
KEEP_LAST_KEY = "keepLast"  # the setting's key: ``observation-masking:keepLast=5``


def masked_placeholder(tool: str | None, chars: int) -> str:
    """The line that replaces an output: ``[output of bash omitted: 12,345 chars]``.

    Thousands are always grouped, so the line never holds a run of more than three digits
    and cannot pass for a port, an issue number or any other numeric answer a probe expects.
    """
    return f"[output of {tool or 'a tool'} omitted: {chars:,} chars]"


class ObservationMaskingStrategy(BaseStrategy):
    """Keep the last ``keep_last`` tool outputs verbatim; mask older ones (module docstring).

    Args:
        setup: The run's window, config and shared caches.
        keep_last: Tool outputs sent verbatim; ``None`` takes ``setup.params["keepLast"]``,
            else :data:`DEFAULT_KEEP_LAST`.
        mask_every: Outputs masked together: masking waits until this many have left the
            last ``keep_last`` (1, the published design: one at a time). Each masking changes
            the prefix, so a larger batch keeps the prompt cache longer, at the price of up
            to ``mask_every - 1`` more verbatim outputs.

    Raises:
        ValueError: ``keep_last`` is negative or ``mask_every`` below 1.
    """

    name = "observation-masking"

    def __init__(
        self, setup: StrategySetup, *, keep_last: int | None = None, mask_every: int = 1
    ) -> None:
        super().__init__(setup)
        if keep_last is None:
            given = setup.params.get(KEEP_LAST_KEY, DEFAULT_KEEP_LAST)
            keep_last = given if isinstance(given, int) else parse_keep_last(str(given))
        if keep_last < 0:
            raise ValueError(f"keepLast must be an integer >= 0, got {keep_last}")
        if mask_every < 1:
            raise ValueError(f"mask_every must be an integer >= 1, got {mask_every}")
        self.keep_last = keep_last
        self.mask_every = mask_every
        # Over the budget, truncate's own code drops the oldest messages.
        self._fitter = TruncateStrategy(setup)
        self._reset()

    def _reset(self) -> None:
        self._source: Messages = []  # the transcript messages seen, as given
        self._out: Messages = []  # what each is sent as: itself, or its masked copy
        self._outputs: list[tuple[int, BlockRef]] = []  # every tool output: (message, block)
        self._passed = 0  # leading outputs that left the last N (masked, or too short to)
        self._names: dict[str, str] = {}  # call id -> tool name (Anthropic results lack it)
        self._tokens = 0  # tokens of self._out
        self._fitted = False  # the fitter's incremental state matches self._out

    def start_session(self, session_id: str) -> None:
        self._reset()
        self._fitter.start_session(session_id)

    def mask(self, transcript: Messages) -> tuple[Messages, Messages]:
        """``transcript`` with its old outputs masked (each masked copy built once and sent
        again at every later call), and the transcript messages this call masked: a strategy
        that archives what it hides (``masking-recall``) hands those over whole."""
        self._follow(transcript)
        masked = self._mask()
        return list(self._out), masked

    def prepare(self, transcript: Messages) -> Prepared:
        started = time.perf_counter()
        context, _ = self.mask(transcript)
        if self._tokens <= self.setup.window - self.setup.config.reserve_tokens:
            self._fitted = False  # the fitter did not see this context
            latency = (time.perf_counter() - started) * 1000.0
            return Prepared(context, latency, recovery="masked old tool outputs")
        if not self._fitted:
            # Truncate's two pointers assume the context only grew since its last call; a
            # masked message inside its kept part would leave its token sum stale.
            self._fitter.start_session("")
        fitted = self._fitter.prepare(context)
        self._fitted = True
        latency = (time.perf_counter() - started) * 1000.0
        recovery = "masked old tool outputs"
        if fitted.recovery:
            recovery += f", then {fitted.recovery}"
        return Prepared(fitted.context, latency, fitted.trimmed, recovery=recovery)

    def _follow(self, transcript: Messages) -> None:
        """Bring the state to ``transcript``: keep the shared start, add the new messages."""
        source = self._source
        same = min(len(source), len(transcript))
        # An agent only appends; a probe's question is one extra message that the next
        # call no longer has. Walk back to the last message both share, then make sure
        # everything before it is shared too (identity, compared in C).
        while same and transcript[same - 1] is not source[same - 1]:
            same -= 1
        if same and not all(map(operator.is_, transcript[:same], source[:same])):
            same = 0
        if same < len(source):
            if self._outputs and self._outputs[-1][0] >= same:
                self._reset()  # outputs disappeared: a different transcript, start over
            else:
                count = self.setup.counter.count_message
                self._tokens -= sum(map(count, self._out[same:]))
                del self._source[same:], self._out[same:]
                self._fitted = False
        for message in transcript[len(self._source) :]:
            self._add(message)

    def _add(self, message: dict[str, Any]) -> None:
        index = len(self._source)
        self._source.append(message)
        self._out.append(message)
        self._tokens += self.setup.counter.count_message(message)
        for ref in self.setup.infos.info(message).blocks:
            if ref.kind is BlockKind.TOOL_CALL and ref.tool_id and ref.tool_name:
                self._names[ref.tool_id] = ref.tool_name
            elif ref.kind is BlockKind.TOOL_RESULT:
                self._outputs.append((index, ref))

    def _mask(self) -> Messages:
        """Mask every output that has left the last N since the previous call; the
        transcript messages masked (each once, in order)."""
        count = self.setup.counter.count_message
        masked: dict[int, dict[str, Any]] = {}
        due = len(self._outputs) - self.keep_last
        if due - self._passed < self.mask_every:
            return []
        while self._passed < due:
            index, ref = self._outputs[self._passed]
            self._passed += 1
            tool = ref.tool_name or (self._names.get(ref.tool_id) if ref.tool_id else None)
            line = masked_placeholder(tool, len(ref.text))
            if len(line) >= len(ref.text):
                continue
            old = self._out[index]
            # Block positions never change when a payload is replaced, so a message with
            # several outputs is masked one block at a time with the refs of the original.
            new = with_tool_result_text(old, ref, line)
            self._out[index] = new
            self._tokens += count(new) - count(old)
            self._fitted = False
            masked[index] = self._source[index]
        return list(masked.values())


def parse_keep_last(text: str) -> int:
    """``keepLast`` from the strategy's name (``observation-masking:keepLast=5``)."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError("want an integer >= 0 (tool outputs kept verbatim)") from None
    if value < 0:
        raise ValueError("want an integer >= 0 (tool outputs kept verbatim)")
    return value
