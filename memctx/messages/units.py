"""Tool units: a message with tool calls and the messages holding their results, kept together.

Every part of memctx that removes or cuts messages must keep a tool call with its results
(the pairing rules of :mod:`memctx.messages.rules`). The grouping is one rule, read here once
from the anatomy of every provider shape (:class:`~memctx.messages.MessageInfo`):

- A result with an id joins the latest earlier message holding a call with that id.
- A result without an id (Gemini parts, legacy ``function_call``) joins the latest earlier
  message with calls, as Gemini pairs them by order.
- Results answering calls of several messages (one assistant turn split over messages, a
  result message answering both) join those messages into one unit.
- A Responses ``reasoning`` item joins the assistant item right after it (a call or a
  message of the same response): the API refuses either without the other.
- A result whose id matches no earlier call stays alone (pairing repair deals with it), and
  so does every message without calls or results.

Two views of the same grouping, for two kinds of edit:

- :func:`tool_units` (*removal units*): each unit is exactly the call message(s) and their
  result messages, in index order, not necessarily adjacent: what smart trim removes or
  keeps as a whole; a user message that happens to sit between a call and its result is
  not part of it.
- :func:`tool_spans` (*uncuttable spans*): consecutive runs of messages that a cut may not
  split: each unit's first to last message with everything between, overlapping runs
  merged, every other message a run alone. The spans cover the list in order: what
  compaction and the planner cut between.

:class:`ToolUnits` builds the grouping incrementally, for a caller that reads a growing list
one new message at a time (smart trim's per-session cache).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .anatomy import InfoCache, MessageInfo, RoleKind

__all__ = ["ToolUnits", "tool_spans", "tool_units"]


class ToolUnits:
    """The tool units of a message list, extended as messages are appended.

    Attributes:
        root: Per message, its unit's smallest index (units order by their first message).
        members: Per unit root, its message indices in ascending order.
    """

    def __init__(self) -> None:
        self.root: list[int] = []
        self.members: dict[int, list[int]] = {}
        self._call_at: dict[str, int] = {}  # call id -> the latest message holding it
        self._last_caller = -1
        self._last_reasoning = -1  # the index of the last message when it was reasoning

    def __len__(self) -> int:
        return len(self.root)

    def extend(self, infos: Iterable[MessageInfo]) -> int:
        """Add the next messages of the list (read by :func:`~memctx.messages.inspect_message`).

        Returns:
            The smallest index whose :attr:`root` is new or changed (at most the length
            before the call), so a caller that mirrors :attr:`root` updates only from there.
        """
        root, members, call_at = self.root, self.members, self._call_at
        changed = len(root)
        for info in infos:
            i = len(root)
            root.append(i)
            members[i] = [i]
            if self._last_reasoning == i - 1 >= 0 and info.kind is RoleKind.ASSISTANT:
                changed = min(changed, self._join(i, i - 1))
            self._last_reasoning = i if info.is_reasoning_item else -1
            for rid in info.tool_result_ids:
                j = call_at.get(rid, -1) if rid is not None else self._last_caller
                if j >= 0:
                    changed = min(changed, self._join(i, j))
            if info.tool_call_ids:
                self._last_caller = i
                for cid in info.tool_call_ids:
                    if cid is not None:
                        call_at[cid] = i
        return changed

    def _join(self, i: int, j: int) -> int:
        """Merge the units of messages ``i`` and ``j``; the smallest index whose root moved."""
        a, b = self.root[i], self.root[j]
        if a == b:
            return len(self.root)
        low, high = (a, b) if a < b else (b, a)
        moved = self.members.pop(high)
        for k in moved:
            self.root[k] = low
        self.members[low] = sorted(self.members[low] + moved)
        return moved[0]

    def units(self) -> list[list[int]]:
        """The removal units: each a sorted list of indices, ordered by their first index."""
        return [self.members[r] for r in sorted(self.members)]

    def spans(self) -> list[range]:
        """The uncuttable spans: consecutive ranges covering the list in order."""
        n = len(self.root)
        last = {r: m[-1] for r, m in self.members.items()}  # each unit's last message
        spans: list[range] = []
        start = 0
        while start < n:
            end = last[self.root[start]]
            k = start
            while k <= end:  # a unit starting inside the span may end after it
                end = max(end, last[self.root[k]])
                k += 1
            spans.append(range(start, end + 1))
            start = end + 1
        return spans


def tool_units(messages: Sequence[Any], infos: InfoCache | None = None) -> list[list[int]]:
    """The removal units of ``messages`` (see the module docstring).

    Args:
        messages: Message dicts in any supported format (unreadable entries are units alone).
        infos: Anatomy cache to reuse.

    Returns:
        One sorted list of indices per unit, ordered by first index; together they hold
        every index once.
    """
    return _read(messages, infos).units()


def tool_spans(messages: Sequence[Any], infos: InfoCache | None = None) -> list[range]:
    """The uncuttable spans of ``messages`` (see the module docstring).

    Args:
        messages: Message dicts in any supported format (unreadable entries are spans alone).
        infos: Anatomy cache to reuse.

    Returns:
        Consecutive ranges of indices, covering ``messages`` in order.
    """
    return _read(messages, infos).spans()


def _read(messages: Sequence[Any], infos: InfoCache | None) -> ToolUnits:
    cache = infos if infos is not None else InfoCache()
    units = ToolUnits()
    units.extend(map(cache.info, messages))
    return units
