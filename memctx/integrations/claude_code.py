"""Claude Code's hooks run by memctx: ``settings.json`` install and uninstall, and the hook
command itself (``memctx claude-code hook``).

Claude Code runs a command hook with one event as JSON on stdin (``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name`` and the event's own fields) and, for
``UserPromptSubmit`` and ``SessionStart``, adds ``hookSpecificOutput.additionalContext``
from its stdout to the model's context. memctx answers three events:

- ``PreCompact``: the part of the transcript not archived yet goes to
  :meth:`MemoryContext.on_before_compact` (redacted, archived, extraction queued). How many
  messages of each session are archived is kept in the store, so the same transcript twice
  archives nothing new, and a later compaction archives only what came after the earlier.
- ``UserPromptSubmit``: the recall block for the prompt, nothing when nothing is relevant.
- ``SessionStart`` with source ``compact`` or ``resume``: the recall block for the last user
  request of the transcript, plus the rules and open tasks the knowledge store holds.

A hook must never stand in the agent's way: :func:`run_hook` catches everything, logs it to
``claude-code/hook.log`` in the store (or stderr when even that fails) and returns 0.
The store is one per project (``cwd``) unless the caller names one, so a new session of the
project recalls what the earlier ones archived.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from memctx.config import MemoryContextConfig
from memctx.errors import StoreError
from memctx.fs import atomic_write_beneath
from memctx.messages import is_compaction_summary, message_text
from memctx.runtime import MemoryContext
from memctx.store import KnowledgeStore, open_in_store, resolve_store_dir, validate_session_id
from memctx.text import Redactor, cut_middle
from memctx.transcripts import load_transcript

__all__ = [
    "HOOK_EVENTS",
    "MAX_CONTEXT_CHARS",
    "default_store_dir",
    "install",
    "run_hook",
    "uninstall",
]

MAX_CONTEXT_CHARS = 10_000
"""Most characters of ``additionalContext``: Claude Code shows longer context only as a
preview."""

HOOK_EVENTS = ("PreCompact", "UserPromptSubmit", "SessionStart")
"""The events memctx registers for; ``SessionStart`` only for sources ``compact|resume``."""

STORE_HOME_ENV = "MEMCTX_HOME"
"""Where per-project stores live (``$MEMCTX_HOME/claude-code/<project>-<hash>``); default
``~/.memctx``."""

PRECOMPACT_WAIT_S = 45.0
"""Most seconds PreCompact waits for archiving and extraction, within Claude Code's 60 s
hook timeout; extraction still running then is cut off (the messages are archived)."""

MCP_SERVER_NAME = "memctx"
HOOK_TIMEOUT_S = 60
_STATE_DIR = "claude-code"
_LOG_FILE = "hook.log"
# The block's first token cap: about 10,000 characters at the ~3 characters a token of
# code-heavy sessions; a block still over is rendered again with a cap scaled down to fit.
_RECALL_CAP_TOKENS = 3_300
_REFITS = 3
_WINDOW = 200_000
_NOTE_ROOM = 200  # the omission note and its two newlines
_TAIL_CHARS = 1_000
_RULE_TYPES = ("decision", "config", "architecture")
_TASK_TYPE = "task_state"
_MAX_FACTS = 20

logger = logging.getLogger(__name__)


# -- the store ---------------------------------------------------------------------------------


def default_store_dir(cwd: str | os.PathLike[str]) -> Path:
    """The store of the project at ``cwd``: one folder per project under ``$MEMCTX_HOME``
    (default ``~/.memctx``), named by the folder's name and a hash of its absolute path so
    two projects of the same name never share one."""
    project = Path(cwd).expanduser().absolute()
    digest = hashlib.sha256(str(project).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", project.name)[:40] or "root"
    home = Path(os.environ.get(STORE_HOME_ENV) or Path.home() / ".memctx").expanduser()
    return home / "claude-code" / f"{name}-{digest}"


def _session_id(event: Mapping[str, Any]) -> str:
    """Claude Code's session id (a UUID) as a store session id; anything else hashed."""
    raw = event.get("session_id")
    with contextlib.suppress(StoreError):
        return validate_session_id(raw)
    text = raw if isinstance(raw, str) else ""
    return "cc-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _hook_config(cap_tokens: int = _RECALL_CAP_TOKENS) -> MemoryContextConfig:
    """The engine's settings in a hook: recall across the project's sessions (a new session
    recalls the earlier ones), a block of at most ``cap_tokens``."""
    return MemoryContextConfig().with_overrides({"crossSession": True, "hardCapTokens": cap_tokens})


