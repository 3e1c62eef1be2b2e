"""Per-call accounting of the requests of one session, incremental over the shared prefix.

An agent's consecutive requests mostly share a long identical prefix (``full`` only ever
appends; memctx appends between trims). :class:`ContextLedger` measures each request --
tokens per message, cached-prefix tokens, recalled blocks, tool-pairing violations -- doing
fresh work only for the part after the prefix the request shares with the previous one, so
that a session of *n* calls costs about O(n) instead of O(n²) message readings.

Pairing is checked exactly, by pieces: an assistant message that follows a non-assistant
message starts a *turn*, and :func:`memctx.messages.pairing_violations` judges each turn only
from its own messages (the assistant run and the user/tool messages after it), except for
call ids reused across turns. So when the previous request was clean, the new one is clean
iff its messages from the last turn start inside the shared prefix are clean and none of their
call ids occurs before that point. Recalled blocks before the first assistant message are left
out of the pairing view: they carry no tool blocks and sit in no turn, so they cannot change
the verdict, while leaving them in would break the shared prefix every call.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memctx.messages import (
    BlockKind,
    InfoCache,
    MessageInfo,
    RoleKind,
    TokenCounter,
    inspect_message,
    is_recalled_block,
    pairing_violations,
    token_text,
)

from .answers import normalise_answer

__all__ = [
    "CACHE_TTL_S",
    "ContextLedger",
    "IdentityInfos",
    "Measure",
    "MessageMeter",
    "MeteredCounter",
]

Messages = list[dict[str, Any]]


@dataclass(frozen=True)
class Measure:
    """One request, measured.

    Attributes:
        sizes: Tokens of each message of the request.
        cached: Tokens of the leading messages identical to the previous request's.
        blocks: Indices of recalled blocks.
        pairing_ok: No tool-pairing violation.
    """

    sizes: list[int]
    cached: int
    blocks: list[int]
    pairing_ok: bool

    @property
    def sent(self) -> int:
        return sum(self.sizes)

    @property
    def recall(self) -> int:
        return sum(self.sizes[i] for i in self.blocks)


CACHE_TTL_S = 300.0  # Anthropic's default prompt cache lives 5 minutes after its last use


def _shared(old: Messages, new: Messages) -> int:
    """Length of the common prefix (same dict, else equal dicts)."""
    n = len(old)
    if len(new) >= n and new[:n] == old:  # C loop with an identity shortcut per element
        return n
    same = 0
    for a, b in zip(old, new, strict=False):
        if a is not b and a != b:
            break
        same += 1
    return same


class MessageMeter:
    """Per-message token counts and normalised texts, cached by identity for one replay.

    Messages are never edited in place during a replay (scenario messages are frozen, and
    strategies build new dicts), so the dict's identity is a safe key; the dicts are held so
    their ids stay unique.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._tokens: dict[int, tuple[object, int]] = {}
        self._texts: dict[int, tuple[object, str]] = {}
        self._recalled: dict[int, tuple[object, bool]] = {}

    def tokens(self, message: dict[str, Any]) -> int:
        entry = self._tokens.get(id(message))
        if entry is None or entry[0] is not message:
            entry = (message, self.counter.count_message(message))
            self._tokens[id(message)] = entry
        return entry[1]

    def recalled(self, message: dict[str, Any]) -> bool:
        entry = self._recalled.get(id(message))
        if entry is None or entry[0] is not message:
            entry = (message, is_recalled_block(message))
            self._recalled[id(message)] = entry
        return entry[1]

    def text(self, message: dict[str, Any]) -> str:
        entry = self._texts.get(id(message))
        if entry is None or entry[0] is not message:
            entry = (message, normalise_answer(token_text(message)))
            self._texts[id(message)] = entry
        return entry[1]


class IdentityInfos(InfoCache):
    """An :class:`InfoCache` keyed by identity alone (no fingerprint): see :class:`MessageMeter`."""

    def __init__(self) -> None:
        super().__init__()
        self._known: dict[int, tuple[object, MessageInfo]] = {}

    def info(self, message: object) -> MessageInfo:
        entry = self._known.get(id(message))
        if entry is None or entry[0] is not message:
            entry = (message, inspect_message(message))
            self._known[id(message)] = entry
        return entry[1]


