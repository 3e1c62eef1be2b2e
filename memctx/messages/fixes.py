"""The steps of the pairing repair, each on rows of (message, its reading, source index).

:mod:`.pairing` runs them until :mod:`.rules` finds nothing: renaming reused call ids,
moving late results to the front of their turn, removing what cannot be saved. Each step
returns new rows and edits only copies; the source index of a row is the position in the
caller's list of the message it is, or was copied from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .anatomy import (
    CONTENT,
    ITEM,
    PARTS,
    TOOL_CALLS,
    BlockKind,
    BlockRef,
    MessageInfo,
    RoleKind,
    inspect_message,
    with_tool_id,
)
from .rules import ANSWER_WINDOW_KINDS, PairingViolation, ViolationKind

__all__ = [
    "Row",
    "lead_results",
    "meaningful",
    "remove_blocks",
    "rename_reused_ids",
    "without_blocks",
    "without_tools",
]

Row = tuple[Any, MessageInfo, int]

_TOOL_KINDS = (BlockKind.TOOL_CALL, BlockKind.TOOL_RESULT)


# --- reused call ids ----------------------------------------------------------------------


def rename_reused_ids(rows: list[Row]) -> list[Row]:
    """Give each call whose id an earlier call used a fresh id, and its answers with it.

    A window answers its own turn's calls, in order: the k-th result carrying a reused id
    answers the k-th call of the turn with that id (the first use keeps the id), or, for a
    whole-message result, the k-th such call of the turn's last message, the only one a
    tool message may answer (a Responses output item, like a block, answers any).
    """
    infos = [info for _, info, _ in rows]
    taken = {b.tool_id for i in infos for b in i.blocks if b.tool_id is not None}
    used: set[str] = set()
    renames: dict[int, list[tuple[BlockRef, str]]] = {}
    n = len(infos)
    i = 0
    while i < n:
        if infos[i].kind is not RoleKind.ASSISTANT:
            i += 1
            continue
        calls: list[tuple[int, str, str]] = []  # (message, id as written, id it will carry)
        j = i
        while j < n and infos[j].kind is RoleKind.ASSISTANT:
            for block in infos[j].blocks:
                old = block.tool_id
                if block.kind is not BlockKind.TOOL_CALL or old is None:
                    continue
                new = _fresh_id(old, taken) if old in used else old
                used.add(old)
                calls.append((j, old, new))
                if new != old:
                    renames.setdefault(j, []).append((block, new))
            j += 1
        last, reused = j - 1, {old for _, old, new in calls if new != old}
        seen: dict[tuple[bool, str], int] = {}
        while j < n and infos[j].kind in ANSWER_WINDOW_KINDS:
            tool_message = infos[j].kind is RoleKind.TOOL
            for block in infos[j].blocks if reused else ():
                old = block.tool_id
                if block.kind is not BlockKind.TOOL_RESULT or old not in reused:
                    continue
                # A Responses output item answers any call of the turn (each call is an item).
                whole = tool_message and block.field != ITEM
                ids = [new for m, o, new in calls if o == old and (m == last or not whole)]
                k = seen[whole, old] = seen.get((whole, old), -1) + 1
                if k < len(ids) and ids[k] != old:
                    renames.setdefault(j, []).append((block, ids[k]))
            j += 1
        i = j
    out = list(rows)
    for index, changes in renames.items():
        message, _, source = rows[index]
        for block, new in changes:
            message = with_tool_id(message, block, new)
        out[index] = (message, inspect_message(message), source)
    return out


def _fresh_id(old: str, taken: set[str]) -> str:
    k = 2
    while f"{old}-{k}" in taken:
        k += 1
    taken.add(f"{old}-{k}")
    return f"{old}-{k}"


# --- late results -------------------------------------------------------------------------


def lead_results(rows: list[Row], late: Sequence[PairingViolation]) -> list[Row]:
    """Move every late result to the front of the answer window holding it."""
    infos = [info for _, info, _ in rows]
    windows: dict[int, list[PairingViolation]] = {}
    for v in late:
        start = v.message_index
        while start > 0 and infos[start - 1].kind in ANSWER_WINDOW_KINDS:
            start -= 1
        windows.setdefault(start, []).append(v)
    out: list[Row] = []
    done = 0
    for start in sorted(windows):
        end = start
        while end < len(infos) and infos[end].kind in ANSWER_WINDOW_KINDS:
            end += 1
        out += rows[done:start]
        out += _lead_window(rows[start:end], windows[start], start)
        done = end
    return out + rows[done:]


def _lead_window(rows: list[Row], late: Sequence[PairingViolation], offset: int) -> list[Row]:
    msgs = [message for message, _, _ in rows]
    infos = [info for _, info, _ in rows]
    flagged: dict[int, set[tuple[str, int]]] = {}
    for v in late:
        flagged.setdefault(v.message_index - offset, set()).add((v.field, v.block_index))
    tools = sorted(k for k in flagged if infos[k].kind is RoleKind.TOOL)
    order = [k for k in range(len(msgs)) if k not in tools]
    first_user = next((p for p, k in enumerate(order) if infos[k].kind is RoleKind.USER), None)
    if tools and first_user is not None:  # tool messages go before every user message
        order[first_user:first_user] = tools
    edited: dict[int, Any] = {}
    spots = {k: s for k, s in flagged.items() if infos[k].kind is RoleKind.USER}
    if spots:
        order = _lead_blocks(msgs, infos, spots, order, edited)
    out: list[Row] = []
    for k in order:
        if k not in edited:
            out.append(rows[k])
            continue
        info = inspect_message(edited[k])
        if meaningful(info):
            out.append((edited[k], info, rows[k][2]))
    return out


def _lead_blocks(
    msgs: list[Any],
    infos: list[MessageInfo],
    spots: dict[int, set[tuple[str, int]]],
    order: list[int],
    edited: dict[int, Any],
) -> list[int]:
    """Put the late result blocks of a merged user turn before its first other block."""
    first = _first_content(order, infos)
    if first is None:
        return order  # nothing but results: nothing can be late
    p, b_pos = first
    p_at = order.index(p)
    moved: list[int] = []  # result-only messages: moved whole, no copy
    loose: list[Any] = []  # late blocks sharing a message with content
    for k in order[p_at:]:
        spot = spots.get(k)
        if not spot:
            continue
        blocks = infos[k].blocks
        if k != p and all(
            bl.kind is BlockKind.TOOL_RESULT and (bl.field, bl.index) in spot for bl in blocks
        ):
            moved.append(k)
            continue
        loose += [_block_at(msgs[k], bl) for bl in blocks if (bl.field, bl.index) in spot]
        edited[k] = without_blocks(msgs[k], infos[k], spot)
    if loose:
        b = infos[p].blocks[b_pos]
        prev = moved[-1] if moved else (order[p_at - 1] if p_at else None)
        if any(bl.kind is BlockKind.TOOL_RESULT for bl in infos[p].blocks[:b_pos]):
            edited[p] = _insert_before(edited.get(p, msgs[p]), b, loose)
        elif prev is not None and _results_list(infos[prev]) is not None:
            edited[prev] = _append(edited.get(prev, msgs[prev]), infos[prev], loose)
        else:
            edited[p] = _insert_before(edited.get(p, msgs[p]), b, loose)
    rest = [k for k in order if k not in moved]
    at = rest.index(p)
    return rest[:at] + moved + rest[at:]


def _first_content(order: list[int], infos: list[MessageInfo]) -> tuple[int, int] | None:
    """The first user message of the window holding a block that is no tool block, and
    that block's position among the message's blocks."""
    for k in order:
        if infos[k].kind is not RoleKind.USER:
            continue
        for pos, block in enumerate(infos[k].blocks):
            if block.kind not in _TOOL_KINDS:
                return k, pos
    return None


def _block_at(message: Mapping[str, Any], block: BlockRef) -> Any:
    if block.field == "":
        return message.get(CONTENT)  # a single block as the whole content
    return message[block.field][block.index]


def _results_list(info: MessageInfo) -> str | None:
    """The list field of a user message holding only results, which late results may join."""
    if info.kind is not RoleKind.USER or not info.blocks:
        return None
    if any(b.kind is not BlockKind.TOOL_RESULT for b in info.blocks):
        return None
    field = info.blocks[-1].field
    return field if field in (CONTENT, PARTS) else None


def _append(message: Mapping[str, Any], info: MessageInfo, blocks: list[Any]) -> dict[str, Any]:
    field = _results_list(info) or CONTENT
    edited = dict(message)
    edited[field] = [*message[field], *blocks]
    return edited


def _insert_before(
    message: Mapping[str, Any], block: BlockRef, blocks: list[Any]
) -> dict[str, Any]:
    """A copy of ``message`` with ``blocks`` inserted right before ``block``."""
    edited = dict(message)
    if block.field in (CONTENT, PARTS):
        items = list(message[block.field])
        items[block.index : block.index] = blocks
        edited[block.field] = items
        return edited
    content = message.get(CONTENT)
    # The whole content was one block; the text keeps its words in the content-block shape.
    first = {"type": "text", "text": content} if isinstance(content, str) else content
    edited[CONTENT] = [*blocks, first]
    return edited


# --- removal ------------------------------------------------------------------------------


def remove_blocks(rows: list[Row], violations: Sequence[PairingViolation]) -> list[Row]:
    """``rows`` without the blocks the violations point at; emptied messages dropped."""
    cut: dict[int, set[tuple[str, int]]] = {}
    for v in violations:
        cut.setdefault(v.message_index, set()).add((v.field, v.block_index))
    out: list[Row] = []
    for index, row in enumerate(rows):
        spots = cut.get(index)
        if not spots:
            out.append(row)
            continue
        message, info, source = row
        edited = without_blocks(message, info, spots)
        if edited is None:
            continue
        edited_info = inspect_message(edited)
        if info.kind is not RoleKind.SYSTEM and not meaningful(edited_info):
            continue
        out.append((edited, edited_info, source))
    return out


def without_tools(rows: list[Row]) -> list[Row]:
    """Every call and result removed from the judged messages: valid by construction."""
    spots = [
        PairingViolation(ViolationKind.MISSING_RESULT, i, b.tool_id, b.field, b.index, "")
        for i, (_, info, _) in enumerate(rows)
        if info.kind in (*ANSWER_WINDOW_KINDS, RoleKind.ASSISTANT)
        for b in info.blocks
        if b.kind in _TOOL_KINDS
    ]
    return remove_blocks(rows, spots)


def without_blocks(
    message: Mapping[str, Any], info: MessageInfo, spots: set[tuple[str, int]]
) -> dict[str, Any] | None:
    """A shallow copy of ``message`` without the blocks at ``spots``; None drops it whole."""
    if (("", -1) in spots and info.kind is RoleKind.TOOL) or (ITEM, -1) in spots:
        return None  # the message is the result (or the call: a Responses item)
    edited = dict(message)
    for field in (CONTENT, TOOL_CALLS, PARTS):
        drop = {i for f, i in spots if f == field}
        value = edited.get(field)
        if drop and isinstance(value, list):
            kept = [b for i, b in enumerate(value) if i not in drop]
            if field == TOOL_CALLS and not kept:
                del edited[field]  # OpenAI rejects an empty tool_calls array
            else:
                edited[field] = kept
    if ("function_call", -1) in spots:
        edited.pop("function_call", None)
    if ("", -1) in spots and isinstance(edited.get(CONTENT), Mapping):
        edited[CONTENT] = []  # content was a single result block
    return edited


def meaningful(info: MessageInfo) -> bool:
    """Whether anything worth sending is left: thinking alone or empty text is not."""
    for block in info.blocks:
        if block.kind is BlockKind.THINKING:
            continue
        if block.kind is BlockKind.TEXT:
            if block.text.strip():
                return True
            continue
        return True
    return False