# -- the hook ----------------------------------------------------------------------------------


def run_hook(
    stdin: IO[str],
    stdout: IO[str],
    *,
    store_dir: str | os.PathLike[str] | None = None,
) -> int:
    """Answer one Claude Code hook event read from ``stdin``; always 0 (module docstring).

    Args:
        stdin: The event JSON, as Claude Code sends it.
        stdout: Where an ``additionalContext`` answer is printed (nothing otherwise).
        store_dir: The store; ``None``: the project's (:func:`default_store_dir` of the
            event's ``cwd``).
    """
    store: Path | None = Path(store_dir) if store_dir is not None else None
    try:
        event = json.loads(stdin.read())
        if not isinstance(event, dict):
            raise ValueError(f"the hook event must be a JSON object, got {type(event).__name__}")
        if store is None:
            cwd = event.get("cwd")
            if not isinstance(cwd, str) or not cwd:
                raise ValueError("the hook event has no 'cwd'; pass --store DIR")
            store = default_store_dir(cwd)
        answer = _answer(event, store)
        if answer:
            stdout.write(json.dumps(answer, ensure_ascii=False))
            stdout.write("\n")
            stdout.flush()
    except BaseException as exc:  # the hook contract: never fail the agent, even on Ctrl-C
        _log_failure(store, exc)
    return 0


def _answer(event: Mapping[str, Any], store: Path) -> dict[str, Any] | None:
    name = event.get("hook_event_name")
    if name == "PreCompact":
        archive_transcript(event, store)
        return None
    if name == "UserPromptSubmit":
        prompt = event.get("prompt")
        if not isinstance(prompt, str):
            raise ValueError("a UserPromptSubmit event needs a string 'prompt'")
        return context_answer(name, recall_text(store, _session_id(event), prompt))
    if name == "SessionStart":
        if event.get("source") not in ("compact", "resume"):
            return None
        request = _last_user_request(event)
        parts = [
            recall_text(store, _session_id(event), request) if request else "",
            project_knowledge(store),
        ]
        return context_answer(name, "\n\n".join(p for p in parts if p))
    raise ValueError(
        f"memctx answers {', '.join(HOOK_EVENTS)}, not {name!r}; register it only for those"
    )


def context_answer(event_name: str, text: str) -> dict[str, Any] | None:
    """What the hook prints for ``text``: ``None`` for nothing; else ``hookSpecificOutput``
    with ``text`` as ``additionalContext``, its middle cut (an omission note in its place,
    the block's closing tag kept) when over :data:`MAX_CONTEXT_CHARS`."""
    if not text.strip():
        return None
    if len(text) > MAX_CONTEXT_CHARS:
        room = MAX_CONTEXT_CHARS - _NOTE_ROOM
        text = cut_middle(text, room - _TAIL_CHARS, _TAIL_CHARS)[:MAX_CONTEXT_CHARS]
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


def _transcript_path(event: Mapping[str, Any]) -> Path:
    path = event.get("transcript_path")
    if not isinstance(path, str) or not path:
        raise ValueError(f"a {event.get('hook_event_name')} event needs 'transcript_path'")
    return Path(path).expanduser()


