"""Read any supported message shape without converting it.

memctx takes and returns the caller's own message dicts. This module is the one place that
knows what the shapes look like:

- OpenAI chat: ``tool_calls[].id`` on assistant messages, ``role: "tool"`` + ``tool_call_id``
  (SWE-agent trajectories also write ``tool_call_ids: [...]``).
- Anthropic: ``tool_use {id}`` blocks in assistant content, ``tool_result {tool_use_id}`` blocks
  in user content; ``thinking`` blocks travel with their assistant message.
- Pi/OpenClaw: ``toolCall`` / ``toolUse`` / ``tool_use`` / ``functionCall`` blocks,
  ``role: "toolResult"`` with ``toolCallId``.
- Gemini: ``parts`` with ``functionCall`` / ``functionResponse`` (ids optional), roles
  ``user`` / ``model`` / ``function``.
- OpenAI Responses API / Agents SDK items: ``{"type": "message", "role", "content":
  [{"type": "input_text" | "output_text"}]}`` (or an easy-input ``{"role", "content"}``),
  and role-less items that are one block each: calls (an assistant turn) ``function_call``,
  ``custom_tool_call``, ``computer_call``, ``local_shell_call``, ``shell_call``,
  ``apply_patch_call`` (``call_id``; ``arguments`` / ``input`` / ``action`` /
  ``operation``), their outputs (a tool result) ``<call type>_output`` (``call_id``, for
  ``local_shell_call_output`` also ``id``; ``output``), and ``reasoning`` (``summary`` /
  ``content``; assistant thinking, which the API requires to stay with the item after it).
  Their one block is located at field :data:`ITEM`.

Everything here is read-only and total: malformed input (non-dict entries, a missing role,
``content: None``, unknown block types, a ``type`` that is a list, an int too large for
``str``, nesting deeper than the interpreter's stack) yields an ``UNKNOWN`` kind, empty fields
or a placeholder text, never an exception. The one writer, :func:`with_tool_id`, returns an
edited copy and mirrors the readers here, so what it writes is what they read back.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "ITEM",
    "TEXT_OUTPUT_ITEMS",
    "TEXT_TYPES",
    "BlockKind",
    "BlockRef",
    "InfoCache",
    "MessageInfo",
    "RoleKind",
    "blocks_token_text",
    "inspect_message",
    "iter_blocks",
    "leading_system_count",
    "message_fingerprint",
    "message_role",
    "message_text",
    "role_kind",
    "token_text",
    "with_tool_id",
]


class RoleKind(StrEnum):
    """What a message is, independent of its provider's spelling."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"  # a message that is itself a tool result (OpenAI ``tool``, Pi ``toolResult``)
    UNKNOWN = "unknown"


class BlockKind(StrEnum):
    TEXT = "text"
    THINKING = "thinking"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    IMAGE = "image"
    OTHER = "other"


_ROLE_KINDS: dict[str, RoleKind] = {
    "system": RoleKind.SYSTEM,
    "developer": RoleKind.SYSTEM,
    "user": RoleKind.USER,
    "human": RoleKind.USER,
    "assistant": RoleKind.ASSISTANT,
    "model": RoleKind.ASSISTANT,  # Gemini
    "ai": RoleKind.ASSISTANT,
    "tool": RoleKind.TOOL,
    "toolResult": RoleKind.TOOL,
    "tool_result": RoleKind.TOOL,
    "function": RoleKind.TOOL,  # Gemini's and OpenAI's legacy function-result role
}

# Block ``type`` spellings. Pi/OpenClaw use several names for the same thing.
_CALL_TYPES = frozenset({"tool_use", "toolUse", "toolCall", "tool_call", "functionCall"})
_RESULT_TYPES = frozenset({"tool_result", "toolResult", "functionResponse", "function_response"})
# Text blocks: Chat/Anthropic ``text``, the Responses API's input/output/reasoning texts.
TEXT_TYPES = frozenset({"text", "input_text", "output_text", "summary_text", "reasoning_text"})
_THINKING_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning"})
_IMAGE_TYPES = frozenset({"image", "image_url", "input_image", "document", "inlineData"})

# Where a container keeps its blocks: a message's ``content`` list, an OpenAI assistant's
# ``tool_calls`` list, or Gemini's ``parts`` list.
CONTENT, TOOL_CALLS, PARTS = "content", "tool_calls", "parts"
# A Responses API item that is itself one block (a function call, its output, reasoning):
# the block's field. Removing that block removes the item.
ITEM = "item"

