"""Per-message facts and the read state of one input list, for smart trim.

:class:`MessageFacts` is what a trim needs to know about one message, read once per
session. :class:`SessionState` holds one input list read: per-message facts, their numeric
columns (numpy, for the layers' vector passes) and the removal units
(:class:`memctx.messages.ToolUnits`).
:class:`memctx.trim.cache.TrimCache` keeps both from turn to turn. :class:`ReadInfos`
hands a reading on to the rest of one call (query, pairing repair) by identity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import is_, length_hint
from typing import Any

import numpy as np
import numpy.typing as npt

from memctx.messages import (
    InfoCache,
    MessageInfo,
    RoleKind,
    ToolUnits,
    inspect_message,
    is_recalled_block,
)

__all__ = [
    "BoolArray",
    "FloatArray",
    "IntArray",
    "MessageFacts",
    "ReadInfos",
    "SessionState",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


class MessageFacts:
    """The per-message facts a trim needs; immutable once made.

    Attributes:
        key: A number unique to this cache entry: the message's key in the BM25 index.
        info: The message read by :func:`memctx.messages.anatomy.inspect_message`.
        tokens: Its token count under the cache's counter.
        recalled: Whether it is an injected ``<recalled-context>`` block.
        fixed: Protected whatever its position: a system message, a recalled block, or an
            entry that is not a message dict.
        conversational: A user or assistant message that counts toward the protected
            recent ones: not tool results only, not a recalled block.
        assistant_calls: An assistant message with tool calls.
    """

    __slots__ = ("assistant_calls", "conversational", "fixed", "info", "key", "recalled", "tokens")

    def __init__(self, key: int, message: object, tokens: int) -> None:
        info = inspect_message(message)
        self.key = key
        self.info = info
        self.tokens = tokens
        self.recalled = is_recalled_block(message)
        self.fixed = (
            not isinstance(message, Mapping) or info.kind is RoleKind.SYSTEM or self.recalled
        )
        # Tool-result-only messages do not count: OpenAI and Pi results have a role of their
        # own while Anthropic's sit in user messages, so counting them would protect a
        # different stretch of the same conversation in each format.
        self.conversational = (
            info.kind in (RoleKind.USER, RoleKind.ASSISTANT)
            and not info.is_tool_result_only
            and not self.recalled
        )
        self.assistant_calls = info.kind is RoleKind.ASSISTANT and info.has_tool_calls


class _Column:
    """A growable numpy array: amortised O(1) per appended value."""

    def __init__(self, dtype: type[np.generic]) -> None:
        self._data: npt.NDArray[Any] = np.zeros(256, dtype=dtype)
        self._size = 0

    def put(self, start: int, values: Sequence[Any]) -> None:
        """Write ``values`` from ``start`` on; the column then ends after them."""
        stop = start + len(values)
        if stop > len(self._data):
            grown = np.zeros(max(stop, 2 * len(self._data)), dtype=self._data.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[start:stop] = values
        self._size = stop

    def view(self) -> npt.NDArray[Any]:
        return self._data[: self._size]


class SessionState:
    """One input list, read: per-message facts, token counts and tool units.

    Extended in place when the next input is this one plus new messages. It also keeps
    what :func:`memctx.messages.anatomy.message_fingerprint` looks at (role, ``content``,
    ``tool_calls`` and ``parts`` objects and their sizes) column by column, so the next
    call can check that the old messages are unchanged with a few C-level passes instead
    of one Python call per message.
    """

    def __init__(self) -> None:
        self.messages: list[object] = []
        self.facts: list[MessageFacts] = []
        self.units = ToolUnits()
        self._roots = _Column(np.int64)
        self._roots_synced = 0  # units.root[:_roots_synced] equals the roots column
        self._tokens = _Column(np.int64)
        self._keys = _Column(np.int64)
        self._fixed = _Column(np.bool_)
        self._recalled = _Column(np.bool_)
        self._values: dict[str, list[object]] | None = {k: [] for k in _FINGERPRINT_KEYS}
        # Per sized key, the values that can change size in place (not str or None) and
        # their sizes: the only part of a fingerprint an unchanged value can still change.
        self._mutable: dict[str, list[object]] = {k: [] for k in _SIZED_KEYS}
        self._sizes: dict[str, list[int]] = {k: [] for k in _SIZED_KEYS}

    def rebase(self, messages: Sequence[object]) -> None:
        """Take ``messages`` as the dicts of this state's (equal) messages."""
        self.messages = []
        self._values = {k: [] for k in _FINGERPRINT_KEYS}
        self._mutable = {k: [] for k in _SIZED_KEYS}
        self._sizes = {k: [] for k in _SIZED_KEYS}
        self._remember(messages)

    def extend(self, messages: Sequence[object], facts: Sequence[MessageFacts]) -> None:
        self._remember(messages)
        self.facts.extend(facts)
        start = len(self.facts) - len(facts)
        self._tokens.put(start, [f.tokens for f in facts])
        self._keys.put(start, [f.key for f in facts])
        self._fixed.put(start, [f.fixed for f in facts])
        self._recalled.put(start, [f.recalled for f in facts])
        changed = self.units.extend(f.info for f in facts)
        self._roots_synced = min(self._roots_synced, changed)

    def unit_roots(self) -> IntArray:
        """Per message, its unit's root (``units.root`` as an array; a view, valid until the
        next :meth:`extend`), kept in step incrementally: only roots a join moved and the new
        messages' are written."""
        root = self.units.root
        if self._roots_synced < len(root):
            self._roots.put(self._roots_synced, root[self._roots_synced :])
            self._roots_synced = len(root)
        return self._roots.view()

    def _remember(self, messages: Sequence[object]) -> None:
        """Keep the messages and their fingerprint columns for :meth:`extended_by`."""
        self.messages.extend(messages)
        if self._values is not None:
            columns = _columns(messages)
            if columns is None:
                self._values = None  # an entry that is not a plain dict: no fast check
            else:
                for key, values in columns.items():
                    self._values[key].extend(values)
                for key in _SIZED_KEYS:
                    mutable = [v for v in columns[key] if v is not None and not isinstance(v, str)]
                    self._mutable[key].extend(mutable)
                    self._sizes[key].extend(map(length_hint, mutable))

    @property
    def tokens(self) -> IntArray:
        """Per message, its token count (a view, valid until the next :meth:`extend`)."""
        return self._tokens.view()

    @property
    def keys(self) -> IntArray:
        """Per message, :attr:`MessageFacts.key`."""
        return self._keys.view()

    @property
    def fixed(self) -> BoolArray:
        """Per message, :attr:`MessageFacts.fixed`."""
        return self._fixed.view()

    @property
    def recalled(self) -> BoolArray:
        """Per message, :attr:`MessageFacts.recalled`."""
        return self._recalled.view()

    def extended_by(self, messages: Sequence[object]) -> bool:
        """Whether ``messages`` is this state's list, unchanged, plus zero or more messages.

        False also when the quick check cannot tell (an entry that is not a plain dict);
        the caller then reads every message through the per-message cache.
        """
        n = len(self.messages)
        if self._values is None or len(messages) < n:
            return False
        old = messages[:n]
        if not all(map(is_, old, self.messages)):
            return False
        # The very dicts remembered (all plain dicts, or ``_values`` would be None): their
        # values are read in C, without a list per key.
        for key in _FINGERPRINT_KEYS:
            if not all(map(is_, map(dict.get, old, repeat(key)), self._values[key])):  # type: ignore[arg-type]
                return False
        # The very value objects too, so only a list grown or shrunk in place is left.
        return all(list(map(length_hint, self._mutable[k])) == self._sizes[k] for k in _SIZED_KEYS)