def archive_transcript(event: Mapping[str, Any], store: Path) -> int:
    """Archive the messages of the event's transcript not archived yet; how many.

    The count archived so far is kept per session in the store
    (``claude-code/archived-<session>.json``), written only after the archive took them.
    """
    session = _session_id(event)
    messages = load_transcript(_transcript_path(event), "claude-code").messages
    state = Path(_STATE_DIR) / f"archived-{session}.json"
    done = _archived_count(store, state)
    if done > len(messages):  # a transcript rewritten shorter: start again from its start
        done = 0
    new = messages[done:]
    if not new:
        return 0
    engine = MemoryContext(
        _hook_config(), store_dir=store, session_id=session, context_window_tokens=_WINDOW
    )
    try:
        engine.on_before_compact(new)
        # Archiving, then extraction, run on the engine's worker in that order: wait for
        # them, but never past the hook's time (the worker is a daemon thread; what is left
        # dies with the process).
        finished = engine.wait_idle(PRECOMPACT_WAIT_S)
        stats = engine.stats()
    finally:
        engine.close(timeout=1.0)
    # What must have worked for the watermark to move: the hook itself and the archive's
    # writes (segments, output refs). A failed or unfinished extraction loses facts only.
    failures = {
        key: value
        for key, value in stats["counts"].items()
        if key in ("on_before_compact_failures", "archive_failures") and value
    }
    failures |= {
        f"worker {kind}": value
        for kind, value in stats["worker"]["failed"].items()
        if kind in ("archive", "output_ref") and value
    }
    if failures or stats.get("pending_segments", 0):
        # The watermark stays where it was: the next PreCompact offers these messages again.
        raise RuntimeError(
            f"archiving {len(new)} messages of {session} did not finish "
            f"({failures or 'timed out'}): {stats.get('last_error')}"
        )
    atomic_write_beneath(store, state, json.dumps({"messages": len(messages)}).encode())
    if not finished:
        _log_failure(
            store,
            TimeoutError(
                f"extraction of {len(new)} archived messages of {session} did not finish "
                f"within {PRECOMPACT_WAIT_S:.0f} s; their facts are partly missing (the "
                "messages themselves are archived and searchable)"
            ),
        )
    return len(new)


def _archived_count(store: Path, state: Path) -> int:
    if not (resolve_store_dir(store) / state).exists():
        return 0
    fd = open_in_store(store, state, os.O_RDONLY, doing="read")
    with os.fdopen(fd, "rb") as fh:
        data = json.loads(fh.read(1 << 16))
    count = data.get("messages") if isinstance(data, dict) else None
    return count if isinstance(count, int) and count >= 0 else 0


def recall_text(store: Path, session: str, query: str) -> str:
    """The recall block memctx would insert for ``query``, filling but not passing
    :data:`MAX_CONTEXT_CHARS` where it can (a block over it is rendered again with a token
    cap scaled to fit, whole items rather than a cut); ``""`` when nothing is relevant."""
    if not query.strip() or not (resolve_store_dir(store) / "segments.jsonl").exists():
        return ""
    cap = _RECALL_CAP_TOKENS
    text = ""
    for _ in range(_REFITS):
        text = _recall_once(store, session, query, cap)
        if len(text) <= MAX_CONTEXT_CHARS:
            break
        cap = max(int(cap * MAX_CONTEXT_CHARS / len(text) * 0.95), 1)
    return text


def _recall_once(store: Path, session: str, query: str, cap_tokens: int) -> str:
    asked = {"role": "user", "content": query}
    with MemoryContext(
        _hook_config(cap_tokens), store_dir=store, session_id=session, context_window_tokens=_WINDOW
    ) as engine:
        out = engine.on_context([asked])
        record = engine.last_call
    if record is None or not record.recalled:
        return ""
    return "\n\n".join(message_text(m) for m in out if m is not asked)


def _last_user_request(event: Mapping[str, Any]) -> str:
    """The last user message of the transcript that the user wrote (not a tool result, not
    the summary a compaction left)."""
    messages = load_transcript(_transcript_path(event), "claude-code").messages
    for message in reversed(messages):
        if message.get("role") != "user" or is_compaction_summary(message):
            continue
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            continue
        text = message_text(message).strip()
        if text:
            return text
    return ""


def project_knowledge(store: Path) -> str:
    """The rules (decisions, config, architecture) and open tasks of the knowledge store."""
    if not (resolve_store_dir(store) / "knowledge.jsonl").exists():
        return ""
    facts = KnowledgeStore(store, redactor=Redactor()).live_facts()
    facts.sort(key=lambda f: f.timestamp, reverse=True)
    rules = [f for f in facts if f.type.value in _RULE_TYPES][:_MAX_FACTS]
    tasks = [f for f in facts if f.type.value == _TASK_TYPE][:_MAX_FACTS]
    lines: list[str] = []
    if rules:
        lines += ["Project rules and decisions memctx knows:"]
        lines += [f"- [{f.type.value}] {f.content}" for f in rules]
    if tasks:
        lines += ["Open tasks memctx knows:"] if not lines else ["", "Open tasks memctx knows:"]
        lines += [f"- {f.content}" for f in tasks]
    return "\n".join(lines)


