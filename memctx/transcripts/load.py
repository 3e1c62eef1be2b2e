"""Load real agent transcripts as provider-format message lists, ready to send or replay.

Supported files, recognised by their content (the extension is never trusted):

- ``claude-code``: Claude Code session JSONL -> Anthropic messages (see
  :mod:`memctx.transcripts.claude` for how block-per-record logging is undone).
- ``swe-agent``: a ``.traj`` JSON object with a ``history`` list -> OpenAI chat messages.
  ``tool_call_ids[0]`` becomes ``tool_call_id``; a tool message answering several ids is
  repeated once per id (each call needs its own result; SWE-agent itself only ever writes one),
  and one without ids becomes a ``user`` observation.
- ``openhands``: a JSON list of ``{instance_id, messages, tools, ...}`` -> OpenAI chat messages
  with null-valued keys removed; ``tools`` goes to ``meta``.
- ``nebius``: a JSON list of ``{instance_id, trajectory: [{role, system_prompt | text}]}`` ->
  plain system / user / assistant text messages (role ``ai`` is the assistant; its tool calls
  stay fenced blocks in the text, as the model wrote them).
- ``openai`` / ``anthropic``: a JSON list of messages, an object with ``messages`` (and an
  optional Anthropic-style top-level ``system``, which becomes a leading system message), or
  JSONL with one message per line. Anthropic when blocks are ``tool_use`` / ``tool_result`` /
  ``thinking``; OpenAI when messages use ``tool_calls`` / ``role: tool``; OpenAI otherwise.

Messages keep only their provider's API fields (``_OPENAI_KEYS``; Anthropic: ``role`` and
``content``) with null values dropped; a message's ``usage`` moves to :attr:`Transcript.usage`,
other dropped keys are counted in ``meta["dropped_keys"]``. Bad input raises
:class:`~memctx.errors.TranscriptError` (naming the file, what was seen and the supported
formats) and nothing else; unreadable lines or entries are skipped and counted in ``skipped``.

Files are read through :mod:`memctx.transcripts.files`: regular files only (a directory,
FIFO, socket or device is refused before it is opened for reading), at most
``$MEMCTX_MAX_INPUT_BYTES`` (512 MiB by default) or ``max_bytes``, JSONL one line at a time.
Error messages give the path, the line and byte offset and what was expected, never the
file's text: not a bad line, not a JSON key, not a role or record type read from it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctx.errors import TranscriptError
from memctx.messages import RoleKind, role_kind

from .claude import looks_like_claude_record, parse_claude_code
from .files import InputFile, InputLine, open_input_file

__all__ = ["FORMATS", "Transcript", "Usage", "load_transcript", "load_transcripts"]

FORMATS = ("claude-code", "swe-agent", "openai", "anthropic", "openhands", "nebius")

_SUPPORTED = (
    "supported formats: claude-code (JSONL records typed user/assistant/...), swe-agent (.traj "
    "JSON object with a 'history' list), openhands (JSON list of {instance_id, messages}), "
    "nebius (JSON list of {instance_id, trajectory}), openai / anthropic (a JSON list of "
    "messages, an object with 'messages', or JSONL with one message per line)"
)
_OPENAI_KEYS = frozenset(
    {"role", "content", "name", "tool_calls", "tool_call_id", "function_call", "refusal"}
    | {"audio", "reasoning_content"}
)
_ANTHROPIC_KEYS = frozenset({"role", "content"})
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})
_NEBIUS_ROLES = {"ai": "assistant", "human": "user"}


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage the provider reported for one assistant message."""

    input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    output_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        """Every prompt token the request carried: input + cache read + cache creation."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    @classmethod
    def from_mapping(cls, raw: object) -> Usage | None:
        """Read an Anthropic or OpenAI ``usage`` object (``None`` when it is neither).

        OpenAI's ``prompt_tokens_details.cached_tokens`` count as cache reads.
        """
        if not isinstance(raw, Mapping):
            return None
        if "input_tokens" in raw or "output_tokens" in raw:
            return cls(
                _int(raw.get("input_tokens")),
                _int(raw.get("cache_read_input_tokens")),
                _int(raw.get("cache_creation_input_tokens")),
                _int(raw.get("output_tokens")),
            )
        if "prompt_tokens" in raw or "completion_tokens" in raw:
            details = raw.get("prompt_tokens_details")
            cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
            prompt = _int(raw.get("prompt_tokens"))
            return cls(max(prompt - cached, 0), cached, 0, _int(raw.get("completion_tokens")))
        return None


@dataclass
class Transcript:
    """One conversation read from a file.

    Attributes:
        messages: Provider-format message dicts, ready to send.
        format: One of :data:`FORMATS`.
        source: The file it came from.
        session_id: The session / instance id when the file names one.
        compaction_boundary: ``messages[:compaction_boundary]`` is the history that was
            compacted (Claude Code ``compact_boundary``); ``None`` without a compaction.
        compact_summary: Index of the message holding the compaction summary.
        usage: Assistant message index -> provider-reported usage.
        skipped: Records or entries skipped, by reason.
        meta: Everything else worth keeping (tools, instance info, counters).
    """

    messages: list[dict[str, Any]]
    format: str
    source: str
    session_id: str | None = None
    compaction_boundary: int | None = None
    compact_summary: int | None = None
    usage: dict[int, Usage] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def load_transcript(
    path: str | Path, format: str = "auto", *, max_bytes: int | None = None
) -> Transcript:
    """Load a file that holds exactly one transcript.

    Args:
        path: The transcript file.
        format: ``"auto"`` (detect from content) or one of :data:`FORMATS`.
        max_bytes: The size cap (see :func:`load_transcripts`).

    Returns:
        The transcript.

    Raises:
        TranscriptError: As :func:`load_transcripts`, or the file holds several transcripts.
    """
    found = load_transcripts(path, format, max_bytes=max_bytes)
    if len(found) != 1:
        raise TranscriptError(
            f"{path}: holds {len(found)} {found[0].format} transcripts; "
            "use load_transcripts() to read them all"
        )
    return found[0]


def load_transcripts(
    path: str | Path, format: str = "auto", *, max_bytes: int | None = None
) -> list[Transcript]:
    """Load every transcript a file holds (OpenHands / nebius files hold several).

    Only regular files are read (a directory, FIFO, socket or device is refused), at most
    ``max_bytes`` of them; JSONL is read line by line. Errors name the file, the line and the
    byte offset, never the file's content.

    Args:
        path: The transcript file.
        format: ``"auto"`` (detect from content) or one of :data:`FORMATS`.
        max_bytes: The size cap; ``None`` means ``$MEMCTX_MAX_INPUT_BYTES`` or 512 MiB
            (:func:`~memctx.transcripts.files.max_input_bytes`).

    Returns:
        The transcripts in file order; each has at least one message.

    Raises:
        TranscriptError: The file is missing, not a regular file, over the size cap, empty,
            not UTF-8, not a supported format, not the ``format`` asked for, or holds no
            message.
    """
    if format != "auto" and format not in FORMATS:
        raise TranscriptError(f"unknown transcript format {format!r}; {_SUPPORTED}")
    source = str(path)
    plain = format if format in ("openai", "anthropic") else None
    with open_input_file(path, what="transcript", max_bytes=max_bytes) as handle:
        found = _read(handle, source, plain)
    if format != "auto" and any(t.format != format for t in found):
        raise TranscriptError(f"{source}: asked for {format} but the content is {found[0].format}")
    for t in found:
        if not t.messages:
            raise TranscriptError(
                f"{source}: no message found in the {t.format} content "
                f"(skipped: {_skip_counts(t.skipped) or 'nothing'}); {_SUPPORTED}"
            )
    return found


def _skip_counts(skipped: Mapping[str, int]) -> dict[str, int]:
    """Skip counts by reason, without the values read from the file (``unknown_role:X``)."""
    out: Counter[str] = Counter()
    for reason, count in skipped.items():
        out[reason.partition(":")[0]] += count
    return dict(out)


def _json_error(exc: BaseException, *, line: bool = True) -> str:
    """What a JSON parse error says, without quoting the text it failed on."""
    if isinstance(exc, json.JSONDecodeError):
        where = f"line {exc.lineno} column {exc.colno}" if line else f"column {exc.colno}"
        return f"{exc.msg} at {where}"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return type(exc).__name__


def _read(handle: InputFile, source: str, plain: str | None) -> list[Transcript]:
    """Whole-file JSON, or JSONL read line by line.

    A file whose first non-blank line is a JSON value on its own is JSONL (or a one-line
    JSON file); otherwise the whole file is parsed as one JSON document, and only if that
    fails is it read as JSONL with its bad lines skipped.
    """
    lines = (line for line in handle.lines() if line.text.strip())
    first = next(lines, None)
    if first is None:
        raise TranscriptError(f"{source}: the file is empty; {_SUPPORTED}")
    try:
        doc = json.loads(first.text)
    except (ValueError, RecursionError):
        text = handle.read_text()
        try:
            whole = json.loads(text)
        except (ValueError, RecursionError) as exc:
            del text
            return _from_jsonl(handle.lines(), source, _json_error(exc), plain)
        return _from_json(whole, source, plain)
    second = next(lines, None)
    if second is None:  # one line: the whole file is that JSON value
        return _from_json(doc, source, plain)
    return _from_jsonl(handle.lines(), source, "more than one JSON value", plain)


def _describe(value: object) -> str:
    """The shape of a JSON value, without its keys or values (they are the file's content)."""
    if isinstance(value, Mapping):
        return f"a JSON object with {len(value)} keys, none of 'history', 'messages' or 'role'"
    if isinstance(value, list):
        kinds = sorted({type(v).__name__ for v in value})
        if value and isinstance(value[0], Mapping):
            return (
                f"a JSON list of {len(value)} items, the first an object with {len(value[0])} "
                "keys, none of 'messages', 'trajectory' or 'role'"
            )
        return f"a JSON list of {len(value)} items ({', '.join(kinds) or 'empty'})"
    return f"a JSON {type(value).__name__}"


def _from_json(doc: object, source: str, plain: str | None) -> list[Transcript]:
    """Dispatch a whole-file JSON document on its shape."""
    if isinstance(doc, Mapping):
        if isinstance(doc.get("history"), list):
            return [_swe_agent(doc, source)]
        if isinstance(doc.get("messages"), list):
            return [_plain(doc["messages"], source, doc, plain)]
        if looks_like_claude_record(doc):  # a one-line Claude Code JSONL file
            return [_claude([doc], Counter(), source)]
        if isinstance(doc.get("role"), str):  # a one-line message JSONL file
            return [_plain([doc], source, {}, plain)]
    elif isinstance(doc, list) and doc:
        items = [d for d in doc if isinstance(d, Mapping)]
        if items and all(isinstance(d.get("trajectory"), list) for d in items):
            return [_nebius(d, i, source) for i, d in enumerate(items)]
        if items and all(isinstance(d.get("messages"), list) for d in items):
            kind = "openhands" if any("instance_id" in d for d in items) else plain
            return [_plain(d["messages"], source, d, kind, i) for i, d in enumerate(items)]
        if items and any(isinstance(d.get("role"), str) for d in items):
            return [_plain(doc, source, {}, plain)]
        if items and all(looks_like_claude_record(d) for d in items):
            return [_claude(list(doc), Counter(), source)]
    hint = " (a SWE-agent trajectory needs 'history')" if _has_trajectory(doc) else ""
    raise TranscriptError(f"{source}: unrecognised content: {_describe(doc)}{hint}; {_SUPPORTED}")


def _has_trajectory(doc: object) -> bool:
    return isinstance(doc, Mapping) and "trajectory" in doc


def _from_jsonl(
    lines: Iterable[InputLine], source: str, whole_error: str, plain: str | None
) -> list[Transcript]:
    """Read one JSON value per line; bad lines are skipped and counted."""
    records: list[Any] = []
    skipped: Counter[str] = Counter()
    first_bad = ""
    for line in lines:
        if not line.text.strip():
            continue
        try:
            records.append(json.loads(line.text))
        except (ValueError, RecursionError) as exc:
            skipped["invalid_json"] += 1
            first_bad = first_bad or (
                f"line {line.number} (byte offset {line.offset}): {_json_error(exc, line=False)}"
            )
    objects = [r for r in records if isinstance(r, Mapping)]
    if any(looks_like_claude_record(r) for r in objects):
        return [_claude(records, skipped, source)]
    if any(isinstance(r.get("role"), str) for r in objects):
        skipped["not_a_message"] += len(records) - len(objects)
        return [_plain(objects, source, {}, plain, skipped=skipped)]
    seen = f"{len(records)} JSON lines, none a message or Claude Code record" if records else ""
    raise TranscriptError(
        f"{source}: neither JSON ({whole_error}) nor JSONL "
        f"({seen or 'no line is valid JSON'}; first bad {first_bad or 'line: none'}); "
        f"{_SUPPORTED}"
    )


def _claude(records: list[Any], skipped: Counter[str], source: str) -> Transcript:
    parsed = parse_claude_code(records)
    usage = {i: u for i, raw in parsed.usage.items() if (u := Usage.from_mapping(raw))}
    return Transcript(
        messages=parsed.messages,
        format="claude-code",
        source=source,
        session_id=parsed.session_id,
        compaction_boundary=parsed.compaction_boundary,
        compact_summary=parsed.compact_summary,
        usage=usage,
        skipped=dict(skipped + parsed.skipped),
        meta=parsed.meta,
    )


def _clean(
    message: Mapping[str, Any], keep: frozenset[str], dropped: Counter[str]
) -> dict[str, Any]:
    """Keep the API fields of ``message`` that are not null; count what goes."""
    out: dict[str, Any] = {}
    for key, value in message.items():
        if value is None:
            continue
        if key not in keep:
            dropped[str(key)] += 1
        elif key == "tool_calls" and isinstance(value, list):
            out[key] = [
                {k: v for k, v in c.items() if v is not None} if isinstance(c, Mapping) else c
                for c in value
            ]
        else:
            out[key] = value
    return out


def _provider(messages: list[Any], system: object) -> str:
    """``anthropic`` or ``openai``, from the tool/thinking shapes the messages use."""
    openai = anthropic = 0
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        if "tool_calls" in message or "tool_call_id" in message or message.get("role") == "tool":
            openai += 1
        content = message.get("content")
        if isinstance(content, list):
            types = {str(b.get("type")) for b in content if isinstance(b, Mapping)}
            anthropic += bool(types & _ANTHROPIC_BLOCKS)
            openai += "image_url" in types
    if anthropic > openai or (not openai and isinstance(system, str | list)):
        return "anthropic"
    return "openai"


def _plain(
    messages: list[Any],
    source: str,
    container: Mapping[str, Any],
    kind: str | None = None,
    index: int | None = None,
    skipped: Counter[str] | None = None,
) -> Transcript:
    """OpenAI / Anthropic message lists (and OpenHands, which is OpenAI with nulls)."""
    skipped = Counter() if skipped is None else skipped
    system = container.get("system")
    fmt = kind or _provider(messages, system)
    keep = _ANTHROPIC_KEYS if fmt == "anthropic" else _OPENAI_KEYS
    dropped: Counter[str] = Counter()
    out: list[dict[str, Any]] = []
    usage: dict[int, Usage] = {}
    if isinstance(system, str | list) and system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if not isinstance(message, Mapping):
            skipped["not_a_message"] += 1
        elif role_kind(message) is RoleKind.UNKNOWN:
            skipped[f"unknown_role:{message.get('role')}"] += 1
        else:
            u = Usage.from_mapping(message.get("usage"))
            if u is not None and role_kind(message) is RoleKind.ASSISTANT:
                usage[len(out)] = u
            out.append(_clean(message, keep, dropped))
    meta: dict[str, Any] = {k: v for k, v in container.items() if k not in ("messages", "system")}
    if index is not None:
        meta["index"] = index
    dropped.pop("usage", None)
    if dropped:
        meta["dropped_keys"] = dict(dropped)
    sid = container.get("instance_id", container.get("session_id"))
    sid = sid if isinstance(sid, str) else None
    return Transcript(out, fmt, source, sid, usage=usage, skipped=dict(+skipped), meta=meta)


def _swe_agent(doc: Mapping[str, Any], source: str) -> Transcript:
    """SWE-agent ``history``: OpenAI chat once the agent's own keys are gone."""
    out: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    split = 0
    for entry in doc["history"]:
        if not isinstance(entry, Mapping) or role_kind(entry) is RoleKind.UNKNOWN:
            skipped["not_a_message"] += 1
            continue
        message = _clean(entry, _OPENAI_KEYS, dropped)
        if message["role"] != "tool":
            out.append(message)
            continue
        raw_ids = entry.get("tool_call_ids")
        ids = [i for i in raw_ids if isinstance(i, str)] if isinstance(raw_ids, list) else []
        if ids:
            out.extend({**message, "tool_call_id": call_id} for call_id in ids)
            split += len(ids) - 1
        elif "tool_call_id" in message:
            out.append(message)
        else:  # an observation nobody asked for by id: valid only as a user message
            out.append({"role": "user", "content": message.get("content", "")})
            skipped["tool_message_without_id_as_user"] += 1
    dropped.pop("tool_call_ids", None)  # converted, not lost
    meta: dict[str, Any] = {"dropped_keys": dict(dropped)} if dropped else {}
    if split:
        meta["tool_messages_repeated_per_id"] = split
    if isinstance(doc.get("info"), Mapping):
        meta["info"] = doc["info"]
    return Transcript(
        out, "swe-agent", source, Path(source).stem, skipped=dict(+skipped), meta=meta
    )


def _nebius(doc: Mapping[str, Any], index: int, source: str) -> Transcript:
    """One nebius trajectory: ``system_prompt`` / ``text`` fields, role ``ai``."""
    out: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    for step in doc["trajectory"]:
        role = step.get("role") if isinstance(step, Mapping) else None
        role = _NEBIUS_ROLES.get(role, role) if isinstance(role, str) else None
        text = step.get("text") if isinstance(step, Mapping) else None
        if not isinstance(text, str) and isinstance(step, Mapping):
            text = step.get("system_prompt")
        if role not in ("system", "user", "assistant") or not isinstance(text, str):
            skipped["unreadable_step"] += 1
            continue
        out.append({"role": role, "content": text})
    meta = {k: v for k, v in doc.items() if k != "trajectory"}
    meta["index"] = index
    sid = doc.get("instance_id")
    session_id = sid if isinstance(sid, str) else None
    return Transcript(out, "nebius", source, session_id, skipped=dict(+skipped), meta=meta)
