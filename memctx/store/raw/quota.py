"""Fair shares of the raw store: what one message may keep.

Capacity (``maxSegments``) is shared two ways. Between sessions, eviction takes from the
largest session first (:meth:`memctx.store.raw.index.SegmentIndex.evict`), so one session's
burst cannot push every other session out. Within a session, one message may keep at most
:func:`message_quota` segments: ``max(1,000, 5 % of maxSegments)`` (1,000 at the default
20,000). A longer message (a multi-MB tool output cut into thousands of chunks) keeps its
first half-quota chunks and its last half-quota chunks, the parts that say what ran and how it
ended; the chunks between are not stored (not even embedded) and are counted
(``message_chunks_dropped`` in :meth:`memctx.store.RawStore.stats`).

A message is a run of consecutive records, in file order, with the same session, role,
speaker name, timestamp and turn, the turn given: the runtime archives one message's chunks
so. A record without a turn is a message by itself. The rule is applied to the records as they
are indexed (:class:`MessageRun`), in file order, so a reopened store keeps exactly what the
writer kept, also for a message added chunk by chunk over many calls (its tail slides: each
chunk past the quota sets aside the oldest one kept after the head). A writer plans its batch
with :func:`plan_batch` first, so that chunks the rule would set aside are never written.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Final

from .records import SegmentInfo

__all__ = [
    "MESSAGE_MIN_SEGMENTS",
    "MESSAGE_SHARE",
    "MessageKey",
    "MessageRun",
    "message_key",
    "message_quota",
    "plan_batch",
]

MESSAGE_MIN_SEGMENTS: Final = 1000
MESSAGE_SHARE: Final = 0.05

MessageKey = tuple[str, str, str | None, float, int]
"""What the chunks of one message share: session, role, name, timestamp, turn."""


def message_quota(max_segments: int) -> int:
    """Segments one message may keep: ``max(1,000, ceil(5 % of max_segments))``."""
    return max(MESSAGE_MIN_SEGMENTS, math.ceil(max_segments * MESSAGE_SHARE))


def message_key(info: SegmentInfo) -> MessageKey | None:
    """The message a segment is a chunk of; ``None`` (a message by itself) without a turn."""
    if info.turn is None:
        return None
    return (info.session_id, info.role, info.name, info.timestamp, info.turn)


class MessageRun:
    """The message the records indexed last belong to, and the keys it keeps after its head.

    Args:
        quota: Segments one message may keep (:func:`message_quota`).
    """

    def __init__(self, quota: int) -> None:
        self.head = quota // 2
        self.tail = quota - self.head
        self.key: MessageKey | None = None
        self.count = 0  # records of the message so far
        self._last: SegmentInfo | None = None
        self._kept: deque[int] = deque()  # keys of its records after the head, oldest first

    def add(self, info: SegmentInfo, key: int) -> int | None:
        """Index the record ``key`` (``info``); return a key its message's quota sets aside.

        Called for every record loaded or added: the usual record starts a message of its
        own, which one comparison of turns tells.
        """
        last = self._last
        self._last = info
        if (
            last is None
            or info.turn is None
            or info.turn != last.turn
            or info.timestamp != last.timestamp
            or message_key(info) != self.key
        ):
            self.key, self.count = message_key(info), 1
            if self._kept:
                self._kept.clear()
            return None
        self.count += 1
        if self.count <= self.head:
            return None
        self._kept.append(key)
        return self._kept.popleft() if len(self._kept) > self.tail else None


def plan_batch(messages: Sequence[MessageKey | None], run: MessageRun) -> list[bool]:
    """Which items of a batch to write: not the chunks the quota would set aside at once.

    Args:
        messages: Each item's message key, in batch order.
        run: The message the store indexed last (a run may go on from it).

    Returns:
        Per item, whether to write it.
    """
    out = [True] * len(messages)
    start = 0
    while start < len(messages):
        mk = messages[start]
        end = start + 1
        while end < len(messages) and mk is not None and messages[end] == mk:
            end += 1
        if mk is not None:
            first = run.count if start == 0 and mk == run.key else 0
            last = first + (end - start) - 1  # the run's positions in its message
            for i in range(start, end):
                pos = first + i - start
                out[i] = pos < run.head or pos > last - run.tail
        start = end
    return out
