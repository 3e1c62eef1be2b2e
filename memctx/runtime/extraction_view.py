"""What knowledge extraction reads of one message: a view bounded in size, whatever its role.

Extraction renders every message it is given and asks the model once per ~5,000-token chunk,
so its cost grows with the text: one 50 MB user message made 3,323 extraction calls and
19.9 M prompt tokens (a tool result of the same size was already cut to an excerpt when
rendered). The archive bounds what it indexes the same way (:mod:`memctx.runtime.pieces`);
here a message whose readable text is over ``max_chars`` is replaced, for extraction only,
by a copy that keeps its head and tail (half of ``max_chars`` each) around one
:func:`memctx.text.omission_note`. Its role, and the kind, ids, names and error flags of the
blocks kept, are the original's, so the model sees who said what exactly as before: a tool
output stays a tool output, it never becomes user text.

Lone surrogates (``"\\ud83d"``, half of an emoji cut apart) become U+FFFD in the view, as
the raw store writes them (:func:`memctx.store.clean_text`): one such character used to fail
the whole extraction batch it was in (``UnicodeEncodeError`` on the way to the model and
the response cache), losing the facts of every other message.

Blocks the rendering leaves out (thinking, images) are dropped from a cut copy; a message
within the bound is passed on as it is (the same object).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from memctx.extraction import DEFAULT_MAX_INPUT_TOKENS, prompt_overhead_tokens
from memctx.messages import BlockKind, BlockRef, inspect_message, with_tool_result_text
from memctx.store import clean_text
from memctx.text import omission_note

__all__ = ["extraction_calls_bound", "extraction_view"]

_RENDERED = (BlockKind.TEXT, BlockKind.TOOL_CALL, BlockKind.TOOL_RESULT)


def extraction_view(message: Mapping[str, Any], max_chars: int) -> Mapping[str, Any]:
    """``message``, or a copy of it with at most about ``max_chars`` of readable text and
    no lone surrogate.

    Args:
        message: A provider-format message dict (any shape :mod:`memctx.messages` reads).
        max_chars: Characters of block text kept at most (half from the start, half from the
            end); a message up to 1.5x this is kept whole, as the archive does.
    """
    blocks = [b for b in inspect_message(message).blocks if b.kind in _RENDERED]
    total = sum(len(b.text) for b in blocks)
    role, name = message.get("role"), message.get("name")
    # A lone surrogate ("\ud83d", half an emoji) cannot be encoded as UTF-8: sent on, it
    # failed the whole extraction batch (the request, the response cache); here it costs
    # one replacement character.
    dirty = any(clean_text(b.text) is not b.text for b in blocks) or any(
        isinstance(v, str) and clean_text(v) is not v for v in (role, name)
    )
    if total <= max_chars * 3 // 2:
        if not dirty:
            return message
        head, tail = [(b, b.text) for b in blocks], []
    elif len(blocks) == 1 and blocks[0].field == "" and not dirty:
        return _one_block(message, blocks[0], max_chars)
    else:
        head = _take(blocks, max_chars // 2, from_end=False)
        tail = _take(blocks[::-1], max_chars // 2, from_end=True)[::-1]
        # A block the head took whole is not repeated in the tail; one the head cut keeps
        # its end there too (two pieces of it around the note).
        whole = {id(b) for b, t in head if t is b.text}
        tail = [(b, t) for b, t in tail if id(b) not in whole]
    content = [_block(b, t) for b, t in head]
    if total > max_chars * 3 // 2:
        omitted = total - sum(len(t) for _, t in head) - sum(len(t) for _, t in tail)
        content.append({"type": "text", "text": omission_note(max(omitted, 0))})
    content.extend(_block(b, t) for b, t in tail)
    view: dict[str, Any] = {"role": clean_text(role) if isinstance(role, str) else role}
    view["content"] = content
    if isinstance(name, str):
        view["name"] = clean_text(name)
    return view


def extraction_calls_bound(max_message_tokens: int) -> int:
    """Extraction calls one message may cost with ``extractionMaxMessageTokens`` at
    ``max_message_tokens`` (and no answer needing a repair): its view, 1.5x the setting at
    most, over the conversation budget of one request, plus one for the request it shares
    with its neighbours."""
    budget = DEFAULT_MAX_INPUT_TOKENS - prompt_overhead_tokens()
    return math.ceil(1.5 * max_message_tokens / budget) + 1


def _one_block(message: Mapping[str, Any], block: BlockRef, max_chars: int) -> dict[str, Any]:
    """A message whose whole ``content`` is one text (or, for a tool message, one result)."""
    half = max_chars // 2
    text = block.text
    cut = f"{text[:half]}\n{omission_note(len(text) - 2 * half)}\n{text[-half:]}"
    if block.kind is BlockKind.TOOL_RESULT:
        return with_tool_result_text(message, block, cut)
    return {**message, "content": cut}


def _take(blocks: Sequence[BlockRef], budget: int, *, from_end: bool) -> list[tuple[BlockRef, str]]:
    """Blocks from the start of ``blocks`` while they fit ``budget`` characters, the first
    that does not cut to what is left (its end kept when ``from_end``)."""
    out: list[tuple[BlockRef, str]] = []
    for block in blocks:
        if budget <= 0:
            break
        text = block.text
        if len(text) > budget:
            text = text[-budget:] if from_end else text[:budget]
        out.append((block, text))
        budget -= len(text)
    return out


def _block(block: BlockRef, text: str) -> dict[str, Any]:
    """``block`` in the one shape every reader of :mod:`memctx.messages` knows (Anthropic's),
    its text and names free of lone surrogates."""
    text = clean_text(text)
    if block.kind is BlockKind.TOOL_CALL:
        name = clean_text(block.tool_name) if block.tool_name else block.tool_name
        return {"type": "tool_use", "id": block.tool_id, "name": name, "input": text}
    if block.kind is BlockKind.TOOL_RESULT:
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_id}
        out["content"] = text
        if block.tool_name:
            out["name"] = clean_text(block.tool_name)
        if block.is_error:
            out["is_error"] = True
        return out
    return {"type": "text", "text": text}
