"""Extractive summaries for the offline model: keep the lines a later turn will need.

A compaction summary exists so that the agent can carry on: what was decided, which files
it touched, what failed, and what is still to do. Without a real model the best cheap
approximation is extractive: score every line (or sentence, for long lines) by general
cues, then keep the best ones that fit the token budget, in their original order, grouped
under short section headings. The cues are generic, not tuned to any dataset:

- decision cues ("decided", "instead of", "must", "don't", "switched to", "fixed", and
  weaker ones such as "use", "should");
- errors (``Traceback``, ``SomethingError``, ``Error:``, ``FAILED``, non-zero exit codes);
- open tasks ("TODO", "FIXME", "next step", "still need");
- file paths, identifiers (CamelCase, snake_case, dotted, ``call()``, backticked code),
  numbers with units, versions and ports;
- the last user request, which is always kept (truncated if need be).

Code lines (imports, definitions, braces) are penalised so that pasted source files do not
crowd out the conversation; traceback frame lines are dropped in favour of the exception
line. Ties go to the later line: in a conversation the recent state is the current one.
Everything is deterministic: the same text and budget give the same summary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memctx.messages import estimate_tokens

__all__ = ["SECTION_TITLES", "summarize_text"]

DECISIONS, FILES, ERRORS, TASKS, DETAILS = "Decisions", "Files", "Errors", "Open tasks", "Details"
SECTION_TITLES = (DECISIONS, FILES, ERRORS, TASKS, DETAILS)
_MAX_UNIT_CHARS = 280  # one kept line never takes more than ~95 tokens
_SPLIT_OVER_CHARS = 160  # longer lines are split into sentences and scored one by one
_LATEST = "Latest request: "

_ERROR_STRONG = re.compile(
    r"Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception)\b|\bError:|\bERROR\b"
    r"|\bFAILED\b|\bfatal:|\bpanic:|exit (?:code|status):? [1-9]|Segmentation fault|错误|失败"
)
_ERROR_WEAK = re.compile(
    r"\b(?:errors?|failed|failing|fails|failure|exceptions?|crash(?:ed|es)?|broken|bug)\b", re.I
)
_DECISION_STRONG = re.compile(
    r"\b(?:decided|decide|decision|instead of|must|must not|don[’']t|do not|never|always"
    r"|switch(?:ed)? to|chose|choose|agreed|going with|settled on|fixed|resolved|root cause"
    r"|prefer|we(?:'ll| will) use|let[’']s use)\b|决定|改用|必须|不要|修复",
    re.I,
)
_OUTCOME = re.compile(r"\b(?:fixed|resolved|root cause)\b|修复", re.I)
_DECISION_WEAK = re.compile(
    r"\b(?:use|using|should|will|renamed?|moved?|replaced?|changed?|set to)\b", re.I
)
_TASK = re.compile(
    r"\bTODO\b|\bFIXME\b|\b(?:next step|still need|needs? to|remaining|pending|not yet"
    r"|follow[- ]up|left to do)\b|待办|下一步",
    re.I,
)
_CODE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import |return\b|@\w|#include|const |let |var "
    r"|function\b|public |private |[]}{)(]+[;,]?$)|[;{]\s*$"
)
# Stack frames, caret markers and the bare "Traceback" header: the exception line that
# follows says what went wrong, and frames would crowd it out.
_FRAME = re.compile(
    r'^\s*(?:File ".+", line \d+|at [\w.$<>]+\(.*\)$|[~^]+\s*$|Traceback \(most recent call)'
)
_PY_FRAME = re.compile(r'^\s*File ".+", line \d+')
_PATH_CANDIDATE = re.compile(r"(?<![\w/.:-])(?:~|\.{1,2})?/?(?:[\w.-]+/)*[\w.-]*[A-Za-z][\w.-]*")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
_IDENT = re.compile(
    r"`[^`\n]{2,80}`|\b(?:[a-z]+(?:[A-Z][a-z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+"
    r"|[A-Za-z][A-Za-z0-9]*_\w+|[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+|[A-Za-z_]\w*\(\))"
)
_NUMBER = re.compile(
    r"\b\d+(?:[.,]\d+)?\s?(?:ms|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?"
    r"|[kmgt]i?b|k|%|px|tokens?|bytes?|lines?|rps|qps|req/s|x|usd|eur)(?!\w)"
    r"|\$\d[\d,.]*|\bport\s+\d{2,5}\b|\bv?\d+\.\d+\.\d+\b",
    re.I,
)
# "user: ...", "[user] ...", "[tool bash] ...", "**Assistant:** ...", "tool (grep): ...".
_ROLE = re.compile(
    r"^\s*[\[(*]*\s*(user|human|assistant|ai|tool|system)\b(?:\s+[\w.-]+|\s*\([^)\n]{0,40}\))?"
    r"\s*[]:]\s*(?:\*\*)?\s*",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])|(?<=[。！？])")


@dataclass(slots=True)
class _Unit:
    pos: int
    text: str
    section: str
    score: int


def _is_path(token: str) -> bool:
    token = token.rstrip(".,:;")
    if "/" not in token:
        # A bare file name counts when it has an extension and is not a dotted identifier.
        return bool(_EXTENSION.search(token)) and token.count(".") == 1 and len(token) > 3
    parts = [p for p in token.split("/") if p not in ("", ".", "..", "~")]
    if len(parts) < 2 and not token.startswith(("/", "./", "~/", "../")):
        return False
    return bool(_EXTENSION.search(token)) or len(parts) >= 3 or token.startswith(("/", "~/"))


def _paths(text: str) -> list[str]:
    return [m.rstrip(".,:;") for m in _PATH_CANDIDATE.findall(text) if _is_path(m)]


def _classify(text: str) -> tuple[str, int]:
    """The section a line belongs to and how much it is worth keeping (0: not at all)."""
    features = min(2, len(_IDENT.findall(text)) + len(_NUMBER.findall(text)) + len(_paths(text)))
    bonus = min(1, features)
    code_penalty = 2 if _CODE.search(text) else 0
    if _ERROR_STRONG.search(text) and not _OUTCOME.search(text):
        return ERRORS, 5 + bonus
    if _DECISION_STRONG.search(text):
        return DECISIONS, 4 + bonus - code_penalty
    if _TASK.search(text):
        return TASKS, 4 + bonus
    if _ERROR_WEAK.search(text):
        return ERRORS, 3 + bonus - code_penalty
    if _DECISION_WEAK.search(text):
        return DECISIONS, 2 + bonus - code_penalty
    return DETAILS, features - code_penalty


def clip_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs made one space), cut to ``limit`` characters
    with an ellipsis: how a summary item is shortened."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def _dedupe_key(text: str) -> str:
    return " ".join(_ROLE.sub("", text).lower().split()).strip(" .:;-")


def _units(text: str) -> tuple[list[_Unit], list[_Unit]]:
    """Scored line/sentence units and file-path units, in reading order."""
    units: list[_Unit] = []
    files: list[_Unit] = []
    seen: set[str] = set()
    seen_paths: set[str] = set()
    pos = 0
    after_frame = False
    for line in text.splitlines():
        # A Python frame line is followed by the indented source line it points at.
        bare = _ROLE.sub("", line, count=1)  # "tool: Traceback ..." is still a traceback
        skip = not bare.strip() or _FRAME.search(bare) or (after_frame and line[:1].isspace())
        after_frame = bool(_PY_FRAME.search(bare))
        if skip:
            continue
        pieces = _SENTENCE.split(line) if len(line) > _SPLIT_OVER_CHARS else [line]
        for piece in pieces:
            clipped = clip_line(piece, _MAX_UNIT_CHARS)
            key = _dedupe_key(clipped)
            if not key:
                continue
            pos += 1
            for path in _paths(piece):
                if path not in seen_paths:
                    seen_paths.add(path)
                    files.append(_Unit(pos, clip_line(path, 120), FILES, 2))
            if key in seen:
                continue
            seen.add(key)
            section, score = _classify(clipped)
            units.append(_Unit(pos, clipped, section, score))
    return units, files


def _latest_request(text: str) -> str | None:
    """The last line that a user role prefix introduces (``user: ...``), without the prefix."""
    for line in reversed(text.splitlines()):
        match = _ROLE.match(line)
        if match and match.group(1).lower() in ("user", "human"):
            rest = line[match.end() :].strip()
            if rest:
                return rest
    return None


def summarize_text(text: str, max_tokens: int, *, last_request: str | None = None) -> str:
    """An extractive summary of ``text`` within ``max_tokens`` (by :func:`estimate_tokens`).

    Args:
        text: A conversation or any notes; role prefixes such as ``user:`` are understood.
        max_tokens: Budget for the whole output; 0 or less gives ``""``.
        last_request: The latest user request, always kept first; by default the last line
            of ``text`` that starts with ``user:`` or ``human:``.

    Returns:
        Plain text with sections ``Decisions``, ``Files``, ``Errors``, ``Open tasks`` and
        ``Details``, each only when it has content, items in their original order.
    """
    limit = max(0, max_tokens) * 3  # estimate_tokens is ceil(chars / 3)
    if limit == 0 or not text or not text.strip():
        return ""
    units, files = _units(text)
    request = last_request if last_request is not None else _latest_request(text)
    chosen: dict[str, list[_Unit]] = {title: [] for title in SECTION_TITLES}
    used = 0

    def cost(unit: _Unit) -> int:
        # "- " + text + "\n", and a "Title:\n" header plus a blank separator line the first
        # time a section gets an item: an upper bound on what rendering adds.
        header = len(unit.section) + 3 if not chosen[unit.section] else 0
        return len(unit.text) + 3 + header

    if request and request.strip():
        room = limit - (len(TASKS) + 3) - 3 - len(_LATEST)
        if room >= 8:
            key = _dedupe_key(request)
            # The request is shown once, as the latest request, not again as a plain line.
            units = [u for u in units if _dedupe_key(u.text) != key]
            clipped = clip_line(request, min(room, _MAX_UNIT_CHARS))
            unit = _Unit(len(units) + len(files) + 10**9, _LATEST + clipped, TASKS, 99)
            used += cost(unit)
            chosen[TASKS].append(unit)
    candidates = [u for u in units + files if u.score > 0]
    if not candidates and not chosen[TASKS]:
        candidates = units[-5:]  # nothing stands out: the most recent lines say most
    for unit in sorted(candidates, key=lambda u: (-u.score, -u.pos)):
        need = cost(unit)
        if used + need <= limit:
            chosen[unit.section].append(unit)
            used += need
    blocks = [
        title + ":\n" + "".join(f"- {u.text}\n" for u in sorted(chosen[title], key=_pos))
        for title in SECTION_TITLES
        if chosen[title]
    ]
    out = "\n".join(blocks).rstrip("\n")
    # The cost model is an upper bound, so this never cuts; it guards the contract anyway.
    return out if estimate_tokens(out) <= max_tokens else out[:limit]


def _pos(unit: _Unit) -> int:
    return unit.pos
