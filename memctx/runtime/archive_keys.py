"""How the archive sees a message: the text it stores, its time, and whether it is done.

:func:`archive_text` and :func:`message_time` make a segment of a message. :class:`KeySet`
remembers which messages are archived already, :class:`SegmentKeys` the raw store's keys of
their segments. Trim-cache keys (:attr:`memctx.trim.cache.MessageFacts.key`) are small
non-negative ints handed out by a counter, one per message read, so a boolean array indexed
by key is the set: a membership test for the ~2,000 messages a long session trims every turn
is one numpy gather instead of 2,000 dict lookups. It costs one byte per message the session
ever read (:class:`SegmentKeys`: 16 bytes, and 8 per segment).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from memctx.messages import BlockKind, MessageInfo
from memctx.retrieval import ranges
from memctx.text import Redactor, leading_date

__all__ = ["KeySet", "SegmentKeys", "archive_text", "message_time"]

_DAY = 86_400.0


class KeySet:
    """Non-negative int keys, tested many at a time."""

    def __init__(self) -> None:
        self._flags: npt.NDArray[np.bool_] = np.zeros(1024, dtype=np.bool_)

    def add(self, keys: Sequence[int]) -> None:
        """Add ``keys`` (non-negative ints)."""
        if not keys:
            return
        top = max(keys)
        if top >= len(self._flags):
            grown = np.zeros(max(top + 1, 2 * len(self._flags)), dtype=np.bool_)
            grown[: len(self._flags)] = self._flags
            self._flags = grown
        self._flags[np.asarray(keys, dtype=np.int64)] = True

    def has(self, keys: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Per key, whether it was added (keys beyond every added one: not)."""
        out = np.zeros(len(keys), dtype=np.bool_)
        inside = keys < len(self._flags)
        out[inside] = self._flags[keys[inside]]
        return out


class SegmentKeys:
    """Trim-cache key -> the raw store's keys of the message's segments, read many at once.

    The context hook asks every turn for the segments of the ~500 archived messages it
    sends (to leave them out of the search): two array gathers, where a dict of tuples cost
    a cache miss per message, tuple and key.
    """

    def __init__(self) -> None:
        self._start: npt.NDArray[np.int64] = np.full(1024, -1, dtype=np.int64)  # -1: none
        self._count: npt.NDArray[np.int64] = np.zeros(1024, dtype=np.int64)
        self._flat: npt.NDArray[np.int64] = np.zeros(1024, dtype=np.int64)
        self._size = 0

    def set(self, key: int, store_keys: Sequence[int]) -> None:
        """Record ``store_keys`` as the segments of trim-cache key ``key`` (non-negative);
        a key set again is answered with its latest segments."""
        if key >= len(self._start):
            size = max(key + 1, 2 * len(self._start))
            start = np.full(size, -1, dtype=np.int64)
            start[: len(self._start)] = self._start
            count = np.zeros(size, dtype=np.int64)
            count[: len(self._count)] = self._count
            self._start, self._count = start, count
        stop = self._size + len(store_keys)
        if stop > len(self._flat):
            flat = np.zeros(max(stop, 2 * len(self._flat)), dtype=np.int64)
            flat[: self._size] = self._flat[: self._size]
            self._flat = flat
        self._flat[self._size : stop] = store_keys
        self._start[key], self._count[key] = self._size, len(store_keys)
        self._size = stop

    def of(self, keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The store keys of the segments of every one of ``keys`` (non-negative), in order."""
        known = keys[keys < len(self._start)]
        starts = self._start[known]
        has = starts >= 0
        out: npt.NDArray[np.int64] = self._flat[ranges(starts[has], self._count[known][has])]
        return out


def archive_text(info: MessageInfo, redactor: Redactor | None = None) -> str:
    """What a message says, as archived: text, tool calls (name + input) and tool results.

    Thinking is left out: it is the model's scratchpad, long and rarely what a later
    question is about. With a ``redactor``, a secret cut over two blocks (two text blocks,
    a text and a tool call) is masked in both; the whole text is still redacted later.
    """
    parts = []
    for block in info.blocks:
        if block.kind is BlockKind.TOOL_CALL:
            parts.append(f"[tool call] {block.tool_name or 'tool'} {block.text}".rstrip())
        elif block.kind in (BlockKind.TEXT, BlockKind.TOOL_RESULT) and block.text:
            parts.append(block.text)
    if redactor is not None and len(parts) > 1:
        parts = redactor.redact_across(parts)
    return "\n".join(parts)


def message_time(
    message: dict[str, Any], default: float, text: str = "", *, not_before: float | None = None
) -> float:
    """The message's own ``timestamp`` (epoch s or ms, or ISO 8601); without one, the date
    ``text`` starts with (:func:`memctx.text.leading_date`: ``[8 May 2023] Caroline: ...``,
    as an exported chat writes each line's time) unless it is more than a day past
    ``default`` (a day: a date written in a zone ahead of UTC) or before ``not_before``;
    else ``default``.

    ``text`` is what the message says as archived; the caller passes it only for a
    participant's message (a tool's output that opens with a log line's date is not dated by
    it: the log is older than the call that read it). ``not_before`` is the eviction
    horizon: a date read from the text is a guess, and a guess must never make a message
    expire the moment it is archived (a pasted ``[1 Jan 2020] notes`` is kept as of now);
    a ``timestamp`` the caller set is its own statement and is kept whatever its age.
    """
    value = message.get("timestamp")
    if value is None and text:
        written = leading_date(text)
        if (
            written is not None
            and written <= default + _DAY
            and (not_before is None or written >= not_before)
        ):
            return written
    try:
        if isinstance(value, bool):
            return default
        if isinstance(value, int | float):
            stamp = float(value) / 1000.0 if value > 1e12 else float(value)
        elif isinstance(value, str) and len(value) <= 64:
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        else:
            return default
    except (ValueError, OverflowError, OSError):  # 10**400, "2026-13-45", year 10**6
        return default
    return stamp if math.isfinite(stamp) else default  # NaN or inf: the store refuses it
