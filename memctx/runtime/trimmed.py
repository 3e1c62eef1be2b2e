"""The messages one ``on_context`` call left out, for its record
(:class:`memctx.runtime.call_record.ContextCallRecord`).

Why a message was trimmed (:attr:`TrimmedMessage.layer`):

- ``"bm25"``: smart trim's layer 2 (low relevance to the query);
- ``"oldest"``: layer 3 (oldest first, once the weak ones did not free enough);
- ``"forced"``: the context was over the window itself with a query too short to rank by,
  so it was trimmed oldest first anyway (the engine's forced trim);
- ``"pairing"``: dropped whole by the pairing repair that ends a trim;
- when one call removed messages through more than one of these steps, smart trim reports
  only how many each step removed (:attr:`memctx.trim.TrimResult.layer_counts`), not
  which message went by which, so every message of that call carries the candidate steps
  joined by ``|`` (``"bm25|oldest"``); the record has the exact counts.

A long session re-trims its old messages on every call, thousands of them:
:class:`TrimmedMessages` keeps their positions and builds the entries only when read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

from memctx.trim import TrimResult

__all__ = [
    "NO_TRIM",
    "TrimmedMessage",
    "TrimmedMessages",
    "message_id",
    "message_role",
    "trim_layer",
]

_ID_FIELDS = ("id", "uuid")  # where a message carries its own id (Pi/OpenClaw, transcripts)


@dataclass(frozen=True, slots=True)
class TrimmedMessage:
    """One of the caller's messages left out of the context sent.

    Attributes:
        index: Its position in the list the caller passed to ``on_context``.
        id: The message's own ``id`` (or ``uuid``) field when it carries one, as a string.
        role: Its ``role`` field (``""`` without one).
        tokens: Its estimated tokens.
        layer: The step that removed it (see the module docs).
    """

    index: int
    id: str | None
    role: str
    tokens: int
    layer: str


class TrimmedMessages(Sequence[TrimmedMessage]):
    """The messages one call left out, as :class:`TrimmedMessage` entries built on first
    read (a tuple-like sequence: ``len``, indexing, iteration, ``==``).

    Args:
        messages: The messages left out (the caller's dicts).
        positions: Their positions in the caller's list.
        tokens: Their estimated tokens.
        layer: Why they were left out (module docs).
    """

    __slots__ = ("_items", "_layer", "_messages", "_positions", "_tokens")

    def __init__(
        self,
        messages: Sequence[object] = (),
        positions: Sequence[int] = (),
        tokens: Sequence[int] = (),
        layer: str = "",
    ) -> None:
        self._messages = messages
        self._positions = positions
        self._tokens = tokens
        self._layer = layer
        self._items: tuple[TrimmedMessage, ...] | None = None

    def _built(self) -> tuple[TrimmedMessage, ...]:
        if self._items is None:
            layer = self._layer
            rows = zip(self._messages, self._positions, self._tokens, strict=True)
            self._items = tuple(
                TrimmedMessage(int(i), message_id(m), message_role(m), int(t), layer)
                for m, i, t in rows
            )
        return self._items

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, index: int) -> TrimmedMessage: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[TrimmedMessage, ...]: ...
    def __getitem__(self, index: int | slice) -> TrimmedMessage | tuple[TrimmedMessage, ...]:
        return self._built()[index]

    def __iter__(self) -> Iterator[TrimmedMessage]:
        return iter(self._built())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TrimmedMessages | tuple | list):
            return self._built() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._built())

    def __repr__(self) -> str:
        return f"TrimmedMessages({len(self)} messages)"


NO_TRIM = TrimmedMessages()
"""The empty sequence: a call that trimmed nothing."""


def message_id(message: object) -> str | None:
    """The message's own id (its ``id`` or ``uuid`` field, a string or an int), or ``None``."""
    if not isinstance(message, Mapping):
        return None
    for name in _ID_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            return value[:200]
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value) if abs(value) < 10**18 else None
    return None


def message_role(message: object) -> str:
    """The message's ``role`` (at most 40 characters), ``""`` without a string one."""
    role = message.get("role") if isinstance(message, Mapping) else None
    return role[:40] if isinstance(role, str) else ""


def trim_layer(result: TrimResult, forced: bool) -> str:
    """Why the messages ``result`` removed were removed (module docs); ``forced``: the trim
    ran only because the context was over the window."""
    counts = result.layer_counts
    if forced and not counts.bm25:
        return "forced"
    steps = [name for name in ("bm25", "oldest", "pairing") if getattr(counts, name)]
    return "|".join(steps) if steps else "oldest"