class ReadInfos(InfoCache):
    """Readings of messages just read (``facts[i]`` is ``messages[i]``'s), found by identity.

    Within one call, without fingerprinting again. Taking ``id`` of 2,000 dicts costs about
    0.4 ms, more than the rest of a cached trim-cache reading, so the identity map covers
    only both ends of the list at first (where the query, the recall block's place and the
    protected tail are read) and is completed on the first miss. A pass over the very list
    (pairing repair) is answered by position. Only valid while the messages are alive and
    unedited, i.e. within one call.
    """

    _ENDS = 32  # messages at each end mapped up front

    def __init__(self, messages: Sequence[object], facts: Sequence[MessageFacts]) -> None:
        super().__init__(max_entries=1)
        self._messages = messages
        self._facts = facts
        ends = range(len(messages))
        if len(messages) > 2 * self._ENDS:
            ends = range(-self._ENDS, self._ENDS)
        self._by_id = {id(messages[i]): facts[i] for i in ends}
        self._complete = len(messages) <= 2 * self._ENDS

    def facts_of(self, message: object) -> MessageFacts | None:
        """The reading of ``message`` if it is one of the messages, else ``None``."""
        found = self._by_id.get(id(message))
        if found is None and not self._complete:
            self._by_id = dict(zip(map(id, self._messages), self._facts, strict=True))
            self._complete = True
            found = self._by_id.get(id(message))
        return found

    def info(self, message: object) -> MessageInfo:
        found = self.facts_of(message)
        return found.info if found is not None else inspect_message(message)

    def infos(self, messages: Sequence[object]) -> list[MessageInfo]:
        if len(messages) == len(self._messages) and all(map(is_, messages, self._messages)):
            return [f.info for f in self._facts]
        return [self.info(m) for m in messages]


_SIZED_KEYS = ("content", "tool_calls", "parts")
_FINGERPRINT_KEYS = ("role", *_SIZED_KEYS)


def _columns(messages: Sequence[object]) -> dict[str, list[object]] | None:
    """Per fingerprinted key, every message's value (None if an entry is not a dict)."""
    try:
        return {k: list(map(dict.get, messages, repeat(k))) for k in _FINGERPRINT_KEYS}  # type: ignore[arg-type]
    except TypeError:  # dict.get on something else than a dict
        return None