def _log_failure(store: Path | None, exc: BaseException) -> None:
    """One line in ``claude-code/hook.log`` of the store; stderr when that cannot be written."""
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {type(exc).__name__}: {exc}\n"
    line = Redactor().redact(line)
    if store is not None:
        with contextlib.suppress(Exception):
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
            log = Path(_STATE_DIR) / _LOG_FILE
            fd = open_in_store(store, log, flags, doing="append to", create_dirs=True)
            with os.fdopen(fd, "a", encoding="utf-8") as fh:
                fh.write(line)
            return
    with contextlib.suppress(Exception):
        sys.stderr.write(f"memctx hook: {line}")


# -- settings.json -----------------------------------------------------------------------------


def hook_command(store_dir: str | os.PathLike[str] | None = None) -> str:
    """The command Claude Code runs: this Python's ``memctx`` (found without PATH)."""
    parts = [_quote(sys.executable), "-m", "memctx.cli", "claude-code", "hook"]
    if store_dir is not None:
        parts += ["--store", _quote(str(Path(store_dir).expanduser().absolute()))]
    return " ".join(parts)


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _is_ours(hook: object) -> bool:
    return (
        isinstance(hook, dict)
        and isinstance(hook.get("command"), str)
        and "memctx.cli claude-code hook" in hook["command"]
    )


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8") or "{}")
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object; fix or move it, then retry")
    return data


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write_beneath(path.parent, path.name, text.encode("utf-8"), mode=0o644)


def settings_paths(*, project: str | os.PathLike[str] | None, user: bool) -> tuple[Path, Path]:
    """``settings.json`` and the MCP servers file for ``--project DIR`` (``DIR/.claude/
    settings.json``, ``DIR/.mcp.json``) or ``--user`` (``~/.claude/settings.json``,
    ``~/.claude.json``)."""
    if user:
        home = Path.home()
        return home / ".claude" / "settings.json", home / ".claude.json"
    root = Path(project if project is not None else ".").expanduser().absolute()
    return root / ".claude" / "settings.json", root / ".mcp.json"


def install(
    settings: Path, mcp_file: Path, *, store_dir: str | os.PathLike[str] | None = None
) -> None:
    """Add memctx's hooks to ``settings`` and its MCP server to ``mcp_file``; idempotent.

    Other hooks and settings are kept; an earlier memctx entry is replaced, so installing
    twice (or with another ``--store``) leaves one.

    Raises:
        ValueError: A file is not a JSON object (or its ``hooks`` not one).
    """
    data = _without_ours(_read_json(settings), settings)
    hooks = data.setdefault("hooks", {})
    command = {"type": "command", "command": hook_command(store_dir), "timeout": HOOK_TIMEOUT_S}
    for event in HOOK_EVENTS:
        entry: dict[str, Any] = {"hooks": [dict(command)]}
        if event == "SessionStart":
            entry = {"matcher": "compact|resume", **entry}
        elif event == "PreCompact":
            entry = {"matcher": "", **entry}
        hooks.setdefault(event, []).append(entry)
    _write_json(settings, data)
    servers_data = _read_json(mcp_file)
    servers = servers_data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ValueError(f"{mcp_file}: 'mcpServers' is not an object; fix it, then retry")
    args = ["-m", "memctx.cli", "mcp"]
    if store_dir is not None:
        args += ["--store", str(Path(store_dir).expanduser().absolute())]
    servers[MCP_SERVER_NAME] = {"type": "stdio", "command": sys.executable, "args": args}
    _write_json(mcp_file, servers_data)


def uninstall(settings: Path, mcp_file: Path) -> None:
    """Remove memctx's hooks and MCP server only; other entries stay as they were."""
    if settings.exists():
        _write_json(settings, _without_ours(_read_json(settings), settings))
    if mcp_file.exists():
        data = _read_json(mcp_file)
        servers = data.get("mcpServers")
        if isinstance(servers, dict) and MCP_SERVER_NAME in servers:
            del servers[MCP_SERVER_NAME]
            _write_json(mcp_file, data)


def _without_ours(data: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = data.get("hooks")
    if hooks is None:
        return data
    if not isinstance(hooks, dict):
        raise ValueError(f"{path}: 'hooks' is not an object; fix it, then retry")
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list):
            continue
        kept = []
        for entry in entries:
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            if isinstance(inner, list) and any(_is_ours(h) for h in inner):
                rest = [h for h in inner if not _is_ours(h)]
                if rest:
                    kept.append({**entry, "hooks": rest})
                continue
            kept.append(entry)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del data["hooks"]
    return data