# Responses API call items: where each keeps what the call does.
_ITEM_CALL_ARGUMENTS = {
    "function_call": ("arguments",),
    "custom_tool_call": ("input",),
    "computer_call": ("action", "actions"),
    "local_shell_call": ("action",),
    "shell_call": ("action",),
    "apply_patch_call": ("operation",),
}
# Their outputs: where each keeps the id of the call it answers, the first key present
# (a local shell output carries it as ``id`` in the API's schema, as ``call_id`` from the
# Agents SDK).
_ITEM_RESULT_ID = {
    "function_call_output": ("call_id",),
    "custom_tool_call_output": ("call_id",),
    "computer_call_output": ("call_id",),
    "local_shell_call_output": ("call_id", "id"),
    "shell_call_output": ("call_id",),
    "apply_patch_call_output": ("call_id",),
}
# Outputs whose ``output`` is a string, the only ones a text edit may rewrite (a computer
# screenshot or a shell call's list of results would no longer be valid as a string).
TEXT_OUTPUT_ITEMS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "apply_patch_call_output",
    }
)
_ITEM_CALL_TYPES = frozenset(_ITEM_CALL_ARGUMENTS)
_ITEM_RESULT_TYPES = frozenset(_ITEM_RESULT_ID)
# Responses API item types with no ``role``: the role each stands for.
_ITEM_ROLES = {
    **dict.fromkeys(_ITEM_CALL_TYPES, "assistant"),
    "reasoning": "assistant",
    **dict.fromkeys(_ITEM_RESULT_TYPES, "tool"),
}


def _item_type(message: Mapping[str, Any]) -> str | None:
    """The ``type`` of a role-less Responses API item, or None for anything else."""
    if "role" in message:
        return None
    itype = message.get("type")
    return itype if isinstance(itype, str) and itype in _ITEM_ROLES else None


def message_role(message: object) -> str:
    """The role ``message`` has or, for a role-less Responses item, stands for; ``""`` when
    unreadable."""
    if not isinstance(message, Mapping):
        return ""
    role = message.get("role")
    if isinstance(role, str):
        return role
    itype = _item_type(message)
    return _ITEM_ROLES[itype] if itype is not None else ""


@dataclass(frozen=True, slots=True)
class BlockRef:
    """One readable piece of a message, and where it lives.

    ``field`` and ``index`` locate the block (``("content", 2)``, ``("tool_calls", 0)``,
    ``("parts", 1)``); ``field`` is ``""`` for a whole-message tool result (OpenAI ``tool``,
    Pi ``toolResult``) or for a plain string ``content``.
    """

    kind: BlockKind
    field: str
    index: int
    text: str = ""
    tool_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    raw_type: str = ""


@dataclass(frozen=True, slots=True)
class MessageInfo:
    """Everything memctx needs to know about one message."""

    role: str
    kind: RoleKind
    text: str
    blocks: tuple[BlockRef, ...]
    tool_call_ids: tuple[str | None, ...]
    tool_result_ids: tuple[str | None, ...]
    tool_names: tuple[str, ...]
    is_error: bool

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_call_ids)

    @property
    def has_tool_results(self) -> bool:
        return bool(self.tool_result_ids)

    @property
    def is_reasoning_item(self) -> bool:
        """A Responses ``reasoning`` item: the API refuses it without the item after it,
        and that item without it."""
        return (
            len(self.blocks) == 1
            and self.blocks[0].field == ITEM
            and self.blocks[0].kind is BlockKind.THINKING
        )

    @property
    def is_tool_result_only(self) -> bool:
        """True when the message carries tool results and no text of its own."""
        if not self.tool_result_ids:
            return False
        return not any(b.kind is BlockKind.TEXT and b.text.strip() for b in self.blocks)


def role_kind(message: object) -> RoleKind:
    """Classify a message's role; anything unreadable is ``UNKNOWN``."""
    if not isinstance(message, Mapping):
        return RoleKind.UNKNOWN
    role = message.get("role")
    if not isinstance(role, str):
        itype = _item_type(message) if role is None else None
        if itype is None:
            return RoleKind.UNKNOWN
        role = _ITEM_ROLES[itype]
    return _ROLE_KINDS.get(role, RoleKind.UNKNOWN)


