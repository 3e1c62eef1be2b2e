"""Claude Code session JSONL -> Anthropic Messages API messages (helper of ``_transcripts``).

Claude Code logs one JSON record per line. What matters here, checked against real sessions:

- **One record per content block.** Every block of an assistant API response (``text``,
  ``thinking``, each ``tool_use``) is its own ``assistant`` record; the records of one response
  share ``message.id`` and are merged, in file order, into one assistant message. Their
  ``usage`` input fields are identical, but ``output_tokens`` grows: only the LAST record of a
  group carries the final count (it also gains ``server_tool_use``), so the last one wins.
- **Results between blocks.** A tool runs as soon as its ``tool_use`` block is logged, so its
  ``tool_result`` user record can land between two records of the same assistant message.
  Results answering the open assistant message are held back and emitted right after it, all
  in ONE user message, which is what the API received on the next request.
- **Whitespace-only text blocks** (a ``"\\n\\n"`` block logged before ``thinking``) are dropped:
  the API rejects text blocks without non-whitespace text (``meta["blank_text_blocks_dropped"]``
  counts them). A response made only of such blocks leaves no message
  (``skipped["blank_assistant_message"]``).
- **isMeta user records** (slash-command expansions, ``<local-command-caveat>``, hook
  ``<system-reminder>`` text) are kept as user messages: Claude Code hides them in its UI but
  sends them to the model. ``meta["meta_user_messages"]`` counts them.
- **Plain-string user content** is kept as a string: the Anthropic API accepts it as is.
- **Skipped**: ``progress``, ``file-history-snapshot``, ``queue-operation``, ``summary``, every
  ``system`` record (UI notices such as ``local_command`` / ``stop_hook_summary``, counted as
  ``system:<subtype>``; ``compact_boundary`` only sets the boundary), sidechain records in a
  main session. A file whose conversation records are ALL sidechain is a sub-agent's own
  transcript (``<session>/subagents/agent-*.jsonl``) and is loaded as such.
- Consecutive user messages stay separate (results, then ``[Request interrupted by user]``;
  a command caveat, then the command): the API joins consecutive same-role turns itself.
- ``parentUuid`` is not used for ordering: parallel tool calls make the chain a tree (results
  hang off their own ``tool_use`` record), so file order plus ``message.id`` is the reliable
  order.

Messages carry only ``role`` and ``content``; Claude Code's envelope (uuid, cwd, usage, ...)
stays out of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClaudeParse", "looks_like_claude_record", "parse_claude_code"]

_CONVERSATION = frozenset({"user", "assistant"})
_SKIPPED_TYPES = frozenset(
    {"progress", "file-history-snapshot", "queue-operation", "summary", "attachment"}
)
_RECORD_TYPES = _CONVERSATION | _SKIPPED_TYPES | {"system"}
_ENVELOPE_KEYS = ("uuid", "sessionId", "parentUuid", "message", "messageId", "snapshot")


def looks_like_claude_record(obj: object) -> bool:
    """True for a Claude Code JSONL record (a known ``type`` plus an envelope key)."""
    return (
        isinstance(obj, Mapping)
        and str(obj.get("type")) in _RECORD_TYPES
        and any(key in obj for key in _ENVELOPE_KEYS)
    )


@dataclass
class ClaudeParse:
    """What one Claude Code session file holds, before ``_transcripts`` wraps it."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    compaction_boundary: int | None = None
    compact_summary: int | None = None
    session_id: str | None = None
    skipped: Counter[str] = field(default_factory=Counter)
    meta: dict[str, Any] = field(default_factory=dict)


def _is_result(block: object) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "tool_result"


