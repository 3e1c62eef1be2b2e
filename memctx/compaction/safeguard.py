"""The sections seed 001's compaction safeguard appends to a summary, computed, not written
by a model.

- ``## Tool Failures``: the failed tool results of the summarised history, at most
  :data:`MAX_TOOL_FAILURES` (8), each cut to :data:`MAX_TOOL_FAILURE_CHARS` (240)
  characters, so the agent does not repeat a failing call it can no longer see.
- ``<read-files>`` / ``<modified-files>``: the files the summarised tool calls read and
  changed, from the calls' names and ``path`` arguments (Pi's ``read`` / ``write`` /
  ``edit``, Claude Code's ``Read`` / ``Write`` / ``Edit`` / ``MultiEdit``, SWE-agent's and
  OpenHands' ``str_replace_editor`` commands), carried over from the previous summary's
  own lists. A file both read and changed is listed as changed.
- ``**Turn Context (split turn):**``: the summary of the part of a turn the cut separated
  from its kept end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memctx.messages import BlockKind, InfoCache

__all__ = [
    "MAX_TOOL_FAILURES",
    "MAX_TOOL_FAILURE_CHARS",
    "SPLIT_TURN_HEADER",
    "TOOL_FAILURES_HEADER",
    "FileOperations",
    "ToolFailure",
    "collect_file_operations",
    "collect_tool_failures",
    "compute_file_lists",
    "format_file_operations",
    "format_split_turn",
    "format_tool_failures",
    "parse_file_operations",
]

MAX_TOOL_FAILURES = 8
MAX_TOOL_FAILURE_CHARS = 240
TOOL_FAILURES_HEADER = "## Tool Failures"
SPLIT_TURN_HEADER = "**Turn Context (split turn):**"

_READ_TOOLS = frozenset({"read", "read_file", "readfile", "view", "view_file", "open_file"})
_WRITE_TOOLS = frozenset({"write", "write_file", "writefile", "create", "create_file"})
_EDIT_TOOLS = frozenset(
    {"edit", "edit_file", "multiedit", "multi_edit", "str_replace", "notebookedit", "insert"}
)
# Editor tools that name the operation in a ``command`` argument.
_EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "text_editor"})
_PATH_KEYS = ("path", "file_path", "filePath", "notebook_path", "filename")
_LISTS = {
    "read": re.compile(r"<read-files>\n(.*?)\n</read-files>", re.S),
    "modified": re.compile(r"<modified-files>\n(.*?)\n</modified-files>", re.S),
}


@dataclass(frozen=True, slots=True)
class ToolFailure:
    """One failed tool result: its call id, the tool's name and the output, shortened."""

    tool_id: str | None
    tool_name: str
    summary: str


def _shorten(text: str, max_chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= max_chars else f"{text[: max(0, max_chars - 3)]}..."


def collect_tool_failures(
    messages: Sequence[Any], infos: InfoCache | None = None
) -> list[ToolFailure]:
    """Every failed tool result in ``messages``, once per call id, in order.

    A result counts as failed when the anatomy reads it so (``is_error`` / ``isError``, a
    Gemini response with an ``error`` key). Its tool's name comes from the result or, when
    the result does not carry it, from the call with the same id.
    """
    infos = infos if infos is not None else InfoCache()
    read = infos.infos(messages)
    names = {
        b.tool_id: b.tool_name
        for info in read
        for b in info.blocks
        if b.kind is BlockKind.TOOL_CALL and b.tool_id and b.tool_name
    }
    failures: list[ToolFailure] = []
    seen: set[str] = set()
    for info in read:
        for b in info.blocks:
            if b.kind is not BlockKind.TOOL_RESULT or not b.is_error:
                continue
            if b.tool_id is not None:
                if b.tool_id in seen:
                    continue
                seen.add(b.tool_id)
            name = b.tool_name or names.get(b.tool_id or "") or "tool"
            summary = _shorten(b.text, MAX_TOOL_FAILURE_CHARS) or "failed (no output)"
            failures.append(ToolFailure(b.tool_id, name, summary))
    return failures


def format_tool_failures(failures: Sequence[ToolFailure]) -> str:
    """The ``## Tool Failures`` section (``""`` for none): the first eight, then a count."""
    if not failures:
        return ""
    lines = [f"- {f.tool_name}: {f.summary}" for f in failures[:MAX_TOOL_FAILURES]]
    if len(failures) > MAX_TOOL_FAILURES:
        lines.append(f"- ...and {len(failures) - MAX_TOOL_FAILURES} more")
    return f"{TOOL_FAILURES_HEADER}\n" + "\n".join(lines)


@dataclass(slots=True)
class FileOperations:
    """Paths the tool calls read, wrote and edited."""

    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)

    def update(self, other: FileOperations) -> None:
        """Add ``other``'s paths to these."""
        self.read |= other.read
        self.written |= other.written
        self.edited |= other.edited


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or hostile nesting
        return {}
    return value if isinstance(value, dict) else {}


