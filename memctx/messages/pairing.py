"""Tool-call / tool-result pairing, judged by the providers' own rules, and its repair.

An orphaned tool result after trimming is the most common way a context manager breaks a
conversation: the provider answers 400 and the agent stops. The rules checked here are the
strictest the supported providers apply:

- A *turn* is a run of consecutive messages of one role kind; providers merge consecutive
  same-role messages (Anthropic does so explicitly), so a call may sit in any message of an
  assistant turn.
- Every tool call of an assistant turn must be answered in the *answer window* that follows
  it: the user and tool messages up to the next assistant, system or unreadable message.
  A call with no answer (including a trailing call at the end) is ``missing_result``.
- A result block inside a user message (Anthropic ``tool_result``, Gemini
  ``functionResponse``) must answer a call of the immediately preceding assistant turn.
- A whole-message result (OpenAI ``role: tool``, Pi ``toolResult``) must, as OpenAI requires,
  sit in the unbroken run of tool messages right after the assistant message whose calls it
  answers: after a user message, or answering an earlier assistant message, it is misplaced.
- One result per call (``duplicate_result``); call ids unique in the conversation
  (``duplicate_call``); calls only in assistant messages and results only in user/tool ones.
- Calls without ids (Gemini, OpenAI's legacy ``function_call``) pair by name, in order.

System messages and messages whose role cannot be read are never judged, edited or dropped;
they end an answer window, because a provider would not accept them there either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .anatomy import (
    CONTENT,
    PARTS,
    TOOL_CALLS,
    BlockKind,
    BlockRef,
    InfoCache,
    MessageInfo,
    RoleKind,
    inspect_message,
)

__all__ = ["PairingViolation", "ViolationKind", "pairing_violations", "repair_tool_pairing"]


class ViolationKind(StrEnum):
    MISSING_RESULT = "missing_result"  # a call nobody answered
    ORPHAN_RESULT = "orphan_result"  # a result whose call is not in the preceding turn
    MISPLACED_RESULT = "misplaced_result"  # right call, wrong place for this provider shape
    DUPLICATE_RESULT = "duplicate_result"  # a second answer to one call
    DUPLICATE_CALL = "duplicate_call"  # a call id already used earlier
    MISPLACED_CALL = "misplaced_call"  # a call outside an assistant message


_RESULT_KINDS = frozenset(
    {
        ViolationKind.ORPHAN_RESULT,
        ViolationKind.MISPLACED_RESULT,
        ViolationKind.DUPLICATE_RESULT,
    }
)


@dataclass(frozen=True, slots=True)
class PairingViolation:
    """One broken rule, located precisely enough to remove the offending block."""

    kind: ViolationKind
    message_index: int
    tool_id: str | None
    field: str  # "content", "tool_calls", "parts", "function_call" or "" (whole message)
    block_index: int
    detail: str

    def __str__(self) -> str:
        where = f"message {self.message_index}"
        if self.field:
            where += f" {self.field}[{self.block_index}]"
        return f"{self.kind.value} at {where} (id={self.tool_id!r}): {self.detail}"


def _violation(kind: ViolationKind, msg: int, block: BlockRef, detail: str) -> PairingViolation:
    return PairingViolation(kind, msg, block.tool_id, block.field, block.index, detail)


_WINDOW_KINDS = (RoleKind.USER, RoleKind.TOOL)


class _TurnCalls:
    """The calls of one assistant turn still waiting for their results."""

    def __init__(self, calls: list[tuple[int, BlockRef]]) -> None:
        self.calls = calls
        self.answered = [False] * len(calls)
        self.by_id: dict[str, int] = {}
        for i, (_, block) in enumerate(calls):
            if block.tool_id is not None:
                self.by_id.setdefault(block.tool_id, i)

    def answer(self, result: BlockRef, only_msg: int | None) -> ViolationKind | None:
        """Pair ``result`` with a call; return the violation kind if it cannot be paired."""
        idx = self.by_id.get(result.tool_id) if result.tool_id is not None else None
        if idx is None:
            idx = self._by_name(result)
        if idx is None:
            return ViolationKind.ORPHAN_RESULT
        if only_msg is not None and self.calls[idx][0] != only_msg:
            return ViolationKind.MISPLACED_RESULT
        if self.answered[idx]:
            return ViolationKind.DUPLICATE_RESULT
        self.answered[idx] = True
        return None

    def _by_name(self, result: BlockRef) -> int | None:
        # Only when one side has no id: Gemini ids are optional, legacy function calls have none.
        if result.tool_name is None:
            return None
        fallback = None
        for i, (_, call) in enumerate(self.calls):
            if call.tool_name != result.tool_name:
                continue
            if call.tool_id is not None and result.tool_id is not None:
                continue
            if not self.answered[i]:
                return i
            fallback = i if fallback is None else fallback
        return fallback


def _analyse(infos: Sequence[MessageInfo]) -> list[PairingViolation]:
    found: list[PairingViolation] = []
    used_call_ids: set[str] = set()
    n = len(infos)
    i = 0
    while i < n:
        kind = infos[i].kind
        if kind is not RoleKind.ASSISTANT:
            if kind in _WINDOW_KINDS:  # a user/tool message that no assistant turn precedes
                _judge_unanswerable(i, infos[i], found)
            i += 1
            continue
        turn_end = i
        calls: list[tuple[int, BlockRef]] = []
        while turn_end < n and infos[turn_end].kind is RoleKind.ASSISTANT:
            for block in infos[turn_end].blocks:
                if block.kind is BlockKind.TOOL_CALL:
                    if block.tool_id is not None and block.tool_id in used_call_ids:
                        found.append(
                            _violation(
                                ViolationKind.DUPLICATE_CALL,
                                turn_end,
                                block,
                                "this call id was already used by an earlier call",
                            )
                        )
                        continue
                    if block.tool_id is not None:
                        used_call_ids.add(block.tool_id)
                    calls.append((turn_end, block))
                elif block.kind is BlockKind.TOOL_RESULT:
                    found.append(
                        _violation(
                            ViolationKind.MISPLACED_RESULT,
                            turn_end,
                            block,
                            "a tool result inside an assistant message",
                        )
                    )
            turn_end += 1
        pending = _TurnCalls(calls)
        last_assistant = turn_end - 1
        j = turn_end
        seen_user = False
        while j < n and infos[j].kind in _WINDOW_KINDS:
            _judge_window_message(j, infos[j], pending, last_assistant, seen_user, found)
            seen_user = seen_user or infos[j].kind is RoleKind.USER
            j += 1
        for (msg, call), done in zip(pending.calls, pending.answered, strict=True):
            if not done:
                found.append(
                    _violation(
                        ViolationKind.MISSING_RESULT,
                        msg,
                        call,
                        "no result for this call in the messages that follow its turn",
                    )
                )
        i = j
    return found


def _judge_window_message(
    index: int,
    info: MessageInfo,
    pending: _TurnCalls,
    last_assistant: int,
    seen_user: bool,
    found: list[PairingViolation],
) -> None:
    whole_message_result = info.kind is RoleKind.TOOL
    for block in info.blocks:
        if block.kind is BlockKind.TOOL_CALL:
            found.append(
                _violation(
                    ViolationKind.MISPLACED_CALL, index, block, "a tool call outside an assistant"
                )
            )
            continue
        if block.kind is not BlockKind.TOOL_RESULT:
            continue
        if whole_message_result and seen_user:
            found.append(
                _violation(
                    ViolationKind.MISPLACED_RESULT,
                    index,
                    block,
                    "a tool message after a user message; it must follow its call directly",
                )
            )
            continue
        problem = pending.answer(block, last_assistant if whole_message_result else None)
        if problem is not None:
            found.append(_violation(problem, index, block, _RESULT_DETAIL[problem]))


_RESULT_DETAIL = {
    ViolationKind.ORPHAN_RESULT: "no matching call in the immediately preceding assistant turn",
    ViolationKind.MISPLACED_RESULT: "a tool message must directly follow the message calling it",
    ViolationKind.DUPLICATE_RESULT: "this call already has a result",
}


def _judge_unanswerable(index: int, info: MessageInfo, found: list[PairingViolation]) -> None:
    for block in info.blocks:
        if block.kind is BlockKind.TOOL_RESULT:
            found.append(
                _violation(
                    ViolationKind.ORPHAN_RESULT,
                    index,
                    block,
                    "no assistant turn with calls immediately precedes this result",
                )
            )
        elif block.kind is BlockKind.TOOL_CALL:
            found.append(
                _violation(
                    ViolationKind.MISPLACED_CALL, index, block, "a tool call outside an assistant"
                )
            )


def _read(messages: Sequence[object], cache: InfoCache | None) -> list[MessageInfo]:
    return cache.infos(messages) if cache is not None else [inspect_message(m) for m in messages]


def pairing_violations(
    messages: Sequence[object], *, cache: InfoCache | None = None
) -> list[PairingViolation]:
    """Every pairing rule ``messages`` breaks; empty when a provider would accept them.

    Args:
        messages: Message dicts in any supported format (mixed formats are judged too).
            Non-dict entries are tolerated and never reported.
        cache: Reuse message readings across calls (an agent loop's turns share dicts).

    Returns:
        The violations in message order, each naming its kind, message, block and tool id.
    """
    found = _analyse(_read(messages, cache))
    found.sort(key=lambda v: v.message_index)  # stable: block order kept within a message
    return found


def repair_tool_pairing(messages: Sequence[object], *, cache: InfoCache | None = None) -> list[Any]:
    """Return a new list in which every call has its result and every result its call.

    Repair works block by block: a user message holding three results, one orphaned, keeps
    the other two; an assistant message loses only its unanswered calls. A message is dropped
    only when nothing meaningful is left in it (no text, call, result, image or unknown
    block), and system messages are never dropped. The caller's dicts are never modified:
    edited messages are shallow copies, untouched ones are returned as the same objects, so
    repairing a valid conversation returns an equal list of the very same dicts.

    Invalid results are removed before unanswered calls, because removing a result-only
    message can make a later, misplaced result valid again; the two steps repeat until
    nothing is left to remove. ``cache`` is as for :func:`pairing_violations`.
    """
    current: list[Any] = list(messages)
    infos = _read(current, cache)
    # Every pass removes at least one block, so this bound is never the reason to stop.
    for _ in range(sum(len(i.blocks) for i in infos) + 2):
        found = _analyse(infos)
        if not found:
            return current
        results = [v for v in found if v.kind in _RESULT_KINDS]
        # A result's fate never depends on the calls we would remove, so results go first.
        batch = results or found
        current, infos = _remove(current, infos, batch)
    raise AssertionError("repair_tool_pairing did not converge")  # pragma: no cover


def _remove(
    messages: list[Any], infos: list[MessageInfo], violations: Sequence[PairingViolation]
) -> tuple[list[Any], list[MessageInfo]]:
    cut: dict[int, set[tuple[str, int]]] = {}
    for v in violations:
        cut.setdefault(v.message_index, set()).add((v.field, v.block_index))
    out: list[Any] = []
    out_infos: list[MessageInfo] = []
    for index, (message, info) in enumerate(zip(messages, infos, strict=True)):
        spots = cut.get(index)
        if not spots:
            out.append(message)
            out_infos.append(info)
            continue
        edited = _without_blocks(message, info, spots)
        if edited is None:
            continue
        edited_info = inspect_message(edited)
        if info.kind is not RoleKind.SYSTEM and not _meaningful(edited_info):
            continue
        out.append(edited)
        out_infos.append(edited_info)
    return out, out_infos


def _without_blocks(
    message: Mapping[str, Any], info: MessageInfo, spots: set[tuple[str, int]]
) -> dict[str, Any] | None:
    """A shallow copy of ``message`` without the blocks at ``spots``; None drops it whole."""
    if ("", -1) in spots and info.kind is RoleKind.TOOL:
        return None  # the message is the result
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


def _meaningful(info: MessageInfo) -> bool:
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
