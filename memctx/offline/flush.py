"""The offline model's answer to the pre-compaction memory flush: extractive bullet notes.

The flush turn (seed 001 §1.3, seed 003) asks a model to store what must outlive the coming
compaction. ``memctx/offline`` answers it with no model at all: the durable facts the
rule-based extractor finds (:func:`memctx.offline.extract.extract_facts`: decisions, config
values, errors, task state, architecture, changes) and the file paths the conversation names,
one Markdown bullet each, or ``NO_REPLY`` when there is nothing worth keeping. The same
conversation always gives the same notes, so a second flush over the same text repeats
lines exactly (the flush caller drops lines its daily log already holds).

The conversation is read from the ``<conversation>`` block of the last user message, in the
rendering of :func:`memctx.compaction.render_messages` (``[User]: …``, ``[Assistant tool
calls]: …``, ``[Tool result bash (error)]: …``); the extractor's own ``[user] …`` headers are
read as well. Thinking and system text give no notes (private reasoning is mostly
speculation, and system prompts are instructions, not session facts); tool output gives only
its error lines; file paths come from what the user and the assistant wrote and from tool
call arguments, never from tool output (a ``grep`` listing is not a file the session
touched).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from memctx.messages import estimate_tokens, message_text

from .extract import extract_facts

__all__ = [
    "FLUSH_TASK",
    "MAX_FLUSH_FILES",
    "NO_REPLY",
    "flush_notes",
    "offline_flush_response",
]

# The task name in the flush prompt's marker; :mod:`memctx.compaction.flush` writes the same
# one (a test pins the two together: the prompt writer sits above this package).
FLUSH_TASK = "memory-flush"
NO_REPLY = "NO_REPLY"
MAX_FLUSH_FILES = 12
_CONVERSATION = re.compile(r"<conversation>\n?(.*?)\n?</conversation>", re.S)
# A paragraph label of the compaction renderer, at the start of a line.
_LABEL = re.compile(
    r"^\[(User|Assistant|System|Tool result)( thinking| tool calls)?"
    r"(?: ([^\]\n]*?))?(?: \(error\))?\]: ?"
)
_EXTRACT_HEADER = re.compile(r"^\[(user|assistant|system|tool)([^\]\n]{0,80})\] ?")
_FACT_LABELS = {
    "decision": "Decision",
    "config": "Config",
    "issue": "Issue",
    "task_state": "Task",
    "architecture": "Architecture",
    "implementation": "Change",
}
# A file path: directories and a name with an extension, or a bare name with a common source
# or config extension. Not inside a URL or a longer path (the look-behind).
_PATH = re.compile(
    r"(?<![\w/.:@-])(?:~/|\.{1,2}/|/)?(?:[\w.-]+/)+[\w.-]*[A-Za-z][\w-]*\.[A-Za-z][\w]{0,7}\b"
    r"|(?<![\w/.:@-])[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|json|json5|toml|ya?ml|md|txt|cfg|ini"
    r"|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|sh|sql|html|css|lock|env)\b"
)


def _normalised(conversation: str) -> tuple[str, list[str]]:
    """The conversation with the extractor's headers, and the lines paths may come from."""
    out: list[str] = []
    path_lines: list[str] = []
    role = "text"
    for line in conversation.splitlines():
        label = _LABEL.match(line)
        if label:
            who, kind, name = label.group(1), label.group(2), label.group(3)
            rest = line[label.end() :]
            if kind == " thinking" or who == "System":
                role, header = "system", "[system] "  # the extractor skips system lines
            elif kind == " tool calls":
                role, header = "call", "[assistant tool call] "
            elif who == "Tool result":
                role, header = "tool", f"[tool: {name}] " if name else "[tool] "
            else:
                role, header = who.lower(), f"[{who.lower()}] "
            line = header + rest
        else:
            own = _EXTRACT_HEADER.match(line)
            if own:
                role = "call" if "tool call" in own.group(2) else own.group(1)
            rest = line[own.end() :] if own else line
        out.append(line)
        if role in ("user", "assistant", "call", "text"):
            path_lines.append(rest)
    return "\n".join(out), path_lines


def _paths(lines: Sequence[str]) -> list[str]:
    """File paths named in ``lines``, latest mention last, each once."""
    found: dict[str, None] = {}
    for line in lines:
        for match in _PATH.finditer(line):
            path = match.group(0).rstrip(".")
            found.pop(path, None)  # a repeat moves to its latest position
            found[path] = None
    return list(found)[-MAX_FLUSH_FILES:]


def flush_notes(conversation: str, max_tokens: int | None = None) -> str:
    """Durable notes about ``conversation`` as Markdown bullets, or :data:`NO_REPLY`.

    Args:
        conversation: The rendered conversation (the flush prompt's ``<conversation>`` text).
        max_tokens: Output budget; the oldest fact bullets are dropped until the notes fit
            (later statements are the current state). ``None``: no limit.

    Returns:
        ``- Decision: …`` / ``- Config: …`` / ``- Issue: …`` / ``- Task: …`` /
        ``- Architecture: …`` / ``- Change: …`` lines in conversation order, then
        ``- Files: a, b`` when paths were named; :data:`NO_REPLY` when there are none.
    """
    text, path_lines = _normalised(conversation)
    bullets = [
        f"- {_FACT_LABELS.get(f['type'], 'Note')}: {f['content']}" for f in extract_facts(text)
    ]
    files = _paths(path_lines)
    tail = [f"- Files: {', '.join(files)}"] if files else []
    while bullets or tail:
        notes = "\n".join(bullets + tail)
        if max_tokens is None or estimate_tokens(notes) <= max_tokens:
            return notes
        if bullets:
            bullets.pop(0)
        else:
            tail = []
    return NO_REPLY


def offline_flush_response(messages: Sequence[Any], max_tokens: int | None = None) -> str:
    """The offline model's reply to a flush prompt: :func:`flush_notes` of its conversation.

    Reads the ``<conversation>`` block of the last user message; :data:`NO_REPLY` when there
    is no such block (nothing to take notes of).
    """
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            blocks = _CONVERSATION.findall(message_text(message))
            return flush_notes("\n".join(blocks), max_tokens) if blocks else NO_REPLY
    return NO_REPLY