def _as_text(value: Any) -> str:
    """Flatten a tool result payload or similar value into readable text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (_block_text(v) for v in value) if t)
    if isinstance(value, Mapping):
        return _block_text(value)
    return _json_or_str(value)


def _block_text(block: Any) -> str:
    """Text of one nested block inside a tool result: its text, or a JSON dump otherwise."""
    if isinstance(block, str):
        return block
    if not isinstance(block, Mapping):
        return "" if block is None else _json_or_str(block)
    btype = _type_of(block)
    if btype in _IMAGE_TYPES:
        return ""
    text = block.get("text")
    if isinstance(text, str) and (btype in TEXT_TYPES or (btype is None and len(block) == 1)):
        return text
    return _json_or_str(block)


def _type_of(block: Mapping[str, Any]) -> str | None:
    """A block's ``type``: None when absent, ``""`` when it is not a string.

    A list or dict ``type`` would make the set lookups below raise (unhashable); any other
    non-string is no type memctx knows either.
    """
    btype = block.get("type")
    if btype is None or isinstance(btype, str):
        return btype
    return ""


def _json_or_str(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        # Not JSON (sets, objects), an int past str()'s digit limit, or nesting deeper than
        # the encoder's recursion limit: fall back to what str() can still show.
        return _safe_str(value)


def _safe_str(value: Any) -> str:
    """``str(value)``, or a stand-in when even that raises (hostile input must not)."""
    try:
        return str(value)
    except (ValueError, RecursionError):
        if isinstance(value, int):
            return hex(value)  # an int too long for decimal str(): hex has no digit limit
        return f"<unreadable {type(value).__name__}>"


def _call_arguments_text(args: Any) -> str:
    if args is None:
        return ""
    if isinstance(args, str):
        return args
    return _json_or_str(args)


def _content_block(block: Any, index: int, field: str) -> BlockRef:
    """Read one entry of a ``content`` (or Gemini ``parts``) list."""
    if isinstance(block, str):
        return BlockRef(BlockKind.TEXT, field, index, text=block, raw_type="str")
    if not isinstance(block, Mapping):
        return BlockRef(BlockKind.OTHER, field, index, raw_type=type(block).__name__)
    btype = block.get("type")
    if btype is not None and not isinstance(btype, str):
        btype = ""  # as _type_of, inline: this runs for every block of every message
    raw_type = btype or ""

    # Gemini parts carry no ``type``: the key names the part.
    if btype is None:
        if isinstance(block.get("functionCall"), Mapping):
            call = block["functionCall"]
            return BlockRef(
                BlockKind.TOOL_CALL,
                field,
                index,
                text=_call_arguments_text(call.get("args")),
                tool_id=_str_or_none(call.get("id")),
                tool_name=_str_or_none(call.get("name")),
                raw_type="functionCall",
            )
        if isinstance(block.get("functionResponse"), Mapping):
            resp = block["functionResponse"]
            return BlockRef(
                BlockKind.TOOL_RESULT,
                field,
                index,
                text=_as_text(resp.get("response")),
                tool_id=_str_or_none(resp.get("id")),
                tool_name=_str_or_none(resp.get("name")),
                is_error=_looks_error(resp.get("response")),
                raw_type="functionResponse",
            )
        if isinstance(block.get("text"), str):
            kind = BlockKind.THINKING if block.get("thought") is True else BlockKind.TEXT
            return BlockRef(kind, field, index, text=block["text"], raw_type="text")
        if "inlineData" in block or "fileData" in block:
            return BlockRef(BlockKind.IMAGE, field, index, raw_type="inlineData")
        return BlockRef(BlockKind.OTHER, field, index)

    if btype in TEXT_TYPES:
        return BlockRef(BlockKind.TEXT, field, index, text=_str(block.get("text")), raw_type=btype)
    if btype in _THINKING_TYPES:
        text = block.get("thinking", block.get("text", block.get("summary")))
        return BlockRef(BlockKind.THINKING, field, index, text=_as_text(text), raw_type=btype)
    if btype in _CALL_TYPES:
        args = block.get("input", block.get("arguments", block.get("args")))
        nested = block.get("functionCall")
        if isinstance(nested, Mapping):  # {"type": "functionCall", "functionCall": {...}}
            args = nested.get("args", args)
        name = block.get("name") or (nested.get("name") if isinstance(nested, Mapping) else None)
        call_id = block.get("id")
        if call_id is None and isinstance(nested, Mapping):
            call_id = nested.get("id")
        return BlockRef(
            BlockKind.TOOL_CALL,
            field,
            index,
            text=_call_arguments_text(args),
            tool_id=_str_or_none(call_id),
            tool_name=_str_or_none(name),
            raw_type=btype,
        )
    if btype in _RESULT_TYPES:
        rid = block.get("tool_use_id", block.get("toolCallId", block.get("tool_call_id")))
        if rid is None:
            rid = block.get("id")
        payload = block.get("content", block.get("output", block.get("response")))
        return BlockRef(
            BlockKind.TOOL_RESULT,
            field,
            index,
            text=_as_text(payload),
            tool_id=_str_or_none(rid),
            tool_name=_str_or_none(block.get("name") or block.get("toolName")),
            is_error=bool(block.get("is_error") or block.get("isError")),
            raw_type=btype,
        )
    if btype in _IMAGE_TYPES:
        return BlockRef(BlockKind.IMAGE, field, index, raw_type=btype)
    # Unknown block types pass through; their readable text still counts for tokens/search.
    text = block.get("text")
    return BlockRef(
        BlockKind.OTHER,
        field,
        index,
        text=text if isinstance(text, str) else "",
        raw_type=raw_type,
    )


def _openai_call(call: Any, index: int) -> BlockRef:
    if not isinstance(call, Mapping):
        return BlockRef(BlockKind.OTHER, TOOL_CALLS, index)
    fn = call.get("function")
    fn = fn if isinstance(fn, Mapping) else {}
    return BlockRef(
        BlockKind.TOOL_CALL,
        TOOL_CALLS,
        index,
        text=_call_arguments_text(fn.get("arguments")),
        tool_id=_str_or_none(call.get("id")),
        tool_name=_str_or_none(fn.get("name") or call.get("name")),
        raw_type="tool_calls",
    )


def iter_blocks(message: object) -> Iterator[BlockRef]:
    """Yield every readable piece of ``message`` in order (text, calls, results, ...)."""
    if not isinstance(message, Mapping):
        return
    itype = _item_type(message)
    if itype is not None:
        yield _item_block(message, itype)
        return
    kind = role_kind(message)
    content = message.get("content")

    if kind is RoleKind.TOOL and not _content_has_results(content):
        # OpenAI ``tool`` / Pi ``toolResult`` / legacy ``function``: the message is the result.
        rid = message.get("tool_call_id", message.get("toolCallId"))
        ids = message.get("tool_call_ids")
        if rid is None and isinstance(ids, list) and ids:
            rid = ids[0]
        parts = message.get("parts")
        if isinstance(parts, list):  # Gemini ``function`` role: results live in parts
            for i, part in enumerate(parts):
                yield _content_block(part, i, PARTS)
            return
        yield BlockRef(
            BlockKind.TOOL_RESULT,
            "",
            -1,
            text=_as_text(content),
            tool_id=_str_or_none(rid),
            tool_name=_str_or_none(message.get("name") or message.get("toolName")),
            is_error=bool(message.get("isError") or message.get("is_error")),
            raw_type=str(message.get("role")),
        )
        return

    if isinstance(content, str):
        if content:
            yield BlockRef(BlockKind.TEXT, "", -1, text=content, raw_type="str")
    elif isinstance(content, list):
        for i, block in enumerate(content):
            yield _content_block(block, i, CONTENT)
    elif isinstance(content, Mapping):  # a single block instead of a list
        ref = _content_block(content, -1, "")
        yield ref
    parts = message.get("parts")
    if isinstance(parts, list):
        for i, part in enumerate(parts):
            yield _content_block(part, i, PARTS)
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for i, call in enumerate(calls):
            yield _openai_call(call, i)
    legacy = message.get("function_call")
    if isinstance(legacy, Mapping):  # OpenAI's pre-tools function calling: no id
        yield BlockRef(
            BlockKind.TOOL_CALL,
            "function_call",
            -1,
            text=_call_arguments_text(legacy.get("arguments")),
            tool_name=_str_or_none(legacy.get("name")),
            raw_type="function_call",
        )


def _item_block(item: Mapping[str, Any], itype: str) -> BlockRef:
    """The one block a role-less Responses API item is."""
    if itype in _ITEM_CALL_TYPES:
        args = next((item[k] for k in _ITEM_CALL_ARGUMENTS[itype] if k in item), None)
        return BlockRef(
            BlockKind.TOOL_CALL,
            ITEM,
            -1,
            text=_call_arguments_text(args),
            tool_id=_str_or_none(item.get("call_id")),
            tool_name=_str_or_none(item.get("name")),
            raw_type=itype,
        )
    if itype in _ITEM_RESULT_TYPES:
        return BlockRef(
            BlockKind.TOOL_RESULT,
            ITEM,
            -1,
            text=_as_text(item.get("output")),
            tool_id=_str_or_none(item.get(_result_id_key(item, itype))),
            raw_type=itype,
        )
    # reasoning: its summary and (open models) its content are the text it costs
    text = "\n".join(t for t in (_as_text(item.get(k)) for k in ("summary", "content")) if t)
    return BlockRef(BlockKind.THINKING, ITEM, -1, text=text, raw_type=itype)


def _result_id_key(item: Mapping[str, Any], itype: str) -> str:
    """Where a call or output item keeps its call's id (``call_id`` for every call)."""
    keys = _ITEM_RESULT_ID.get(itype, ("call_id",))
    return next((k for k in keys if k in item), keys[0])


