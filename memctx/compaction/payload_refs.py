"""Oversized tool results kept whole on disk, a preview and a file ref left in their place.

Seed 004's tool-result guard. A tool result longer than ``toolPayloadMaxChars`` (20,000) is
redacted and written whole to ``tool-output/<name>.json`` under the store directory
(:func:`memctx.store.write_output_ref`); the message keeps the first
``toolPayloadPreviewChars`` (2,000) characters of the redacted text and a notice naming the
file, its size and sha256, and how to read it back::

    [memctx] Full tool output (150,000 chars, 150,000 bytes, sha256 <hex>) saved to
    tool-output/<name>.json; call read_output_ref("tool-output/<name>.json") for the rest.

(on one line). :func:`memctx.store.read_output_ref` reads it back, digest checked, and refuses
any ref not of that form; :func:`output_refs_in` lists the refs a conversation names, for the
harness to offer as a ``read_output_ref`` tool.

The name is the redacted text's sha256 (its first 32 hex digits), so the same payload is
written once and a second run changes nothing: a result that already ends with the notice is
left alone. Ids, names and error flags stay, so the tool pairing is the input's. A Pi
``toolResult`` keeps its ``details``' scalars (``status``, ``exitCode`` ...) and small values;
the large ones move into the file after the text, and ``details["outputRef"]`` says where.
A result holding an image is left alone (its text alone would lose the image), user and
assistant text is never touched, the caller's list and dicts never change, and a result that
cannot be written stays whole and is reported in :attr:`PayloadRefs.failed`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memctx.config import PlannerConfig
from memctx.errors import StoreError
from memctx.messages import (
    BlockKind,
    BlockRef,
    InfoCache,
    tool_result_text,
    with_tool_result_text,
)
from memctx.store import OUTPUT_DIR, OutputRef, read_output_ref, write_output_ref
from memctx.text import Redactor, redact

__all__ = [
    "DETAILS_HEADER",
    "PAYLOAD_NOTICE_RE",
    "PayloadRefs",
    "output_refs_in",
    "payload_notice",
    "persist_oversized_tool_results",
]

PAYLOAD_NOTICE_RE: Final = re.compile(
    r"\[memctx\] Full tool output \([\d,]+ chars, [\d,]+ bytes, sha256 [0-9a-f]{64}\) saved to "
    r"(tool-output/[0-9a-f]{16,64}\.json); call read_output_ref\(\"\1\"\) for the rest\."
)
"""A notice :func:`payload_notice` writes; group 1 is the ref."""

DETAILS_HEADER: Final = "\n\n[memctx] details moved out of the transcript (JSON):\n"
"""What separates the text from the ``details`` values a kept payload also holds."""

_NAME_HEX: Final = 32  # 128 bits of the sha256: the file name
_DETAIL_KEEP_CHARS: Final = 512  # a details value whose JSON is longer moves into the file
_IMAGE_TYPES: Final = frozenset({"image", "image_url", "input_image", "document", "inlineData"})


@dataclass(frozen=True, slots=True)
class PayloadRefs:
    """What :func:`persist_oversized_tool_results` did.

    Attributes:
        messages: The messages to keep (the caller's own dicts where unchanged).
        refs: The files the replaced results point to, one per result, in message order.
        chars_saved: Characters of tool-result text the messages no longer carry.
        failed: One line per result left whole because its file could not be written
            (``"<tool id>: <reason>"``).
    """

    messages: list[Any]
    refs: tuple[OutputRef, ...] = ()
    chars_saved: int = 0
    failed: tuple[str, ...] = ()


def payload_notice(ref: OutputRef, chars: int) -> str:
    """The line that replaces the rest of a kept result (matched by :data:`PAYLOAD_NOTICE_RE`).

    Args:
        ref: Where the payload was written.
        chars: Characters of the kept payload.
    """
    return (
        f"[memctx] Full tool output ({chars:,} chars, {ref.bytes:,} bytes, sha256 {ref.sha256}) "
        f'saved to {ref.ref}; call read_output_ref("{ref.ref}") for the rest.'
    )


def persist_oversized_tool_results(
    messages: Sequence[Any],
    store_dir: str | Path,
    config: PlannerConfig,
    *,
    infos: InfoCache | None = None,
    redactor: Redactor | None = None,
    root: str | Path | None = None,
) -> PayloadRefs:
    """Write every tool result longer than ``config.tool_payload_max_chars`` to a file ref.

    Args:
        messages: A conversation in any supported format; not modified.
        store_dir: The store directory; files go to ``<store_dir>/tool-output/``.
        config: The planner settings (``tool_payload_max_chars``,
            ``tool_payload_preview_chars``).
        infos: Anatomy cache to share with the caller.
        redactor: The redactor to mask secrets with (a store's keyed one); memctx's default
            :func:`memctx.text.redact` when ``None``.
        root: The store ``store_dir`` is a folder of: no symlink is followed from there
            down (:func:`memctx.store.write_output_ref`).

    Returns:
        The new messages, the refs written or reused, the characters saved and the failures.
    """
    infos = infos if infos is not None else InfoCache()
    mask = redactor.redact if redactor is not None else redact
    out = list(messages)
    refs: list[OutputRef] = []
    failed: list[str] = []
    names: dict[str, str] = {}
    saved = 0
    for i, message in enumerate(out):
        if not isinstance(message, Mapping):
            continue
        edited: Any = message
        for ref in infos.info(message).blocks:
            if ref.kind is BlockKind.TOOL_CALL and ref.tool_id and ref.tool_name:
                names[ref.tool_id] = ref.tool_name  # results rarely repeat their tool's name
            if ref.kind is not BlockKind.TOOL_RESULT or _holds_image(message, ref):
                continue
            text = tool_result_text(message, ref)
            if len(text) <= config.tool_payload_max_chars or _has_notice(text):
                continue
            details = _pi_details(message) if ref.field == "" else None
            kept, moved = _split_details(details or {})
            body = mask(text)
            content = body + (DETAILS_HEADER + mask(_dump(moved)) if moved else "")
            planned = _planned_ref(content)
            preview = body[: config.tool_payload_preview_chars]
            new_text = f"{preview}\n\n{payload_notice(planned, len(content))}"
            if len(new_text) >= len(text):
                continue  # a preview and notice no shorter than the text save nothing
            try:
                name = ref.tool_name or names.get(ref.tool_id or "", "a tool")
                what = mask(_what(name, ref.tool_id, len(text)))
                written = _keep(store_dir, planned, content, what, root)
            except (StoreError, OSError) as exc:
                failed.append(f"{ref.tool_id or f'message {i}'}: {exc}")
                continue
            # Payload edits never move a block, so the refs read from the original still hold.
            edited = with_tool_result_text(edited, ref, new_text)
            if details is not None:
                kept["outputRef"] = {
                    "kind": "tool_result_payload",
                    "path": written.ref,
                    "bytes": written.bytes,
                    "sha256": written.sha256,
                    "contains": {"text": True, "details": bool(moved)},
                }
                edited = {**edited, "details": kept}
            refs.append(written)
            saved += len(text) - len(new_text)
        out[i] = edited
    return PayloadRefs(out, tuple(refs), saved, tuple(failed))


def output_refs_in(messages: Sequence[Any], *, infos: InfoCache | None = None) -> list[str]:
    """The refs named by payload notices in ``messages``: in order, each once.

    Read them with :func:`memctx.store.read_output_ref` (``store_dir``, ref).

    Args:
        messages: A conversation in any supported format.
        infos: Anatomy cache to share with the caller.
    """
    infos = infos if infos is not None else InfoCache()
    found: dict[str, None] = {}
    for message in messages:
        for ref in infos.info(message).blocks:
            text = tool_result_text(message, ref) if ref.kind is BlockKind.TOOL_RESULT else ref.text
            if "[memctx] Full tool output" in text:
                found.update(dict.fromkeys(m.group(1) for m in PAYLOAD_NOTICE_RE.finditer(text)))
    return list(found)


def _has_notice(text: str) -> bool:
    """Whether ``text`` ends with a payload notice (it was kept already)."""
    tail = text.rstrip()[-600:]
    ends = [m.end() for m in PAYLOAD_NOTICE_RE.finditer(tail)]
    return bool(ends) and ends[-1] == len(tail)


def _planned_ref(content: str) -> OutputRef:
    """The ref ``content`` is kept under: named after its sha256."""
    data = content.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(data).hexdigest()
    return OutputRef(f"{OUTPUT_DIR}/{digest[:_NAME_HEX]}.json", digest, len(data))


def _keep(
    store_dir: str | Path, planned: OutputRef, content: str, what: str, root: str | Path | None
) -> OutputRef:
    """Write ``content`` as ``planned``, unless that file already holds it."""
    try:
        if read_output_ref(store_dir, planned.ref, root=root) == content:
            return planned
    except StoreError:
        pass  # missing or damaged: write it (again)
    return write_output_ref(store_dir, planned.sha256[:_NAME_HEX], content, what=what, root=root)


def _what(tool: str, call_id: str | None, chars: int) -> str:
    call = f"call {call_id}" if call_id else "no call id"
    return f"tool result of {tool} ({call}), {chars:,} chars"


def _pi_details(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """A Pi ``toolResult``'s ``details`` as a dict (``{}`` when absent), else ``None``."""
    if message.get("role") != "toolResult":
        return None
    details = message.get("details")
    if details is None:
        return {}
    return dict(details) if isinstance(details, Mapping) else None


def _split_details(details: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(kept, moved)``: scalars and small values stay in the transcript, large ones move."""
    kept: dict[str, Any] = {}
    moved: dict[str, Any] = {}
    for key, value in details.items():
        # An earlier payload's ``outputRef`` moves into the new file (the new ref replaces it).
        if key != "outputRef" and (value is None or isinstance(value, bool | int | float)):
            kept[key] = value
            continue
        try:
            small = key != "outputRef" and len(_dump(value)) <= _DETAIL_KEEP_CHARS
        except (ValueError, RecursionError):
            small = True  # not JSON (a huge int, deep nesting): it stays where it is
        (kept if small else moved)[key] = value
    return kept, moved


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _holds_image(message: Mapping[str, Any], ref: BlockRef) -> bool:
    """Whether the tool result ``ref`` carries an image block (Anthropic, Pi, Gemini)."""
    if ref.field == "":
        payload = message.get("content")
    else:
        items = message.get(ref.field)
        block = items[ref.index] if isinstance(items, list) and 0 <= ref.index < len(items) else {}
        payload = block.get("content") if isinstance(block, Mapping) else None
    return isinstance(payload, list) and any(
        isinstance(item, Mapping)
        and (_is_image_type(item.get("type")) or "inlineData" in item or "fileData" in item)
        for item in payload
    )


def _is_image_type(value: Any) -> bool:
    return isinstance(value, str) and value in _IMAGE_TYPES