def _path(args: dict[str, Any]) -> str | None:
    for key in _PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def collect_file_operations(
    messages: Sequence[Any], infos: InfoCache | None = None
) -> FileOperations:
    """The files read, written and edited by the tool calls in ``messages``.

    Tools are recognised by name, case-insensitively; the path is the first of ``path``,
    ``file_path``, ``filePath``, ``notebook_path``, ``filename`` in the call's arguments.
    Calls whose arguments are not a JSON object, or name no path, are skipped.
    """
    infos = infos if infos is not None else InfoCache()
    ops = FileOperations()
    for info in infos.infos(messages):
        for b in info.blocks:
            if b.kind is not BlockKind.TOOL_CALL or not b.tool_name:
                continue
            name = b.tool_name.lower()
            known = _READ_TOOLS | _WRITE_TOOLS | _EDIT_TOOLS | _EDITOR_TOOLS
            if name not in known:
                continue  # parse only the arguments of file tools
            args = _arguments(b.text)
            path = _path(args)
            if path is None:
                continue
            if name in _EDITOR_TOOLS:
                command = args.get("command")
                name = {"view": "read", "create": "write"}.get(str(command), "edit")
            if name in _READ_TOOLS:
                ops.read.add(path)
            elif name in _WRITE_TOOLS:
                ops.written.add(path)
            else:
                ops.edited.add(path)
    return ops


def parse_file_operations(summary: str) -> FileOperations:
    """The file lists an earlier summary carries (its ``<read-files>`` / ``<modified-files>``),
    so that a rolling summary keeps every file the session touched."""
    ops = FileOperations()
    for kind, pattern in _LISTS.items():
        for block in pattern.findall(summary):
            paths = {line.strip() for line in block.splitlines() if line.strip()}
            (ops.read if kind == "read" else ops.edited).update(paths)
    return ops


def compute_file_lists(ops: FileOperations) -> tuple[list[str], list[str]]:
    """``(read_only, modified)``, each sorted: a file changed is not also listed as read."""
    modified = ops.written | ops.edited
    return sorted(ops.read - modified), sorted(modified)


def _tagged(tag: str, paths: Iterable[str]) -> str:
    return f"<{tag}>\n" + "\n".join(paths) + f"\n</{tag}>"


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """The ``<read-files>`` and ``<modified-files>`` sections (``""`` when both are empty)."""
    sections = []
    if read_files:
        sections.append(_tagged("read-files", read_files))
    if modified_files:
        sections.append(_tagged("modified-files", modified_files))
    return "\n\n".join(sections)


def format_split_turn(prefix_summary: str) -> str:
    """The split-turn section: the summary of the turn's part before the cut."""
    return f"---\n\n{SPLIT_TURN_HEADER}\n\n{prefix_summary}"