def _content_has_results(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and _type_of(b) in _RESULT_TYPES for b in content
    )


def inspect_message(message: object) -> MessageInfo:
    """Read ``message`` once and return its role kind, text and tool ids.

    Never raises: a message that cannot be read (hostile or not JSON-like) is ``UNKNOWN``
    with no blocks, which pairing never judges and repair passes through.
    """
    try:
        return _inspect(message)
    except Exception:  # pragma: no cover - the readers are total for JSON-like input
        role = message.get("role") if isinstance(message, Mapping) else None
        return MessageInfo(
            role=role if isinstance(role, str) else "",
            kind=RoleKind.UNKNOWN,
            text="",
            blocks=(),
            tool_call_ids=(),
            tool_result_ids=(),
            tool_names=(),
            is_error=False,
        )


def _inspect(message: object) -> MessageInfo:
    blocks = tuple(iter_blocks(message))
    role = message_role(message)
    calls = [b for b in blocks if b.kind is BlockKind.TOOL_CALL]
    results = [b for b in blocks if b.kind is BlockKind.TOOL_RESULT]
    names = tuple(b.tool_name for b in calls + results if b.tool_name)
    text = "\n".join(b.text for b in blocks if b.kind is BlockKind.TEXT and b.text)
    return MessageInfo(
        role=role if isinstance(role, str) else "",
        kind=role_kind(message),
        text=text,
        blocks=blocks,
        tool_call_ids=tuple(b.tool_id for b in calls),
        tool_result_ids=tuple(b.tool_id for b in results),
        tool_names=names,
        is_error=any(b.is_error for b in results),
    )