class MeteredCounter(TokenCounter):
    """A :class:`TokenCounter` whose ``count_message`` goes through the replay's meter."""

    def __init__(self, model: str | None) -> None:
        super().__init__(model)
        self.meter = MessageMeter(TokenCounter(model))

    def count_message(self, message: object) -> int:
        return self.meter.tokens(message) if isinstance(message, dict) else 0


class ContextLedger:
    """Measures the consecutive requests of one session (call :meth:`reset` between them).

    Args:
        tokens: Tokens of one message (cached by the caller).
        recalled: Whether a message is a recalled block (cached by the caller).
        infos: The replay's anatomy cache.
        cache_ttl_s: How long a provider keeps a cached prefix (Anthropic's default cache:
            5 minutes); a request sent later than that after the previous one finds nothing
            cached.
    """

    def __init__(
        self,
        tokens: Callable[[dict[str, Any]], int],
        recalled: Callable[[dict[str, Any]], bool],
        infos: InfoCache,
        *,
        cache_ttl_s: float = CACHE_TTL_S,
    ) -> None:
        self._tokens, self._recalled, self._infos = tokens, recalled, infos
        self.cache_ttl_s = cache_ttl_s
        self.reset()

    def reset(self) -> None:
        """Forget the previous request (a new session starts)."""
        self._prev: Messages = []
        self._last_at: float | None = None
        self._sizes: list[int] = []
        self._blocks: list[int] = []
        self._view: Messages = []  # the previous pairing view
        self._starts: list[int] = []  # turn starts in the previous view
        self._ids: dict[str, int] = {}  # call id -> its index in the previous view
        self._id_order: list[tuple[int, str]] = []
        self._clean = False

    def measure(self, context: Messages, now: float | None = None) -> Measure:
        """Measure ``context`` (the request about to be sent at ``now``, epoch seconds)
        against the previous one: its leading messages identical to the previous request's
        are cached, unless more than the cache's TTL passed since (``now=None``: no clock,
        the cache never expires)."""
        same = _shared(self._prev, context)
        sizes = self._sizes[:same] + [self._tokens(m) for m in context[same:]]
        blocks = [i for i in self._blocks if i < same]
        blocks += [i for i in range(same, len(context)) if self._recalled(context[i])]
        ok = self._pairing(context, blocks)
        expired = (
            now is not None and self._last_at is not None and now - self._last_at > self.cache_ttl_s
        )
        self._prev, self._sizes, self._blocks = list(context), sizes, blocks
        if now is not None:
            self._last_at = now
        return Measure(sizes, 0 if expired else sum(sizes[:same]), blocks, ok)

    def _pairing(self, context: Messages, blocks: list[int]) -> bool:
        view = context
        if blocks:
            info = self._infos.info
            first = next(
                (i for i, m in enumerate(context) if info(m).kind is RoleKind.ASSISTANT),
                len(context),
            )
            for i in sorted((i for i in blocks if i < first), reverse=True):
                view = view[:i] + view[i + 1 :]
        same = _shared(self._view, view) if self._clean else 0
        # The last turn start strictly inside the shared prefix: everything before it is
        # identical to an already clean request and judged without what follows.
        k = bisect_left(self._starts, same)
        base = self._starts[k - 1] if k > 0 else 0
        tail = view[base:]
        ok = not pairing_violations(tail, cache=self._infos)
        self._truncate_ids(base)
        starts = self._starts[: k - 1] if k > 0 else []
        info = self._infos.info
        before = info(view[base - 1]).kind if base > 0 else None
        for offset, message in enumerate(tail):
            reading = info(message)
            if reading.kind is RoleKind.ASSISTANT and before is not RoleKind.ASSISTANT:
                starts.append(base + offset)
            before = reading.kind
            for block in reading.blocks:
                if block.kind is BlockKind.TOOL_CALL and block.tool_id is not None:
                    if block.tool_id in self._ids:
                        ok = False  # the same call id in an earlier turn
                    else:
                        self._ids[block.tool_id] = base + offset
                        self._id_order.append((base + offset, block.tool_id))
        self._view, self._starts, self._clean = list(view), starts, ok
        if not ok:
            self._ids, self._id_order = {}, []
        return ok

    def _truncate_ids(self, base: int) -> None:
        """Forget the call ids of the previous view at or after ``base``."""
        while self._id_order and self._id_order[-1][0] >= base:
            _, call_id = self._id_order.pop()
            if self._ids.get(call_id, -1) >= base:
                del self._ids[call_id]
