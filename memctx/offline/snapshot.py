"""The offline model's compaction summary: a state snapshot read from the transcript itself.

A summary exists so that the agent can carry on after the history is gone. What it needs
is the state the history ended in, not a sample of its lines: what the user asked for and
the rules they set, which files were touched and how last, what failed and what was done
about it, which tasks are still open, what was being done at the end, and the exact values
(commands and their results, versions, ports, paths, URLs, ids) it will be asked about.
Every part of that is legible in a coding agent's transcript without a model: tool calls
name their tool and arguments, results say whether they failed, task lists are JSON.

Two parts of that state are easy to lose in a sample of lines. The step in progress: an
agent says what it is on ("now working on `retry_refunds`", "I'm in the middle of the export
job"), and the newest such statement that names its work is kept under ``Work in progress``
apart from the last thing said, which is as often a status line about something finished.
The artifact trail: each file's actions, and for a one-line edit (a setting, a constant)
what it changed (``config/logging.yaml: edited (format: plain → format: json)``); files
created, deleted or renamed are kept before files edited, and those before files only read.

**Input.** The offline model receives what the compaction sends any model: the rendered
history (:func:`memctx.compaction.render_messages`, labelled paragraphs such as ``[User]:``,
``[Assistant tool calls]: Edit({"file_path": …})`` or ``[Tool result bash (error)]:``) inside
``<conversation>`` tags, possibly opened by the previous summary (``[Summary of earlier
history]:``) or made of partial summaries to merge (``[Partial summary 1 of 2: …]:``). This
module parses that text back into entries rather than asking for another path: the rendering
is the one every model gets, so the snapshot summarises exactly what a real model would.
Text without labels (``user: …`` lines, or plain notes) is read line by line with the role
prefixes :mod:`memctx.offline.summary` understands.

**Round trip.** A snapshot is itself parsed when it comes back as a previous or partial
summary: its sections are read as items older than everything after them, so a later
compaction keeps what an earlier one knew and the newest state wins (a file's last action,
a task's last status, a command's last result).

**Budget.** The output never exceeds ``max_tokens`` by :func:`memctx.messages.estimate_tokens`.
Items are chosen by section priority, newest first, each section first held to a share of the
budget so that no kind of state crowds out the others, then the rest by the same order; what
room is left goes to the extractive summary (:func:`memctx.offline.summary.summarize_text`) of
the conversation's own words, under ``Notes``. Items are shown in their original order.
Deterministic: the same text and budget give the same snapshot.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from memctx.messages import estimate_tokens
from memctx.text import STOPWORDS, redact

from .summary import clip_line, summarize_text

__all__ = ["SNAPSHOT_SECTIONS", "state_snapshot"]

LATEST = "Latest request"
RULES = "Rules and instructions"
DECISIONS = "Decisions"
REQUESTS = "Requests"
TASKS = "Open tasks"
DONE = "Done"
WORK = "Work in progress"
FILES = "Files"
ERRORS = "Errors and fixes"
COMMANDS = "Commands and results"
VALUES = "Key values"
NOTES = "Notes"
SNAPSHOT_SECTIONS = (
    LATEST,
    RULES,
    DECISIONS,
    REQUESTS,
    TASKS,
    DONE,
    WORK,
    FILES,
    ERRORS,
    COMMANDS,
    VALUES,
    NOTES,
)
# The share of the budget each section may take in the first pass (the second pass lets any
# section use what the others left). The latest request is always kept first.
_SHARES = {
    RULES: 0.12,
    DECISIONS: 0.08,
    REQUESTS: 0.08,
    TASKS: 0.08,
    DONE: 0.04,
    WORK: 0.10,
    FILES: 0.14,
    ERRORS: 0.12,
    COMMANDS: 0.12,
    VALUES: 0.12,
}
# In the second pass, sections are filled in this order.
_PRIORITY = (RULES, TASKS, WORK, DECISIONS, REQUESTS, FILES, ERRORS, COMMANDS, VALUES, DONE)
_STEP, _SAID, _CALLED = "Step in progress: ", "Last said: ", "Last tool calls: "
_ITEM_CHARS = 240  # one item never takes more than ~80 tokens
_REQUEST_CHARS = 400

# "[User]:", "[Assistant tool calls]:", "[Tool result bash (error)]:", "[Summary of …]:".
_LABEL = re.compile(r"^\[([A-Z][^\]\n]{0,80})\]:[ \t]?", re.M)
_ROLE_LINE = re.compile(
    r"^\s*[\[(*]*\s*(user|human|assistant|ai|tool|system)\b(?:\s+[\w.-]+|\s*\([^)\n]{0,40}\))?"
    r"\s*[]:]\s*(?:\*\*)?\s*",
    re.I | re.M,
)
_SUMMARY_LABEL = re.compile(r"^(?:summary\b|partial summary\b)", re.I)
_RULE = re.compile(
    r"\b(?:never|always|don[’']t|do not|does not|must(?: not)?|mustn[’']t|should(?: not)?"
    r"|shouldn[’']t|make sure|ensure|avoid|only use|prefer|instead of|required|forbid(?:den)?"
    r"|no (?:new |ad[- ]hoc )?\w+ (?:outside|without|in|unless)|not allowed)\b"
    r"|不要|必须|总是|禁止",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:decided|decide|decision|instead of|switch(?:ed)? to|chose|choose|picked|agreed"
    r"|going with|go with|settled on|we(?:'ll| will) use|let[’']s use|opted|because|so that"
    r"|the reason)\b|决定|改用|因为",
    re.I,
)
_STRONG_RULE = re.compile(
    r"\b(?:never|always|don[’']t|do not|must(?: not)?|forbid(?:den)?|not allowed|required"
    r"|no (?:new |ad[- ]hoc )?\w+ (?:outside|without|unless))\b|不要|必须|禁止",
    re.I,
)
# File contents and search hits quote code, not events: "  12→ raise X", "a.py:12: raise X".
_NUMBERED = re.compile(r"^\s*(?:\d+\s*(?:→|\t|\||:\s)|[\w./@+-]+:\d+[:-])")
_CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import |return\b|@\w|#include|const |let |var |fn "
    r"|function\b|public |private |defp? |use |alias |require )|[;{]\s*$|^\s*[]}{)(]+[;,]?\s*$"
)
_NO_GO = re.compile(r"^\s*[-*•]\s*(?:No|Not|Only|Without|Never) [a-z`]")
_ERROR = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\b[Ee]rror(?:\[\w+\])?:|\bERROR\b|\bFAILED\b"
    r"|\bfatal:|\bpanic:|exit (?:code|status):? [1-9]|Segmentation fault|command not found"
    r"|No such file|Permission denied|\*\* \(\w+",
)
_FRAME = re.compile(r'^\s*(?:File ".+", line \d+|at [\w.$<>]+\(.*\)$|[~^]+\s*$|Traceback \(most)')
_FIX_CUE = re.compile(
    r"\b(?:fix(?:ed|es)?|because|caus(?:e|ed)|issue|problem|need(?:s|ed)? to|instead|missing"
    r"|wrong|should|forgot|the reason|resolved?|root cause|works now|passes now)\b",
    re.I,
)
# A statement of the step of work in progress ("I'm in the middle of X", "current step: X",
# "switching to X now", "started X"): what a resumed session must pick up. Kept apart from
# the newest thing said, which is as often a status line about something finished.
_STEP_CUE = re.compile(
    r"\b(?:in the middle of|halfway|midway|half[- ](?:done|finished)|partially done"
    r"|current(?:ly)? (?:step|task|focus|working on|on|doing|busy with)"
    r"|now (?:working on|on|doing|busy with|focusing on|starting)"
    r"|(?:i[’']m|i am|we[’']re|we are)(?: now| still)? (?:working on|busy with|focusing on"
    r"|starting on|continuing (?:with|on))"
    r"|switching (?:over )?to|moving on to|next up|picking (?:up|back up) (?:on|with)?"
    r"|started (?:on |work on |working on )?`|paused|resuming)"
    r"|^\s*(?:now )?working on\b|正在|进行中",
    re.I,
)
# What makes a step statement name the work: a code span, a path or an identifier.
_NAMED = re.compile(r"`[^`\n]+`|\b[\w.-]+/[\w./-]+|\b[a-z]+(?:_[a-z0-9]+)+\b|\b[a-z]+[A-Z]\w*\b")


def _step_statement(sentence: str) -> bool:
    """``sentence`` states the step in progress and names it ("moving on to the next item"
    names nothing: a resumed session learns nothing from it)."""
    cue = _STEP_CUE.search(sentence)
    if cue is None:
        return False
    if _NAMED.search(sentence):
        return True
    after = re.findall(r"[A-Za-z]{3,}", sentence[cue.end() :])
    return sum(w.lower() not in STOPWORDS for w in after) >= 3


_TASK_CUE = re.compile(
    r"\bTODO\b|\bFIXME\b|\b(?:next step|still need|remaining|not yet|left to do|follow[- ]up)\b"
    r"|^\s*[-*]\s*\[ \]",
    re.I,
)
_RESULT_LINE = re.compile(
    r"\b\d+ (?:tests?|examples?|specs?|doctests?|properties|passed|failed|failures?|errors?"
    r"|skipped|warnings?|files?|modules?|packages?|changed|insertions?|deletions?|unchanged"
    r"|updated|created|deleted|added|removed)\b"
    r"|\b(?:Compiling|Compiled|Installed|Resolved|Updated|Created|Deleted|Closed|Merged"
    r"|Pushed|Successfully|Finished|Generated|Wrote|Running)\b"
    r"|^\[[\w./-]+ [0-9a-f]{7,12}\]|\b[0-9a-f]{7,12}\.\.[0-9a-f]{7,12}\b|exit (?:code|status)"
    r"|\bv?\d+\.\d+\.\d+\b",
)
_VALUE = re.compile(
    r"`[^`\n]{2,100}`|https?://[^\s)\]>\"']+|\bport\s*:?\s*\d{2,5}\b|:\d{4,5}\b"
    r"|\b[A-Z][A-Z0-9_]{2,}=\S+|--[\w-]+=\S+|\bv?\d+\.\d+\.\d+(?:[-+][\w.]+)?\b"
    r"|\b[0-9a-f]{7,40}\b(?=.*\b(?:commit|hash|sha|rev)\b)|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f-]{19,}\b"
    r"|#[0-9a-fA-F]{6}\b",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])|(?<=[。！？])|\n+")
_CALL_START = re.compile(r"(?:^|;\s)([A-Za-z_][\w.:-]{0,60})\(")
_STRING_ARG = r'"{name}"\s*:\s*"((?:[^"\\]|\\.)*)"'
_PATH_KEYS = (
    "file_path|filePath|path|file|filename|notebook_path|target_file|target|old_path|new_path"
    "|source|destination|dest|src"
)
_PATH_ARG = re.compile(_STRING_ARG.format(name=f"(?:{_PATH_KEYS})"))
_COMMAND_ARG = re.compile(_STRING_ARG.format(name="(?:command|cmd|script|code)"))
_TODO_ITEM = re.compile(
    r'\{[^{}]*?"(?:content|title|task|description)"\s*:\s*"((?:[^"\\]|\\.)*)"[^{}]*?'
    r'"(?:status|state)"\s*:\s*"(\w+)"'
    r'|\{[^{}]*?"(?:status|state)"\s*:\s*"(\w+)"[^{}]*?'
    r'"(?:content|title|task|description)"\s*:\s*"((?:[^"\\]|\\.)*)"'
)
_PATCH_FILE = re.compile(r"\*\*\* (Add|Update|Delete) File: (\S+)")
_MOVE_TO = re.compile(r"\*\*\* Move to: (\S+)")
# File actions named in prose or tool output ("File created successfully at: x", "renamed a
# to b", "The file x has been updated").
_PATHLIKE = (
    r"`?((?:~|\.{1,2})?/?(?:[\w.@+-]+/)*[\w.@+-]*\.[A-Za-z][\w]{0,7}|(?:[\w.@+-]+/){2,}[\w.@+-]+)`?"
)
_TEXT_ACTION = re.compile(
    r"\b(creat(?:e|ed|ing)|add(?:ed|ing)?|wr(?:ote|ite|itten|iting)|edit(?:ed|ing)?|updat(?:e|ed|ing)"
    r"|modif(?:y|ied|ying)|delet(?:e|ed|ing)|remov(?:e|ed|ing)|renam(?:e|ed|ing)|mov(?:e|ed|ing)"
    r"|read(?:ing)?)\b(?: the)?(?: new)?(?: file)?(?: at)?:?\s+"
    + _PATHLIKE
    + r"(?:\s+(?:to|->|→)\s+"
    + _PATHLIKE
    + ")?",
    re.I,
)
_PASSIVE_ACTION = re.compile(
    r"(?:[Tt]he file |File )" + _PATHLIKE + r" (?:has been|was|is now) (created|updated|modified"
    r"|deleted|removed|written|renamed|moved)"
)
_ACTION_WORDS = {
    "creat": "created",
    "add": "created",
    "wr": "written",
    "edit": "edited",
    "updat": "edited",
    "modif": "edited",
    "delet": "deleted",
    "remov": "deleted",
    "renam": "renamed",
    "mov": "renamed",
    "read": "read",
}
# A bare name in prose ("edited config.toml") is a file only with a common extension: a
# dotted identifier ("Enum.take", "os.path") is not.
_FILE_EXTENSIONS = frozenset(
    "py pyi js mjs cjs ts tsx jsx md rst txt json jsonl yaml yml toml ini cfg conf env lock xml"
    " csv tsv html htm css scss sass less vue svelte ex exs heex eex erl hrl rs go java kt kts"
    " scala rb php c h cc cpp hpp cs swift m mm sh bash zsh fish ps1 sql graphql proto tf nix"
    " lua r jl dart zig hs ml clj gradle ipynb log out diff patch png jpg svg gif pdf"
    " dockerfile makefile".split()
)
_CHANGING = frozenset({"created", "written", "edited", "deleted", "renamed", "rewritten"})
_RESHAPING = frozenset({"created", "deleted", "renamed"})


@dataclass(slots=True)
class _Entry:
    """One labelled paragraph of the rendered conversation."""

    pos: int
    kind: str  # user, assistant, thinking, calls, result, summary, other
    text: str
    tool: str = ""
    error: bool = False


@dataclass(slots=True)
class _Item:
    section: str
    pos: int
    text: str
    rank: int = 0  # higher is kept first within its section (ties: newer first)


@dataclass(slots=True)
class _FileState:
    actions: list[str] = field(default_factory=list)
    pos: int = 0
    renamed_to: str = ""
    change: str = ""  # the last edit, when it was short: "format: plain → format: json"


def _clip(text: str, limit: int = _ITEM_CHARS) -> str:
    return clip_line(text, limit)


def _unescape(value: str) -> str:
    try:
        decoded = json.loads(f'"{value}"')
    except ValueError:
        return value.replace("\\n", "\n").replace('\\"', '"')
    return decoded if isinstance(decoded, str) else value


# --- parsing ------------------------------------------------------------------------------


def _kind_of(label: str) -> tuple[str, str, bool]:
    """``(kind, tool name, is error)`` of a paragraph label."""
    low = label.lower()
    if _SUMMARY_LABEL.match(label):
        return "summary", "", False
    if low.startswith("tool result"):
        rest = label[len("tool result") :].strip()
        error = rest.endswith("(error)")
        return "result", rest.removesuffix("(error)").strip(), error
    if low.endswith("tool calls"):
        return "calls", "", False
    if low.endswith("thinking"):
        return "thinking", "", False
    if low in ("user", "human"):
        return "user", "", False
    if low in ("assistant", "ai"):
        return "assistant", "", False
    return "other", "", False


def _parse(text: str) -> list[_Entry]:
    """The conversation's entries, in order: labelled paragraphs when the text has them,
    else ``role: …`` lines, else one entry of unknown role."""
    labels = list(_LABEL.finditer(text))
    if labels:
        entries = []
        head = text[: labels[0].start()].strip()
        if head:
            entries.append(_Entry(0, "other", head))
        for i, match in enumerate(labels):
            end = labels[i + 1].start() if i + 1 < len(labels) else len(text)
            kind, tool, error = _kind_of(match.group(1).strip())
            body = text[match.end() : end].strip("\n")
            entries.append(_Entry(len(entries), kind, body, tool, error))
        return entries
    roles = list(_ROLE_LINE.finditer(text))
    if not roles:
        return [_Entry(0, "other", text)]
    entries = []
    for i, match in enumerate(roles):
        end = roles[i + 1].start() if i + 1 < len(roles) else len(text)
        role = match.group(1).lower()
        kind = {"human": "user", "ai": "assistant", "tool": "result"}.get(role, role)
        entries.append(_Entry(len(entries), kind, text[match.end() : end].strip()))
    return entries


def _calls(text: str) -> Iterator[tuple[str, str]]:
    """``(tool name, arguments)`` of each call in a ``[… tool calls]`` paragraph."""
    starts = list(_CALL_START.finditer(text))
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        yield match.group(1), text[match.end() : end].rstrip().removesuffix(")")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


# --- the state -----------------------------------------------------------------------------


class _State:
    """What the transcript says the session's state is, newest last.

    Args:
        root: The working directory most file paths are under; paths below it are kept
            relative to it (shorter, and the same file whichever way a tool named it).
    """

    def __init__(self, root: str = "") -> None:
        self.root = root
        self.items: list[_Item] = []
        self.files: dict[str, _FileState] = {}
        self.tasks: dict[str, tuple[str, int]] = {}  # task -> (status, pos)
        self.commands: dict[str, tuple[int, str]] = {}  # command -> (pos, outcome)
        self.last_request: str = ""
        self.first_request_pos: int | None = None
        self.pending_error: _Item | None = None
        self.settings: dict[str, tuple[int, str]] = {}  # "file: name" -> (pos, item)
        self.last_call = ""

    def add(self, section: str, pos: int, text: str, rank: int = 0) -> None:
        if text.strip():
            self.items.append(_Item(section, pos, _clip(text), rank))

    # files

    def touch(
        self,
        path: str,
        action: str,
        pos: int,
        renamed_to: str = "",
        change: str | None = None,
    ) -> None:
        """Record ``action`` on ``path``. ``change`` is what the action changed, ``""``
        when that is unknown; ``None`` (prose or a tool's echo of an action already seen)
        keeps what is known."""
        path = self._relative(path)
        if not path or len(path) > 200 or "\n" in path:
            return
        state = self.files.setdefault(path, _FileState())
        if action == "written":
            action = "rewritten" if state.actions and state.actions[-1] != "deleted" else "created"
        if not state.actions or state.actions[-1] != action:
            state.actions.append(action)
        state.pos = pos
        if action != "read" and change is not None:
            state.change = change
        if renamed_to:
            state.renamed_to = renamed_to
            self.touch(renamed_to, "created", pos)

    def file_actions_from_call(self, tool: str, args: str, pos: int) -> None:
        name = tool.lower().rsplit(".", 1)[-1]
        paths = [_unescape(p) for p in _PATH_ARG.findall(args)]
        sub = re.search(_STRING_ARG.format(name="command"), args)
        subcommand = sub.group(1).lower() if sub else ""
        for kind, path in _PATCH_FILE.findall(args):
            action = {"Add": "created", "Update": "edited", "Delete": "deleted"}[kind]
            moved = _MOVE_TO.search(args[args.find(path) :])
            self.touch(
                path, "renamed" if moved else action, pos, moved.group(1) if moved else "", ""
            )
        if not paths:
            return
        if subcommand in ("create",):
            action = "written"
        elif subcommand in ("str_replace", "insert", "undo_edit"):
            action = "edited"
        elif subcommand == "view":
            action = "read"
        elif re.search(r"write|create|save|put", name):
            action = "written"
        elif re.search(r"edit|replace|patch|insert|update|modify", name):
            action = "edited"
        elif re.search(r"read|view|open|cat|get_file", name):
            action = "read"
        elif re.search(r"delete|remove|unlink|rm\b", name):
            action = "deleted"
        elif re.search(r"move|rename|mv\b", name):
            if len(paths) >= 2:
                self.touch(paths[0], "renamed", pos, paths[1])
            return
        else:
            return
        change = _edit_change(args) if action == "edited" and len(paths) == 1 else ""
        for path in paths[:4]:
            self.touch(path, action, pos, change=change)

    def _relative(self, path: str) -> str:
        path = path.strip().strip("`'\"").rstrip(".,:;")
        if self.root and path.startswith(self.root + "/"):
            path = path[len(self.root) + 1 :]
        return path

    def file_actions_from_shell(self, command: str, pos: int) -> None:
        for part in re.split(r"&&|\|\||;|\n|\|", command):
            words = [w.strip("'\"") for w in part.split()]
            while words and ("=" in words[0] or words[0] in ("sudo", "git", "time", "cd")):
                if words[0] == "cd":
                    words = []
                    break
                words = words[1:]
            if not words:
                continue
            verb, args = words[0], [w for w in words[1:] if not w.startswith("-")]
            if verb in ("rm", "unlink", "rmdir") and args:
                for path in args[:4]:
                    self.touch(path, "deleted", pos)
            elif verb == "mv" and len(args) == 2:
                self.touch(args[0], "renamed", pos, args[1])
            elif verb == "touch" and args:
                for path in args[:4]:
                    self.touch(path, "created", pos)
            elif verb == "cp" and len(args) == 2:
                self.touch(args[1], "created", pos)
            elif verb in ("cat", "head", "tail", "less") and args and "<<" not in part:
                for path in args[:2]:
                    if "." in path or "/" in path:
                        self.touch(path, "read", pos)
            elif verb == "sed" and "-i" in words and len(args) >= 2:
                self.touch(args[-1], "edited", pos, change="")
            redirect = re.search(r"(?<![0-9&])>{1,2}\s*([\w./~@+-]+\.[A-Za-z]\w{0,7})\b", part)
            if redirect and not redirect.group(1).startswith("/dev/"):
                self.touch(redirect.group(1), "written", pos, change="")

    def file_actions_from_text(self, text: str, pos: int) -> None:
        for match in _TEXT_ACTION.finditer(text):
            verb, path, target = match.group(1).lower(), match.group(2), match.group(3)
            action = next(v for k, v in _ACTION_WORDS.items() if verb.startswith(k))
            if not _is_file_name(path):
                continue
            if action == "renamed" and target:
                self.touch(path, "renamed", pos, target)
            elif action != "renamed":
                self.touch(path, action, pos)
        for match in _PASSIVE_ACTION.finditer(text):
            verb = match.group(2).lower()
            action = next(v for k, v in _ACTION_WORDS.items() if verb.startswith(k))
            if action != "renamed" and _is_file_name(match.group(1)):
                self.touch(match.group(1), action, pos)

    # tasks

    def todos(self, args: str, pos: int) -> bool:
        found = False
        for match in _TODO_ITEM.finditer(args):
            content = match.group(1) if match.group(1) is not None else match.group(4)
            status = match.group(2) if match.group(2) is not None else match.group(3)
            content = _clip(_unescape(content), 200)
            if content:
                self.tasks[content] = (status.lower(), pos)
                found = True
        return found


def _is_file_name(path: str) -> bool:
    """A path, or a bare name with a common file extension (not a dotted identifier)."""
    path = path.strip("`")
    if "/" in path:
        return True
    stem, _, extension = path.rpartition(".")
    return bool(stem) and path.count(".") == 1 and extension.lower() in _FILE_EXTENSIONS


_OLD_ARG = re.compile(_STRING_ARG.format(name="(?:old_string|old_str|oldText|old_text)"))
_NEW_ARG = re.compile(_STRING_ARG.format(name="(?:new_string|new_str|newText|new_text)"))
_CHANGE_CHARS = 80  # a longer edit is code, not a setting: the file's action says enough


def _edit_change(args: str) -> str:
    """``old → new`` of an editor call that replaced one short line (a setting, a
    constant), else ``""``: the artifact trail says what changed, not only that it did."""
    old, new = _OLD_ARG.search(args), _NEW_ARG.search(args)
    if old is None or new is None:
        return ""
    before, after = _unescape(old.group(1)).strip(), _unescape(new.group(1)).strip()
    if not after or before == after or "\n" in before or "\n" in after:
        return ""
    if max(len(before), len(after)) > _CHANGE_CHARS:
        return ""
    return f"{before} → {after}" if before else f"+ {after}"


def _read_config(state: _State, pos: int, path: str, text: str) -> None:
    """The settings of a configuration file that was read or written: ``name: value``
    lines, secrets masked (:func:`memctx.text.redact`), the newest value of each name."""
    name = path.rsplit("/", 1)[-1]
    for line in text.splitlines()[:200]:
        match = _SETTING.match(line)
        if match and not _SECRET_NAME.search(match.group(1)):
            setting = f"{match.group(1)}: {match.group(2).strip()}"
            state.settings[f"{name}: {match.group(1)}"] = (pos, redact(f"{name}: {setting}"))


def _outcome(text: str) -> str:
    """How a command went: its output's first line, then the last lines that report counts,
    errors, versions or commits (tools print their summary last)."""
    lines = [
        ln.strip()
        for ln in text.splitlines()
        if ln.strip() and not _FRAME.search(ln) and not _NUMBERED.match(ln) and len(ln) <= 300
    ]
    if not lines:
        return ""
    picked: list[str] = []
    for line in lines[1:]:
        if _ERROR.search(line) or _RESULT_LINE.search(line):
            key = re.sub(r"\d+", "#", line)
            picked = [p for p in picked if re.sub(r"\d+", "#", p) != key] + [_clip(line, 120)]
    return " | ".join([_clip(lines[0], 100), *picked[-2:]])


def _error_line(text: str) -> str:
    lines = [
        ln.strip()
        for ln in text.splitlines()
        if ln.strip() and not _FRAME.search(ln) and not _NUMBERED.match(ln)
    ]
    for line in lines:
        if _ERROR.search(line):
            return line
    return lines[0] if lines else ""


def _fix_sentence(text: str) -> str:
    sentences = _sentences(text)
    for sentence in sentences[:6]:
        if _FIX_CUE.search(sentence):
            return sentence
    return sentences[0] if sentences else ""


def _read_summary(state: _State, entry: _Entry) -> None:
    """Items of an earlier snapshot (or any sectioned summary) back into the state."""
    section = NOTES
    for line in entry.text.splitlines():
        bare = line.strip()
        if not bare:
            continue
        if bare.endswith(":") and not bare.startswith("- "):
            title = bare[:-1].strip()
            section = title if title in SNAPSHOT_SECTIONS else NOTES
            continue
        item = bare[2:] if bare.startswith("- ") else bare
        if section == LATEST:
            state.add(REQUESTS, entry.pos, item, 1)
        elif section == FILES:
            match = _FILE_ITEM.match(item)
            if match:
                path, actions, change = match.groups()
                for action in actions.split(", then "):
                    target = action.removeprefix("renamed to ").strip()
                    if action.startswith("renamed to "):
                        state.touch(path, "renamed", entry.pos, target)
                    elif action.strip() in _CHANGING | {"read"}:
                        state.touch(path, action.strip(), entry.pos, change=change or "")
                continue
            state.add(NOTES, entry.pos, item)
        elif section in (TASKS, DONE):
            status = "pending" if section == TASKS else "completed"
            if item not in state.tasks or state.tasks[item][1] <= entry.pos:
                state.tasks[item] = (status, entry.pos)
        elif section == COMMANDS:
            command, _, outcome = item.partition(" → ")
            state.commands[command.strip()] = (entry.pos, outcome.strip())
        else:
            state.add(section, entry.pos, item)


# A Files item as _file_items writes it: "path: read, then edited (old → new)".
_ACTION_SHOWN = r"(?:created|written|rewritten|edited|deleted|read|renamed(?: to \S+)?)"
_FILE_ITEM = re.compile(
    rf"^(\S(?:.*?\S)?): ({_ACTION_SHOWN}(?:, then {_ACTION_SHOWN})*)(?: \((.+)\))?$"
)
_CONFIG_PATH = re.compile(
    r"[\w./~-]*(?:\.(?:ya?ml|toml|ini|cfg|conf|env|properties)|/\.env[\w.]*|\.env)\b"
)
# "  3\toutbox_table: x", "PORT=8080", "max_mb = 25": a setting's name and value.
_SETTING = re.compile(
    r"^\s*(?:\d+\s*(?:→|\t|\|)\s*)?([A-Za-z_][\w.-]{1,60})\s*[:=]\s*([^\s#].{0,100})$"
)
_SECRET_NAME = re.compile(r"secret|token|passw|pwd|credential|api[_-]?key|private|auth", re.I)
_NOTICE_BLOCK = re.compile(
    r"<([\w-]*(?:reminder|notification|stdout|stderr|caveat|output|status))\b[^>]*>.*?</\1>",
    re.S | re.I,
)
_WORKDIR = "Paths are relative to: "
_WORKDIR_LINE = re.compile(r"^- " + _WORKDIR + r"(/\S+)$", re.M)


def _root(text: str) -> str:
    """The folder above the project the tool calls work in, or an earlier snapshot's;
    ``""`` when there is none.

    The project is the deepest folder that holds three quarters of the absolute paths the
    tool calls name and branches (has two subfolders among them): a folder that merely
    holds the edited files would cut ``src/`` off their names. Paths are shown relative to
    the folder above it, so they keep the project's own name.
    """
    earlier = _WORKDIR_LINE.search(text)
    if earlier:
        return earlier.group(1)
    paths = [_unescape(p) for p in _PATH_ARG.findall(text) if p.startswith("/")]
    if len(paths) < 3:
        return ""
    counts: dict[str, int] = {}
    subfolders: dict[str, set[str]] = {}
    for path in paths:
        folders = path.split("/")[1:-1]
        for depth in range(1, len(folders) + 1):
            prefix = "/" + "/".join(folders[:depth])
            counts[prefix] = counts.get(prefix, 0) + 1
            if depth < len(folders):
                subfolders.setdefault(prefix, set()).add(folders[depth])
    projects = [
        p
        for p, n in counts.items()
        if n * 4 >= len(paths) * 3 and len(subfolders.get(p, ())) >= 2 and p.count("/") >= 2
    ]
    if not projects:
        return ""
    return max(projects, key=lambda p: (p.count("/"), p)).rsplit("/", 1)[0]


def _read(entries: list[_Entry], root: str = "") -> _State:
    state = _State(root)
    if root:
        state.add(VALUES, -1, _WORKDIR + root, 3)
    # The calls of the latest calls paragraph not yet answered, in order: results follow
    # their calls in order, and a result's label names its tool only sometimes.
    pending: list[tuple[str, str, str]] = []  # (tool name, command or "", path or "")
    for entry in entries:
        pos, text = entry.pos, entry.text
        if entry.kind == "summary":
            _read_summary(state, entry)
        elif entry.kind == "user" or (entry.kind == "other" and len(entries) == 1):
            _read_user(state, entry)
        elif entry.kind == "assistant":
            state.file_actions_from_text(text, pos)
            if state.pending_error is not None:
                fix = _fix_sentence(text)
                if fix:
                    state.pending_error.text = _clip(f"{state.pending_error.text} → {fix}")
                state.pending_error = None
            for sentence in _sentences(text):
                if _TASK_CUE.search(sentence):
                    state.add(TASKS, pos, sentence)
                if _STRONG_RULE.search(sentence) and not _ERROR.search(sentence):
                    state.add(RULES, pos, sentence, -3)
                elif _DECISION.search(sentence):
                    state.add(DECISIONS, pos, sentence)
                if _step_statement(sentence):
                    state.add(WORK, pos, _STEP + sentence)
                for value in _VALUE.findall(sentence):
                    state.add(VALUES, pos, sentence if len(sentence) <= 160 else value)
                    break
            if len(text.split()) >= 6:  # "Sounds good." says nothing of the work
                state.add(WORK, pos, _SAID + " ".join(_sentences(text)[:2]))
        elif entry.kind == "calls":
            _read_calls(state, entry, pending)
        elif entry.kind == "result":
            _read_result(state, entry, pending)
        elif entry.kind == "other":
            for sentence in _sentences(text):
                if _STRONG_RULE.search(sentence):
                    state.add(RULES, pos, sentence, -1)
    return state


def _read_user(state: _State, entry: _Entry) -> None:
    text = _strip_markup(entry.text)
    if not text:
        return
    if state.first_request_pos is None:
        state.first_request_pos = entry.pos
        state.add(REQUESTS, entry.pos, _clip(text, _REQUEST_CHARS), 2)
    else:
        state.add(REQUESTS, entry.pos, text)
    state.last_request = text
    for sentence in _sentences(text):
        if _RULE.search(sentence):
            state.add(RULES, entry.pos, sentence, 1)
        elif _DECISION.search(sentence):
            state.add(DECISIONS, entry.pos, sentence, 1)
        elif _TASK_CUE.search(sentence):
            state.add(TASKS, entry.pos, sentence)
        if _step_statement(sentence):
            state.add(WORK, entry.pos, _STEP + sentence)
        for value in _VALUE.findall(sentence):
            state.add(VALUES, entry.pos, sentence if len(sentence) <= 160 else value)
            break
    state.file_actions_from_text(text, entry.pos)


def _strip_markup(text: str) -> str:
    """A user message without what the agent, not the user, put in it: notices in XML-like
    tags (reminders, background-task notifications, command output) and bracketed notices
    (``[Request interrupted by user]``); the tags around the user's own command are dropped,
    their text kept."""
    text = re.sub(_NOTICE_BLOCK, " ", text)
    text = re.sub(r"</?[\w-]+>", " ", text).strip()
    return "" if re.fullmatch(r"\[[^\]]*\]", text) else text


def _read_calls(state: _State, entry: _Entry, pending: list[tuple[str, str, str]]) -> None:
    shown: list[str] = []
    pending.clear()
    for tool, args in _calls(entry.text):
        if state.todos(args, entry.pos):
            shown.append(f"{tool} (task list)")
            pending.append((tool.lower(), "", ""))
            continue
        state.file_actions_from_call(tool, args, entry.pos)
        command_match = _COMMAND_ARG.search(args)
        command = _unescape(command_match.group(1)) if command_match else ""
        if command and command.lower() not in ("create", "view", "str_replace", "insert"):
            command = command.strip()
            state.file_actions_from_shell(command, entry.pos)
            first = _clip(command.splitlines()[0] if command.splitlines() else command, 160)
            state.commands[first] = (entry.pos, "")
            pending.append((tool.lower(), first, ""))
            shown.append(f"{tool}: {first}")
        else:
            paths = [_unescape(p) for p in _PATH_ARG.findall(args)]
            shown.append(f"{tool} {paths[0]}" if paths else tool)
            pending.append((tool.lower(), "", paths[0] if paths else ""))
    if shown:
        state.last_call = _clip("; ".join(shown), 300)
        state.add(WORK, entry.pos, _CALLED + state.last_call)


def _read_result(state: _State, entry: _Entry, pending: list[tuple[str, str, str]]) -> None:
    text = entry.text
    tool = entry.tool.lower()
    index = next((i for i, call in enumerate(pending) if call[0] == tool), 0) if tool else 0
    _, command, path = pending.pop(index) if pending else ("", "", "")
    if not path:
        # "cat -n config/app.yaml" as a command, or an editor's "view" of one.
        named = _CONFIG_PATH.search(command) or _CONFIG_PATH.search(text[:300])
        path = named.group(0) if named else ""
    if _CONFIG_PATH.fullmatch(path.rsplit("/", 1)[-1]):
        _read_config(state, entry.pos, path, text)

    outcome = _outcome(text)
    if command:
        old_pos, _ = state.commands.get(command, (entry.pos, ""))
        state.commands[command] = (max(old_pos, entry.pos), outcome)
    elif outcome and _RESULT_LINE.search(outcome):
        state.add(VALUES, entry.pos, outcome, -1)
    state.file_actions_from_text(text, entry.pos)
    if entry.error or _ERROR.search(_error_line(text[:2000])):
        line = _error_line(text)
        if line and (entry.error or _ERROR.search(line)):
            where = f"`{command}`: " if command else (f"{entry.tool}: " if entry.tool else "")
            item = _Item(ERRORS, entry.pos, _clip(where + line), 0)
            state.items.append(item)
            state.pending_error = item
    for line in text[:6000].splitlines():
        # File contents (numbered lines, code) state no rules; specs and notes do.
        if _NUMBERED.match(line) or _CODE_LINE.search(line) or len(line.split()) < 3:
            continue
        for sentence in _sentences(line):
            if (_STRONG_RULE.search(sentence) or _NO_GO.match(sentence)) and not _ERROR.search(
                sentence
            ):
                state.add(RULES, entry.pos, sentence, -2)


# --- choosing and rendering ----------------------------------------------------------------


def _file_items(state: _State) -> list[_Item]:
    items = []
    for path, file in state.files.items():
        actions = file.actions[-3:]
        shown = [
            f"renamed to {file.renamed_to}" if a == "renamed" and file.renamed_to else a
            for a in actions
        ]
        # Files created, deleted or renamed first (the shape of the repository), then the
        # ones edited, then the ones only read.
        rank = 2 if set(file.actions) & _RESHAPING else 1 if set(file.actions) & _CHANGING else 0
        change = f" ({file.change})" if file.change and file.actions[-1] == "edited" else ""
        items.append(_Item(FILES, file.pos, f"{path}: {', then '.join(shown)}{change}", rank))
    return items


def _task_items(state: _State) -> list[_Item]:
    items = []
    for task, (status, pos) in state.tasks.items():
        done = status in ("completed", "complete", "done", "closed", "cancelled")
        suffix = "" if done or status == "pending" else f" ({status.replace('_', ' ')})"
        items.append(_Item(DONE if done else TASKS, pos, task + suffix, 1))
    return items


def _command_items(state: _State) -> list[_Item]:
    return [
        _Item(COMMANDS, pos, _clip(f"{command} → {outcome}" if outcome else command, 300), 1)
        for command, (pos, outcome) in state.commands.items()
    ]


def _setting_items(state: _State) -> list[_Item]:
    return [_Item(VALUES, pos, text, 1) for pos, text in state.settings.values()]


def _dedupe(items: list[_Item]) -> list[_Item]:
    """One item per text and section, the newest occurrence."""
    newest: dict[tuple[str, str], _Item] = {}
    for item in items:
        key = (item.section, " ".join(item.text.lower().split()))
        old = newest.get(key)
        if old is None or (item.pos, item.rank) >= (old.pos, old.rank):
            newest[key] = item
    return list(newest.values())


def _key(text: str) -> str:
    """What makes two items the same text (the work section's labels aside)."""
    text = text.removeprefix(_STEP).removeprefix(_SAID).removeprefix(_CALLED)
    return " ".join(text.lower().split()).strip(" .")


def _render(chosen: dict[str, list[_Item]]) -> str:
    blocks = []
    for title in SNAPSHOT_SECTIONS:
        items = sorted(chosen.get(title, []), key=lambda i: i.pos)
        if items:
            blocks.append(title + ":\n" + "".join(f"- {i.text}\n" for i in items))
    return "\n".join(blocks).rstrip("\n")


def state_snapshot(text: str, max_tokens: int) -> str:
    """A state snapshot of the conversation ``text`` within ``max_tokens``.

    Args:
        text: The rendered conversation (``[User]: …`` paragraphs, or ``user: …`` lines, or
            any notes), possibly opened by an earlier snapshot.
        max_tokens: Budget for the whole output (by :func:`estimate_tokens`); 0 or less
            gives ``""``.

    Returns:
        Plain text in sections (:data:`SNAPSHOT_SECTIONS`, each only when it has content):
        ``- item`` lines in their original order.
    """
    limit = max(0, max_tokens) * 3  # estimate_tokens is ceil(chars / 3)
    if limit == 0 or not text or not text.strip():
        return ""
    state = _read(_parse(text), _root(text))
    items = _dedupe(
        [i for i in state.items if i.section != WORK]
        + _file_items(state)
        + _task_items(state)
        + _command_items(state)
        + _setting_items(state)
    )
    # What was being done last: the newest step announced, the newest thing said and the
    # newest tool calls (the step first: it names the work, the others what happened last).
    work = []
    for rank, prefix in enumerate((_STEP, _SAID, _CALLED)):
        latest = [i for i in state.items if i.section == WORK and i.text.startswith(prefix)]
        for item in sorted(latest, key=lambda i: -i.pos)[:1]:
            work.append(_Item(WORK, item.pos, item.text, 2 - rank))
    chosen: dict[str, list[_Item]] = {}
    used = 0

    def cost(item: _Item) -> int:
        header = len(item.section) + 3 if not chosen.get(item.section) else 0
        return len(item.text) + 3 + header

    shown: set[str] = set()

    def take(item: _Item) -> bool:
        """Add ``item`` if it fits; an item already shown in another section counts as
        taken, so no text is paid for twice."""
        nonlocal used
        key = _key(item.text)
        if key in shown:
            return True
        need = cost(item)
        if used + need > limit:
            return False
        chosen.setdefault(item.section, []).append(item)
        shown.add(key)
        used += need
        return True

    if state.last_request:
        room = limit - len(LATEST) - 8
        if room >= 8:
            take(_Item(LATEST, 10**9, _clip(state.last_request, min(room, _REQUEST_CHARS))))
            # Shown once, as the latest request, not again as a request, rule or decision.
            shown.add(_key(_clip(state.last_request)))
    by_section: dict[str, list[_Item]] = {}
    for item in [*items, *work]:
        by_section.setdefault(item.section, []).append(item)
    for queue in by_section.values():
        queue.sort(key=lambda i: (-i.rank, -i.pos))
    # First pass: each section up to its share; second: any section, in priority order.
    for title in _PRIORITY:
        spent, cap = 0, int(limit * _SHARES.get(title, 0.0))
        for item in list(by_section.get(title, [])):
            if spent + cost(item) > cap:
                break
            spent += cost(item)
            if take(item):
                by_section[title].remove(item)
    for title in _PRIORITY:
        for item in list(by_section.get(title, [])):
            if take(item):
                by_section[title].remove(item)
    # Room left: the extractive summary of what was said, then of what the tools printed
    # (file contents and search hits left out: they quote code, not events).
    entries = _parse(text)
    said = [e.text for e in entries if e.kind in ("assistant", "user", "other", "thinking")]
    printed = [
        "\n".join(ln for ln in e.text.splitlines() if not _NUMBERED.match(ln))
        for e in entries
        if e.kind == "result"
    ]
    order = 0
    for source in (said, printed):
        room_tokens = (limit - used - len(NOTES) - 4) // 3
        if room_tokens <= 20 or not source:
            continue
        for line in summarize_text("\n".join(source), room_tokens).splitlines():
            if line.startswith("- "):
                order += 1
                take(_Item(NOTES, order, line[2:]))
    out = _render(chosen)
    # The cost model is an upper bound, so this never cuts; it guards the contract anyway.
    return out if estimate_tokens(out) <= max_tokens else out[:limit]