def with_tool_id(message: Mapping[str, Any], block: BlockRef, tool_id: str) -> dict[str, Any]:
    """A shallow copy of ``message`` in which ``block`` (read from it) carries ``tool_id``.

    The writer of the id fields the readers above read, kept beside them so both agree:
    ``inspect_message`` of the copy reads ``tool_id`` at ``block``'s place and everything
    else as before. Only the containers on the way to the id (the list, the block, a nested
    ``functionCall`` / ``functionResponse``) are copied; ``message`` is never modified.

    Args:
        message: The message ``block`` was read from.
        block: A tool call or tool result of ``message``, as :func:`iter_blocks` located it.
        tool_id: The id to write.

    Returns:
        The edited copy.
    """
    edited = dict(message)
    if block.field == ITEM:
        edited[_result_id_key(message, block.raw_type)] = tool_id
        return edited
    if block.field == "":
        content = message.get(CONTENT)
        if role_kind(message) is RoleKind.TOOL:
            _set_whole_result_id(edited, tool_id)  # the message is the result
        elif isinstance(content, Mapping):
            edited[CONTENT] = _block_with_id(content, tool_id)
        return edited
    items = message.get(block.field)
    if isinstance(items, list) and 0 <= block.index < len(items):
        items = list(items)
        entry = items[block.index]
        if block.field == TOOL_CALLS:
            items[block.index] = {**entry, "id": tool_id} if isinstance(entry, Mapping) else entry
        else:
            items[block.index] = _block_with_id(entry, tool_id)
        edited[block.field] = items
    return edited


def _set_whole_result_id(message: dict[str, Any], tool_id: str) -> None:
    # Mirrors iter_blocks: tool_call_id, else toolCallId (the first present decides), and the
    # SWE-agent list tool_call_ids when that value is None.
    key = "tool_call_id" if "tool_call_id" in message else "toolCallId"
    ids = message.get("tool_call_ids")
    if message.get(key) is None and isinstance(ids, list) and ids:
        message["tool_call_ids"] = [tool_id, *ids[1:]]
    else:
        message[key] = tool_id


