"""Messages as the provider SDKs hand them over: objects read as the dicts memctx handles.

An agent built on the OpenAI or Anthropic Python SDK keeps the response objects in its
history (``ChatCompletionMessage`` with ``tool_calls``, Anthropic ``Message`` with
``TextBlock`` / ``ToolUseBlock`` content, or dict params whose ``content`` mixes blocks as
objects and dicts). Every reader of :mod:`.anatomy` reads dicts, so the hooks read each such
object once as its dict form, duck-typed (``model_dump(mode="python", exclude_none=True)``,
which both SDKs' pydantic models have) so memctx never imports an SDK, and give back:

- the caller's own object for every message memctx kept unchanged (identity preserved);
- the dict form for a message memctx changed (a cut or masked tool result, a pairing
  repair): both SDKs accept dict params, and an edited copy is a new message anyway. An
  Anthropic ``Message`` (a response: ``id``, ``model``, ``usage``, ...) reads as its
  request form ``{"role", "content"}``, since a request refuses the response-only fields.

Objects are assumed not to be edited in place between turns (SDK response objects are not);
a dict holding objects is read again when its ``content`` list is replaced or resized.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from .anatomy import message_fingerprint

__all__ = ["SdkMessages", "as_message_dict", "describe_unreadable"]

# Where a message keeps lists whose entries may be SDK objects.
_BLOCK_LISTS = ("content", "tool_calls", "parts")


def as_message_dict(item: object) -> dict[str, Any] | None:
    """``item`` read as a message dict, or None when it is no message at all.

    A dict without objects inside is returned as itself; a dict with blocks as objects, a
    read-only mapping or an SDK object gives a new dict. ``None``, strings, numbers and
    anything without ``model_dump`` are no message (None).
    """
    if isinstance(item, dict):
        return _with_blocks_read(item)
    if isinstance(item, Mapping):
        return _with_blocks_read(dict(item))
    dumped = _dump(item)
    if not isinstance(dumped, dict):
        return None
    if dumped.get("type") == "message" and "model" in dumped and "role" in dumped:
        # An Anthropic response Message: its request form (a request refuses id, model, usage).
        return {"role": dumped["role"], "content": dumped.get("content")}
    return _with_blocks_read(dumped)


def _dump(item: object) -> Any:
    dump = getattr(item, "model_dump", None)
    if not callable(dump):
        return None
    try:
        return dump(mode="python", exclude_none=True)
    except Exception:  # a model_dump with another signature, or one that fails: unreadable
        return None


def _with_blocks_read(message: dict[str, Any]) -> dict[str, Any]:
    """``message``, or a copy with its object blocks read as dicts when it holds any."""
    edited: dict[str, Any] | None = None
    for key in _BLOCK_LISTS:
        items = message.get(key)
        if not isinstance(items, list):
            continue
        if all(isinstance(b, (dict, str)) for b in items):
            continue
        read = [b if isinstance(b, (dict, str)) else _block(b) for b in items]
        edited = edited if edited is not None else dict(message)
        edited[key] = read
    return message if edited is None else edited


def _block(block: object) -> Any:
    if isinstance(block, Mapping):
        return dict(block)
    dumped = _dump(block)
    return dumped if isinstance(dumped, dict) else block


def describe_unreadable(message: object) -> str:
    """What a message memctx cannot read looks like, without its content: the type name and,
    for a mapping, its keys and ``type`` (never a value that could hold text or secrets)."""
    name = type(message).__name__
    if not isinstance(message, Mapping):
        return name
    keys = sorted(str(k)[:40] for k in list(message)[:20])
    item_type = message.get("type")
    shown = f" type={item_type[:40]!r}" if isinstance(item_type, str) else ""
    return f"{name} keys={keys}{shown}"


class SdkMessages:
    """Reads a hook's messages as dicts and gives the caller's objects back.

    One per session: the same object reads as the same dict every turn, so the per-message
    caches (:class:`~memctx.messages.InfoCache`, token counts) keep hitting.

    Args:
        max_entries: Bound on remembered objects; cleared when reached.
    """

    def __init__(self, max_entries: int = 200_000) -> None:
        self._max = max_entries
        # id(original) -> (original, fingerprint for a dict, its dict form)
        self._read: dict[int, tuple[object, tuple[int, ...] | None, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def read(self, messages: list[Any]) -> tuple[list[Any], dict[int, object]]:
        """``messages`` with every readable item as a dict and the rest (``None``, strings,
        numbers, objects without ``model_dump``) left as they are, for the caller to drop;
        and, by ``id`` of each dict read from something else, that original.

        ``messages`` itself with an empty map when every item already is a plain dict.
        """
        originals: dict[int, object] = {}
        out: list[Any] | None = None
        for index, item in enumerate(messages):
            read = self._one(item)
            if read is item or read is None:
                if out is not None:
                    out.append(item)
                continue
            if out is None:
                out = list(messages[:index])
            out.append(read)
            originals[id(read)] = item
        return (messages if out is None else out), originals

    def _one(self, item: object) -> dict[str, Any] | None:
        if isinstance(item, dict) and all(
            not isinstance(v := item.get(k), list) or all(isinstance(b, (dict, str)) for b in v)
            for k in _BLOCK_LISTS
        ):
            return item  # the usual case: a plain dict message
        key = id(item)
        fingerprint = message_fingerprint(item) if isinstance(item, Mapping) else None
        entry = self._read.get(key)
        if entry is not None and entry[0] is item and entry[1] == fingerprint:
            return entry[2]
        read = as_message_dict(item)
        if read is None:
            return None
        with self._lock:
            if len(self._read) >= self._max:
                self._read.clear()
            self._read[key] = (item, fingerprint, read)
        return read

    @staticmethod
    def restore(out: list[Any], originals: Mapping[int, object]) -> list[Any]:
        """``out`` with each dict read from a caller's object replaced by that object; a
        changed message (a new dict) stays a dict."""
        if not originals:
            return out
        restored = []
        for message in out:
            original = originals.get(id(message))
            restored.append(message if original is None else original)
        return restored
