"""Tool-call / tool-result pairing: the check, and a repair that keeps what it can.

:mod:`.rules` states the providers' rules; this module applies them. Repair edits copies,
never the caller's dicts, and keeps content wherever a provider-accepted form exists:

- A result that answers its call but comes too late (after text, or a tool message after a
  user message) is *moved* to the front of the turn answering the call. A tool message or a
  result-only user message moves as a whole, untouched, before the first user message or
  the first text; a result block sharing a message with text moves, in copies, to just
  before the turn's first text (the text that came before it now follows it). Nothing
  the user wrote is dropped.
- A call id reused by a later, unrelated call (SWE-agent replays do this) is *renamed* in
  the later pair: ``call_x`` becomes ``call_x-2`` (then ``-3``, ..., skipping any id in
  use), in the call and in the results answering it, so both pairs stay. ``-`` rather than
  ``~``: Anthropic accepts only ``[a-zA-Z0-9_-]`` in ids.
- What no reordering can save is removed, block by block: orphaned, misplaced and duplicate
  results, a result in another provider's shape than its call (the pair goes: keeping the
  output as user text would hand tool output the user's authority, and turning a
  ``role: tool`` message into another role is a conversion memctx never makes), and then
  the calls left without an answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .anatomy import InfoCache, MessageInfo, inspect_message
from .fixes import Row, lead_results, remove_blocks, rename_reused_ids, without_tools
from .rules import REMOVABLE_RESULT_KINDS, PairingViolation, ViolationKind, find_violations

__all__ = [
    "PairingViolation",
    "ViolationKind",
    "pairing_violations",
    "repair_tool_pairing",
    "repair_with_sources",
]


def _read(messages: Sequence[object], cache: InfoCache | None) -> list[MessageInfo]:
    return cache.infos(messages) if cache is not None else [inspect_message(m) for m in messages]


def pairing_violations(
    messages: Sequence[object], *, cache: InfoCache | None = None
) -> list[PairingViolation]:
    """Every pairing rule ``messages`` breaks; empty when a provider would accept them.

    Never raises: entries that cannot be read (non-dicts, unknown roles, hostile values)
    are never judged and never reported.

    Args:
        messages: Message dicts in any supported format (mixed formats are judged too).
        cache: Reuse message readings across calls (an agent loop's turns share dicts).

    Returns:
        The violations in message order, each naming its kind, message, block and tool id.
    """
    found = find_violations(_read(messages, cache))
    found.sort(key=lambda v: v.message_index)  # stable: block order kept within a message
    return found


def repair_tool_pairing(messages: Sequence[object], *, cache: InfoCache | None = None) -> list[Any]:
    """Return a new list that breaks no pairing rule, keeping every message it can.

    Reused call ids are renamed first, late results moved to the front of their turn, and
    only then is anything removed, block by block: a user message holding three results,
    one orphaned, keeps the other two; an assistant message loses only its unanswered
    calls. A message is dropped only when nothing meaningful is left in it (no text, call,
    result, image or unknown block), so no text is ever lost; system and unreadable messages
    are never edited or dropped. Edited messages are shallow copies; untouched ones are the
    same objects, so repairing a valid conversation returns a list of the very same dicts.

    Invalid results are removed before unanswered calls, because removing a result-only
    message can make a later, misplaced result valid again; the steps repeat until nothing
    is left to fix. ``cache`` is as for :func:`pairing_violations`. Never raises.
    """
    return repair_with_sources(messages, cache=cache)[0]


def repair_with_sources(
    messages: Sequence[object], *, cache: InfoCache | None = None
) -> tuple[list[Any], list[int]]:
    """:func:`repair_tool_pairing`, and where each message of its result came from.

    A repaired list may move messages within a turn and edit copies that gain blocks
    (a late result moved into the turn's first message) or carry a renamed id, so which
    input a message stems from cannot be read off by identity or order; this says it.

    Returns:
        ``(repaired, sources)``: ``sources[i]`` is the index in ``messages`` of the message
        ``repaired[i]`` is, or is an edited copy of. Inputs absent from ``sources`` were
        dropped (a message whose late results moved elsewhere is dropped when nothing is
        left in it).
    """
    infos = _read(messages, cache)
    found = find_violations(infos)
    if not found:
        return list(messages), list(range(len(messages)))
    rows: list[Row] = [(m, infos[i], i) for i, m in enumerate(messages)]
    if any(v.kind is ViolationKind.DUPLICATE_CALL for v in found):
        rows = rename_reused_ids(rows)
        found = find_violations([info for _, info, _ in rows])
    # Each pass removes a block, or moves every late result of the moment to the front;
    # the bound is never the reason to stop (the fallback below is a guarantee, not a path).
    for _ in range(2 * sum(len(i.blocks) for i in infos) + 4):
        if not found:
            return [m for m, _, _ in rows], [s for _, _, s in rows]
        removable = [v for v in found if v.kind in REMOVABLE_RESULT_KINDS]
        late = [v for v in found if v.kind is ViolationKind.RESULT_NOT_FIRST]
        if removable:  # a result's fate never depends on the calls we would remove
            rows = remove_blocks(rows, removable)
        elif late:
            rows = lead_results(rows, late)
        else:
            rows = remove_blocks(rows, found)
        found = find_violations([info for _, info, _ in rows])
    rows = without_tools(rows)  # pragma: no cover
    return [m for m, _, _ in rows], [s for _, _, s in rows]  # pragma: no cover