def _block_with_id(block: Any, tool_id: str) -> Any:
    """A copy of one content/parts entry with its call or result id set (mirrors the reader)."""
    if not isinstance(block, Mapping):
        return block
    btype = _type_of(block)
    if btype is None:  # Gemini: the id lives inside the functionCall / functionResponse
        for key in ("functionCall", "functionResponse"):
            nested = block.get(key)
            if isinstance(nested, Mapping):
                return {**block, key: {**nested, "id": tool_id}}
        return dict(block)
    if btype in _CALL_TYPES:
        nested = block.get("functionCall")
        if block.get("id") is None and isinstance(nested, Mapping):
            return {**block, "functionCall": {**nested, "id": tool_id}}
        return {**block, "id": tool_id}
    if btype in _RESULT_TYPES:
        for key in ("tool_use_id", "toolCallId", "tool_call_id"):
            if key in block:
                if block[key] is not None:
                    return {**block, key: tool_id}
                break  # the reader falls back to "id" when the first present key is None
    return {**block, "id": tool_id}


def message_fingerprint(message: Mapping[str, Any]) -> tuple[int, ...]:
    """A cheap check that a dict seen before was not edited in place since.

    Covers replacing or resizing ``content`` / ``tool_calls`` / ``parts`` and changing the
    role; editing a block inside an unchanged list is not seen (memctx itself never edits
    caller dicts; callers that do should pass fresh dicts).
    """
    out: list[int] = [id(message.get("role"))]
    for key in ("content", "tool_calls", "parts"):
        value = message.get(key)
        out += (id(value), len(value) if isinstance(value, (str, list)) else -1)
    return tuple(out)


class InfoCache:
    """``inspect_message`` with memory: an agent loop passes the same dicts every turn.

    Keyed by the identity of the message dict and checked with :func:`message_fingerprint`,
    so a turn that appends two messages to a 2,000-message context reads two messages.
    The cached dicts are held, so their ids cannot be reused by other objects.

    Args:
        max_entries: Bound on remembered messages; the cache is cleared when it is reached.
    """

    def __init__(self, max_entries: int = 200_000) -> None:
        self._max = max_entries
        self._entries: dict[int, tuple[object, tuple[int, ...], MessageInfo]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def info(self, message: object) -> MessageInfo:
        """The same result as :func:`inspect_message`, cached per message dict."""
        if not isinstance(message, Mapping):
            return inspect_message(message)
        key = id(message)
        fingerprint = message_fingerprint(message)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is message and entry[1] == fingerprint:
            self.hits += 1
            return entry[2]
        info = inspect_message(message)
        with self._lock:
            self.misses += 1
            if len(self._entries) >= self._max:
                self._entries.clear()
            self._entries[key] = (message, fingerprint, info)
        return info

    def infos(self, messages: Sequence[object]) -> list[MessageInfo]:
        return [self.info(m) for m in messages]


def message_text(message: object) -> str:
    """The human-readable text of a message: text blocks, and tool results' payloads.

    Tool-call arguments and thinking are left out: this is the text a reader (or BM25)
    should see. Use :func:`token_text` for everything that costs tokens.
    """
    pieces = [
        b.text
        for b in iter_blocks(message)
        if b.kind in (BlockKind.TEXT, BlockKind.TOOL_RESULT) and b.text
    ]
    return "\n".join(pieces)


def token_text(message: object) -> str:
    """Every piece of a message that a provider bills: text, thinking, tool names + inputs."""
    return blocks_token_text(iter_blocks(message))


def blocks_token_text(blocks: Iterable[BlockRef]) -> str:
    """:func:`token_text` of already-read blocks (e.g. a cached ``MessageInfo.blocks``)."""
    pieces: list[str] = []
    for b in blocks:
        if b.kind is BlockKind.TOOL_CALL:
            pieces.append(f"{b.tool_name or ''} {b.text}")
        elif b.text:
            pieces.append(b.text)
    return "\n".join(pieces)


def _looks_error(response: Any) -> bool:
    return isinstance(response, Mapping) and "error" in response


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _str_or_none(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return _safe_str(value)


def leading_system_count(messages: Sequence[object], infos: InfoCache) -> int:
    """How many system messages open ``messages`` (a system prompt, always kept in place)."""
    head = 0
    while head < len(messages) and infos.info(messages[head]).kind is RoleKind.SYSTEM:
        head += 1
    return head
