"""Writers of a block's text, kept beside the readers in :mod:`.anatomy`.

Masking an old output (``observation-masking``) and cutting an oversized one (overflow
recovery) both replace a tool result's text and nothing else: the copy must read back with
the same ids, name and error flag, so pairing is exactly the original's. Cutting a text
block too long for any window (a pasted log as the latest request) likewise replaces its
text and nothing else. The writers, here, mirror where :func:`~memctx.messages.iter_blocks`
reads each provider's payload from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .anatomy import ITEM, TEXT_OUTPUT_ITEMS, BlockRef, RoleKind, role_kind

__all__ = ["tool_result_text", "with_text_block", "with_tool_result_text"]

_RESULT_KEYS = ("content", "output", "response")  # where a typed result block keeps its payload


def tool_result_text(message: Any, ref: BlockRef) -> str:
    """The text of the tool result ``ref`` as :func:`with_tool_result_text` would write it.

    A Gemini response ``{"output": "…"}`` gives its string, not its JSON: a payload edited
    from the JSON would reach the model escaped twice. Every other shape gives the anatomy's
    text.
    """
    if ref.raw_type != "functionResponse" or not isinstance(message, Mapping):
        return ref.text
    items = message.get(ref.field) if ref.field else None
    block = items[ref.index] if isinstance(items, list) and 0 <= ref.index < len(items) else None
    nested = block.get("functionResponse") if isinstance(block, Mapping) else None
    response = nested.get("response") if isinstance(nested, Mapping) else None
    if isinstance(response, Mapping) and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return ref.text


def with_tool_result_text(message: Mapping[str, Any], ref: BlockRef, text: str) -> dict[str, Any]:
    """A copy of ``message`` in which the tool result ``ref`` (read from it) holds ``text``.

    The payload is written where the reader took it from, so the copy reads back with the
    same ids, name and error flag, and ``text`` as the result's text (Gemini: ``{"output":
    text}``, or ``{"error": text}`` when the response was an error). Only the containers on
    the way are copied; ``message`` is never modified.

    Args:
        message: The message ``ref`` was read from.
        ref: A tool result of ``message``, as :func:`~memctx.messages.iter_blocks` located it.
        text: The new payload.

    Returns:
        The edited copy.
    """
    edited = dict(message)
    if ref.field == ITEM:  # a Responses call output item
        if ref.raw_type in TEXT_OUTPUT_ITEMS:
            edited["output"] = text
        return edited
    if ref.field == "":
        content = message.get("content")
        if role_kind(message) is RoleKind.TOOL:  # the whole message is the result
            # Pi's toolResult holds a list of text blocks; OpenAI's tool message a string.
            listed = isinstance(content, list)
            edited["content"] = [{"type": "text", "text": text}] if listed else text
        elif isinstance(content, Mapping):  # a single block instead of a list
            edited["content"] = _with_text(content, text)
        return edited
    items = message.get(ref.field)
    if isinstance(items, list) and 0 <= ref.index < len(items):
        items = list(items)
        items[ref.index] = _with_text(items[ref.index], text)
        edited[ref.field] = items
    return edited


def with_text_block(message: Mapping[str, Any], ref: BlockRef, text: str) -> dict[str, Any]:
    """A copy of ``message`` in which the text block ``ref`` (read from it) holds ``text``.

    A plain string ``content`` is replaced; a block of a ``content`` or Gemini ``parts``
    list keeps every key but its ``text`` (a bare string entry becomes ``text``). Only the
    containers on the way are copied; ``message`` is never modified.
    """
    edited = dict(message)
    if ref.field == "":
        content = message.get("content")
        if isinstance(content, str):
            edited["content"] = text
        elif isinstance(content, Mapping):
            edited["content"] = {**content, "text": text}
        return edited
    items = message.get(ref.field)
    if isinstance(items, list) and 0 <= ref.index < len(items):
        items = list(items)
        block = items[ref.index]
        items[ref.index] = {**block, "text": text} if isinstance(block, Mapping) else text
        edited[ref.field] = items
    return edited


def _with_text(block: Any, text: str) -> Any:
    if not isinstance(block, Mapping):
        return block
    for key in _RESULT_KEYS:
        if key in block:
            return {**block, key: text}
    nested = block.get("functionResponse")
    if isinstance(nested, Mapping):  # Gemini: the payload is the response object
        was = nested.get("response")
        key = "error" if isinstance(was, Mapping) and "error" in was else "output"
        return {**block, "functionResponse": {**nested, "response": {key: text}}}
    return {**block, "content": text}
