"""Reading configuration files: memctx JSON/TOML and OpenClaw's ``openclaw.json``.

OpenClaw writes its settings as JSON5 (comments, trailing commas, unquoted keys), so the JSON
reader accepts those too and still reports errors at the line and column of the original file.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_snake

from memctx.errors import ConfigError

from .model import MAX_DEPTH, MemoryContextConfig, validate_config

__all__ = ["load_config"]

# --- files ----------------------------------------------------------------------------------

_OPENCLAW_SECTIONS = ("compaction", "contextPruning", "memorySearch")
_GAP = r"(?:\s|//[^\n]*|/\*.*?\*/)*"
_JSON5 = re.compile(
    r"""(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"""
    r"|(?P<comment>//[^\n]*|/\*.*?\*/)"
    r"|(?P<key>[A-Za-z_$][\w$]*)(?=\s*:)"
    rf"|(?P<comma>,{_GAP}(?=[}}\]]))",
    re.DOTALL,
)


MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""Largest config file read: an ``openclaw.json`` holds an agent's whole setup (models,
channels, tools) in tens of kilobytes; 4 MiB leaves room for any real one and keeps a
runaway file from being read into memory."""

# What can hold a bracket that does not nest: strings and comments, in JSON5 and TOML forms.
_JSON_SKIP = r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|//[^\n]*|/\*.*?\*/"""
_TOML_SKIP = r'''"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|#[^\n]*'''
_NESTING = {
    kind: re.compile(rf"{skip}|(?P<open>[\[{{])|(?P<close>[\]}}])", re.DOTALL)
    for kind, skip in (("json", _JSON_SKIP), ("toml", _TOML_SKIP))
}


def _check_depth(text: str, kind: str, file: Path) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` before a parser recurses into it.

    Brackets inside strings and comments are not counted. In a malformed file the count
    may be off, which matters only past the bound; the parser reports such a file anyway.
    """
    depth = 0
    for match in _NESTING[kind].finditer(text):
        if match.lastgroup == "open":
            depth += 1
            if depth > MAX_DEPTH:
                pos = match.start()
                line = text.count("\n", 0, pos) + 1
                column = pos - (text.rfind("\n", 0, pos) + 1) + 1
                raise ConfigError(
                    f"{file}: nested more than {MAX_DEPTH} levels deep at line {line}, column "
                    f"{column}; settings nest at most 5 levels, flatten the file"
                )
        elif match.lastgroup == "close":
            depth = max(depth - 1, 0)


def _json5_token(match: re.Match[str]) -> str:
    token = match[0]
    if match.lastgroup == "key":
        return f'"{token}"'
    if match.lastgroup == "str" and token[0] == "'":
        body = re.sub(
            r'\\(.)|"',
            lambda e: ("'" if e[1] == "'" else e[0]) if e[1] else '\\"',
            token[1:-1],
            flags=re.DOTALL,
        )
        return f'"{body}"'
    return token if match.lastgroup == "str" else " "


def _parse_json(text: str, file: Path) -> object:
    """Parse JSON with JSON5 comments, trailing commas, unquoted keys and single quotes."""
    out: list[str] = []
    spans: list[tuple[int, int, bool]] = []  # (output offset, source offset, copied verbatim)
    size = last = 0
    for match in [*_JSON5.finditer(text), None]:
        start = len(text) if match is None else match.start()
        pieces = [(text[last:start], last, True)]
        if match is not None:
            verbatim = match.lastgroup == "str" and match[0][0] == '"'
            pieces.append((_json5_token(match), start, verbatim))
            last = match.end()
        for chunk, source, verbatim in pieces:
            spans.append((size, source, verbatim))
            out.append(chunk)
            size += len(chunk)
    try:
        return json.loads("".join(out))
    except json.JSONDecodeError as exc:
        index = bisect.bisect_right([span[0] for span in spans], exc.pos) - 1
        begin, source, verbatim = spans[index]
        pos = source + (exc.pos - begin if verbatim else 0)
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        raise ConfigError(
            f"{file}: invalid JSON at line {line}, column {column}: {exc.msg}"
        ) from None


def _from_openclaw(data: dict[str, Any], file: Path) -> tuple[dict[str, Any], Callable[[str], str]]:
    agents = data["agents"]
    base = agents.get("defaults", {}) if isinstance(agents, dict) else None
    memory = base.get("memoryContext", {}) if isinstance(base, dict) else None
    if not isinstance(base, dict) or not isinstance(memory, dict):
        raise ConfigError(
            f"{file}: agents, agents.defaults and agents.defaults.memoryContext must be objects"
        )
    result = dict(memory)
    moved = [section for section in _OPENCLAW_SECTIONS if section in base]
    for section in moved:
        if section in result or to_snake(section) in result:
            raise ConfigError(
                f"{file}: {section!r} is given both in agents.defaults and in "
                "agents.defaults.memoryContext; keep one"
            )
        result[section] = base[section]

    def where(path: str) -> str:
        if path.split(".", 1)[0] in moved:
            return f"agents.defaults.{path}"
        return "agents.defaults.memoryContext" + (f".{path}" if path else "")

    return result, where


def load_config(path: str | os.PathLike[str]) -> MemoryContextConfig:
    """Load settings from a memctx ``.json`` / ``.json5`` / ``.toml`` file or an ``openclaw.json``.

    A file with a top-level ``agents`` key is read as ``openclaw.json``: the settings are
    ``agents.defaults.memoryContext`` plus the sections ``agents.defaults.compaction``,
    ``.contextPruning`` and ``.memorySearch`` (missing ones keep their defaults). JSON files may
    use ``//`` and ``/* */`` comments, trailing commas, unquoted keys and single quotes.

    Args:
        path: The file to read.

    Returns:
        The validated configuration.

    Raises:
        ConfigError: The file is missing, unreadable, malformed (with line and column), not an
            object at the top level, or holds invalid settings; the message names the file.
    """
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in ("", ".json", ".json5", ".toml"):
        raise ConfigError(f"{file}: unsupported config format {suffix!r}; use .json or .toml")
    try:
        with file.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {file}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{file}: larger than {MAX_CONFIG_BYTES:,} bytes, too large for a config file; "
            "point to the settings file itself"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{file}: not UTF-8 text: invalid byte at line {line}, byte offset {exc.start}; "
            "save the file as UTF-8"
        ) from None
    _check_depth(text, "toml" if suffix == ".toml" else "json", file)
    if suffix == ".toml":
        try:
            data: object = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file}: invalid TOML: {exc}") from None
    else:
        data = _parse_json(text, file)
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the top level must be an object, got {type(data).__name__}")
    prefix: Callable[[str], str] = str
    if "agents" in data:
        data, prefix = _from_openclaw(data, file)
    return validate_config(MemoryContextConfig, data, f"config file {file}", prefix)