class _Builder:
    """File-order state machine: one open assistant group plus its held-back results."""

    def __init__(self) -> None:
        self.out = ClaudeParse()
        self.group_open = False  # an assistant response is being read
        self.group_id: str | None = None  # its message.id
        self.group_index: int | None = None  # its message, once it has a non-blank block
        self.group_usage: Mapping[str, Any] | None = None
        self.group_calls: set[str] = set()
        self.pending: list[Any] = []  # blocks of result records answering the open group
        self.pending_records = 0
        self.boundary_pending = False
        self.stats: Counter[str] = Counter()

    def emit(self, message: dict[str, Any]) -> int:
        index = len(self.out.messages)
        self.out.messages.append(message)
        if self.boundary_pending:
            self.out.compaction_boundary = index
            self.boundary_pending = False
        return index

    def close_group(self) -> None:
        if self.pending:  # tool_result blocks first, as the API requires
            ordered = sorted(self.pending, key=lambda block: not _is_result(block))
            self.emit({"role": "user", "content": ordered})
            self.stats["merged_result_records"] += self.pending_records - 1
        elif self.group_open and self.group_index is None:
            self.out.skipped["blank_assistant_message"] += 1
        self.group_open = False
        self.pending = []
        self.pending_records = 0
        self.group_id = None
        self.group_index = None
        self.group_usage = None
        self.group_calls = set()

    def assistant(self, msg: Mapping[str, Any]) -> None:
        mid = msg.get("id")
        mid = mid if isinstance(mid, str) else None
        if mid is None or mid != self.group_id:
            self.close_group()
            self.group_open, self.group_id = True, mid
        self.stats["assistant_records"] += 1
        blocks = self._blocks(msg.get("content"))
        if blocks:
            if self.group_index is None:
                self.group_index = self.emit({"role": "assistant", "content": []})
                if self.group_usage is not None:
                    self.out.usage[self.group_index] = self.group_usage
            self.out.messages[self.group_index]["content"].extend(blocks)
            for block in blocks:
                if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    self.group_calls.add(block["id"])
        usage = msg.get("usage")
        if isinstance(usage, Mapping):
            self.group_usage = usage  # the last record of a group carries the final usage
            if self.group_index is not None:
                self.out.usage[self.group_index] = usage

    def _blocks(self, content: object) -> list[dict[str, Any]]:
        raw: Iterable[object] = (
            [content]
            if isinstance(content, str)
            else (content if isinstance(content, list) else [])
        )
        blocks: list[dict[str, Any]] = []
        for block in raw:
            if isinstance(block, str):
                block = {"type": "text", "text": block}
            if not isinstance(block, Mapping):
                self.stats["invalid_blocks_dropped"] += 1
                continue
            text = block.get("text")
            if block.get("type") == "text" and (not isinstance(text, str) or not text.strip()):
                self.stats["blank_text_blocks_dropped"] += 1
                continue
            blocks.append(dict(block))
        return blocks

    def user(self, record: Mapping[str, Any], msg: Mapping[str, Any]) -> None:
        content = msg.get("content")
        if isinstance(content, list) and any(_is_result(b) for b in content):
            ids = {str(b.get("tool_use_id")) for b in content if _is_result(b)}
            if self.group_index is not None and ids & self.group_calls:
                self.pending.extend(content)
                self.pending_records += 1
                return
            self.close_group()
            self.emit({"role": "user", "content": list(content)})
            return
        if not content or (isinstance(content, str) and not content.strip()):
            self.out.skipped["empty_user_message"] += 1
            return
        if not isinstance(content, str | list):
            self.out.skipped["malformed_message"] += 1
            return
        self.close_group()
        index = self.emit({"role": "user", "content": content})
        if record.get("isCompactSummary") is True:
            self.out.compact_summary = index
        if record.get("isMeta") is True:
            self.stats["meta_user_messages"] += 1

    def boundary(self, record: Mapping[str, Any]) -> None:
        self.close_group()
        self.boundary_pending = True
        info = record.get("compactMetadata")
        info = info if isinstance(info, Mapping) else {}
        self.out.meta.setdefault("compactions", []).append(
            {"trigger": info.get("trigger"), "pre_tokens": info.get("preTokens")}
        )


def parse_claude_code(records: list[Any]) -> ClaudeParse:
    """Turn the parsed JSON records of one session file into Anthropic messages.

    Args:
        records: Every parsed line of the file, in file order (non-objects are counted).

    Returns:
        The messages, per-message usage, compaction indices, skip counts and metadata.
    """
    b = _Builder()
    out = b.out
    conversation = [
        r for r in records if isinstance(r, Mapping) and str(r.get("type")) in _CONVERSATION
    ]
    sidechain_file = bool(conversation) and all(r.get("isSidechain") is True for r in conversation)
    if sidechain_file:
        out.meta["sidechain"] = True
        agent = conversation[0].get("agentId")
        if isinstance(agent, str):
            out.meta["agent_id"] = agent
    for record in records:
        if not isinstance(record, Mapping):
            out.skipped["not_an_object"] += 1
            continue
        rtype = str(record.get("type"))
        if out.session_id is None and isinstance(record.get("sessionId"), str):
            out.session_id = record["sessionId"]
        if rtype in _SKIPPED_TYPES:
            out.skipped[rtype] += 1
        elif rtype == "system":
            if record.get("subtype") == "compact_boundary":
                b.boundary(record)
            else:
                out.skipped[f"system:{record.get('subtype') or 'other'}"] += 1
        elif rtype not in _CONVERSATION:
            out.skipped[f"unknown_type:{rtype}"] += 1
        elif record.get("isSidechain") is True and not sidechain_file:
            out.skipped["sidechain"] += 1
        elif not isinstance(record.get("message"), Mapping):
            out.skipped["malformed_message"] += 1
        elif rtype == "assistant":
            b.assistant(record["message"])
        else:
            b.user(record, record["message"])
    b.close_group()
    if b.boundary_pending:  # a boundary with nothing after it: everything was compacted
        out.compaction_boundary = len(out.messages)
    out.meta.update({k: v for k, v in sorted(b.stats.items()) if v})
    return out
