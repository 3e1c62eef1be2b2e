"""The tool-pairing rules, judged the way the providers judge them.

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
- The results come first (``result_not_first``). Anthropic merges the window's user messages
  into one turn and rejects it unless it *begins* with the results ("Did not find 1
  tool_result block(s) at the beginning of this message"): a result after any text, image or
  other block of that merged turn breaks the rule. A whole-message result (OpenAI
  ``role: tool``, Pi ``toolResult``) must sit in the unbroken run of tool messages right
  after the assistant message, before any user message, as OpenAI requires.
- A whole-message result must answer the *last* assistant message of the turn: answering an
  earlier one, it is ``misplaced_result``.
- A call and its result are written in one provider's shape (``format_mismatch``): an OpenAI
  ``tool_calls`` entry is answered by a ``role: tool`` message, an Anthropic ``tool_use`` by a
  ``tool_result`` block (or, as Pi writes ``tool_use`` too, a ``toolResult`` message), a Pi
  ``toolCall`` by a ``toolResult`` message, a Gemini ``functionCall`` by a
  ``functionResponse``. No provider accepts an answer in another's shape.
- One result per call (``duplicate_result``); call ids unique in the conversation
  (``duplicate_call``); calls only in assistant messages and results only in user/tool ones.
- Calls without ids (Gemini, OpenAI's legacy ``function_call``) pair by name, in order.

System messages and messages whose role cannot be read are never judged, edited or dropped;
they end an answer window, because a provider would not accept them there either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from .anatomy import ITEM, BlockKind, BlockRef, MessageInfo, RoleKind

__all__ = [
    "ANSWER_WINDOW_KINDS",
    "REMOVABLE_RESULT_KINDS",
    "PairingViolation",
    "ViolationKind",
    "find_violations",
]


class ViolationKind(StrEnum):
    MISSING_RESULT = "missing_result"  # a call nobody answered
    ORPHAN_RESULT = "orphan_result"  # a result whose call is not in the preceding turn
    MISPLACED_RESULT = "misplaced_result"  # right call, wrong place for this provider shape
    DUPLICATE_RESULT = "duplicate_result"  # a second answer to one call
    DUPLICATE_CALL = "duplicate_call"  # a call id already used earlier
    MISPLACED_CALL = "misplaced_call"  # a call outside an assistant message
    RESULT_NOT_FIRST = "result_not_first"  # a valid answer after text or a user message
    FORMAT_MISMATCH = "format_mismatch"  # call and result in two different providers' shapes


# Results that no reordering can make valid: repair removes them.
REMOVABLE_RESULT_KINDS = frozenset(
    {
        ViolationKind.ORPHAN_RESULT,
        ViolationKind.MISPLACED_RESULT,
        ViolationKind.DUPLICATE_RESULT,
        ViolationKind.FORMAT_MISMATCH,
    }
)

# The role kinds of an answer window.
ANSWER_WINDOW_KINDS = (RoleKind.USER, RoleKind.TOOL)
_ASSISTANT, _USER, _TOOL = RoleKind.ASSISTANT, RoleKind.USER, RoleKind.TOOL


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


# Provider shapes as bits: a call accepts the result shapes in its mask.
_OPENAI, _ANTHROPIC, _PI, _GEMINI, _RESPONSES = 1, 2, 4, 8, 16
_ANY = _OPENAI | _ANTHROPIC | _PI | _GEMINI | _RESPONSES
_CALL_SHAPES = {
    "tool_calls": _OPENAI,
    "function_call": _OPENAI,
    "tool_use": _ANTHROPIC | _PI,  # Pi spells its calls tool_use too, answered by toolResult
    "toolCall": _PI,
    "toolUse": _PI,
    "tool_call": _PI,
    # A typed Pi functionCall block and an untyped Gemini part read alike in ``content``;
    # in ``parts`` it is Gemini's (see _call_shapes).
    "functionCall": _PI | _GEMINI,
}
_BLOCK_RESULT_SHAPES = {"tool_result": _ANTHROPIC, "functionResponse": _GEMINI}
_MESSAGE_RESULT_SHAPES = {"tool": _OPENAI, "function": _OPENAI}  # other roles: Pi's toolResult


def _call_shapes(call: BlockRef) -> int:
    if call.field == "parts":
        return _GEMINI
    if call.field == ITEM:  # a Responses function_call item
        return _RESPONSES
    return _CALL_SHAPES.get(call.raw_type, _ANY)


def _result_shape(result: BlockRef, whole_message: bool) -> int:
    if result.field == ITEM:  # a Responses function_call_output item
        return _RESPONSES
    if whole_message and result.field == "":  # the message is the result: raw_type is its role
        return _MESSAGE_RESULT_SHAPES.get(result.raw_type, _PI)
    return _BLOCK_RESULT_SHAPES.get(result.raw_type, _ANY)


# Each call spelling's usual answer: the common case costs one lookup on a string.
_USUAL_ANSWER = {
    "tool_calls": "tool",  # an OpenAI tool_calls entry, a role "tool" message
    "function_call": "function",
    "tool_use": "tool_result",
    "toolCall": "toolResult",
    "functionCall": "functionResponse",
}
# Any other combination of spellings, judged once: they are few (bounded by the type names
# the anatomy knows).
_COMPATIBLE: dict[tuple[str, str, str, str, bool], bool] = {}


def _learn_compatible(call: BlockRef, result: BlockRef, whole_message: bool) -> bool:
    key = (call.raw_type, call.field, result.raw_type, result.field, whole_message)
    ok = _COMPATIBLE[key] = bool(_call_shapes(call) & _result_shape(result, whole_message))
    return ok


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
        """Pair ``result`` with a call; return the violation kind if it cannot be paired.

        ``only_msg``: for a whole-message result, the one assistant message it may answer.
        """
        idx = self.by_id.get(result.tool_id) if result.tool_id is not None else None
        if idx is None:
            idx = self._by_name(result)
        if idx is None:
            return ViolationKind.ORPHAN_RESULT
        msg, call = self.calls[idx]
        if _USUAL_ANSWER.get(call.raw_type) != result.raw_type:
            whole = only_msg is not None
            key = (call.raw_type, call.field, result.raw_type, result.field, whole)
            ok = _COMPATIBLE.get(key)
            if ok is None:
                ok = _learn_compatible(call, result, whole)
            if not ok:
                return ViolationKind.FORMAT_MISMATCH  # not an answer: the call stays open
        if only_msg is not None and msg != only_msg:
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


def find_violations(infos: Sequence[MessageInfo]) -> list[PairingViolation]:
    """Every rule broken by the messages read as ``infos``, in the order they are found.

    Args:
        infos: One reading per message (``inspect_message`` or an ``InfoCache``).

    Returns:
        The violations, grouped by turn; sort by ``message_index`` for message order.
    """
    # Runs over the whole context after every trim. Most messages hold no tool block (no
    # call id, no result id: the anatomy lists one per block), and such a message breaks no
    # rule: outside an answer window it is skipped, inside one it only shows whether the
    # merged user turn has content yet. Only messages with tool blocks are judged block by
    # block.
    found: list[PairingViolation] = []
    used_call_ids: set[str] = set()
    n = len(infos)
    i = 0
    while i < n:
        info = infos[i]
        kind = info.kind
        if kind is not _ASSISTANT:
            # a user/tool message that no assistant precedes
            if (kind is _USER or kind is _TOOL) and (info.tool_call_ids or info.tool_result_ids):
                _judge_unanswerable(i, info, found)
            i += 1
            continue
        turn_end = i
        calls: list[tuple[int, BlockRef]] = []
        while turn_end < n and (info := infos[turn_end]).kind is _ASSISTANT:
            if info.tool_call_ids or info.tool_result_ids:
                _collect_calls(turn_end, info, calls, used_call_ids, found)
            turn_end += 1
        pending = _TurnCalls(calls) if calls else None
        last_assistant = turn_end - 1
        j = turn_end
        seen_user = seen_content = False
        while j < n:
            info = infos[j]
            kind = info.kind
            if kind is not _USER and kind is not _TOOL:
                break
            if info.tool_call_ids or info.tool_result_ids:
                if pending is None:
                    pending = _TurnCalls(calls)
                seen_content = _judge_window_message(
                    j, info, pending, last_assistant, seen_user, seen_content, found
                )
            elif kind is _USER and info.blocks:
                seen_content = True  # text, an image or an unknown block: content
            seen_user = seen_user or kind is _USER
            j += 1
        if pending is not None:
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


def _collect_calls(
    index: int,
    info: MessageInfo,
    calls: list[tuple[int, BlockRef]],
    used_call_ids: set[str],
    found: list[PairingViolation],
) -> None:
    """Add the calls of one assistant message to its turn's ``calls``; report a call id
    used before and a result inside the assistant message."""
    for block in info.blocks:
        if block.kind is BlockKind.TOOL_CALL:
            if block.tool_id is not None and block.tool_id in used_call_ids:
                found.append(
                    _violation(
                        ViolationKind.DUPLICATE_CALL,
                        index,
                        block,
                        "this call id was already used by an earlier call",
                    )
                )
                continue
            if block.tool_id is not None:
                used_call_ids.add(block.tool_id)
            calls.append((index, block))
        elif block.kind is BlockKind.TOOL_RESULT:
            found.append(
                _violation(
                    ViolationKind.MISPLACED_RESULT,
                    index,
                    block,
                    "a tool result inside an assistant message",
                )
            )


def _judge_window_message(
    index: int,
    info: MessageInfo,
    pending: _TurnCalls,
    last_assistant: int,
    seen_user: bool,
    seen_content: bool,
    found: list[PairingViolation],
) -> bool:
    """Judge one message of an answer window; return whether the merged user turn has
    shown anything but results yet (text, an image, an unknown block)."""
    whole_message_result = info.kind is RoleKind.TOOL
    in_user_turn = info.kind is RoleKind.USER
    for block in info.blocks:
        if block.kind is BlockKind.TOOL_RESULT:
            # A Responses output item answers any call of the turn: each call is its own item.
            only = last_assistant if whole_message_result and block.field != ITEM else None
            problem = pending.answer(block, only)
            # A tool message must precede every user message; a result block every other
            # block of the merged user turn. It still answers its call: repair moves it.
            if problem is None and (seen_user if whole_message_result else seen_content):
                problem = ViolationKind.RESULT_NOT_FIRST
            if problem is not None:
                found.append(_violation(problem, index, block, _RESULT_DETAIL[problem]))
        elif block.kind is BlockKind.TOOL_CALL:
            # Not content: repair removes it, and it must not make a valid result look late.
            found.append(
                _violation(
                    ViolationKind.MISPLACED_CALL, index, block, "a tool call outside an assistant"
                )
            )
        elif in_user_turn:
            seen_content = True
    return seen_content


_RESULT_DETAIL = {
    ViolationKind.ORPHAN_RESULT: "no matching call in the immediately preceding assistant turn",
    ViolationKind.MISPLACED_RESULT: "a tool message must directly follow the message calling it",
    ViolationKind.DUPLICATE_RESULT: "this call already has a result",
    ViolationKind.FORMAT_MISMATCH: "the call and this result are in different providers' shapes",
    ViolationKind.RESULT_NOT_FIRST: (
        "results must open the turn answering the calls, before any text or user message"
    ),
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
