"""memctx's two tools for the model: ``memory_search`` and ``read_output_ref``.

An agent offers them with its other tools (:func:`tool_definitions`, in the provider's
shape) and routes the model's calls to :func:`call_memory_tool`, which answers with the text
of the tool result. A model's call can be malformed in any way (unknown tool, arguments that
are not JSON, a ref outside the store): the answer is then an error text the model can act
on, never an exception in the agent loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal

from memctx.errors import StoreError

from .engine import MemoryContext

__all__ = ["MEMORY_TOOL_NAMES", "call_memory_tool", "tool_definitions"]

_SEARCH_NAME: Final = "memory_search"
_READ_NAME: Final = "read_output_ref"
_SEARCH: Final[dict[str, Any]] = {
    "name": _SEARCH_NAME,
    "description": (
        "Search this project's memory: messages trimmed or compacted out of the conversation "
        "(earlier sessions too) and facts extracted from them. Use it when the user refers to "
        "something you no longer see: a decision, a value, an error and its fix."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for, in words."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20,
                "description": "Results wanted (default 5).",
            },
        },
        "required": ["query"],
    },
}
_READ: Final[dict[str, Any]] = {
    "name": _READ_NAME,
    "description": (
        "Read the whole of a tool output that was too large to keep in the conversation. "
        'Pass the ref its notice names, e.g. "tool-output/<name>.json".'
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "ref": {"type": "string", "description": "tool-output/<name>.json, as named."}
        },
        "required": ["ref"],
    },
}
MEMORY_TOOL_NAMES: Final = (_SEARCH_NAME, _READ_NAME)
# Arguments longer than this are refused unread: a query is a few words, a ref ~50 characters.
MAX_ARGUMENT_CHARS: Final = 100_000
_SHOWN: Final = 200  # characters of the model's input an error text quotes


def tool_definitions(style: Literal["openai", "anthropic"] = "openai") -> list[dict[str, Any]]:
    """The two tools' definitions, ready to add to a request's ``tools``.

    Args:
        style: ``"openai"`` (``{"type": "function", "function": {...}}``, also what litellm
            takes) or ``"anthropic"`` (``{"name", "description", "input_schema"}``).

    Raises:
        ValueError: An unknown style.
    """
    if style == "openai":
        return [
            {"type": "function", "function": json.loads(json.dumps(t))} for t in (_SEARCH, _READ)
        ]
    if style == "anthropic":
        return [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
            for t in json.loads(json.dumps([_SEARCH, _READ]))
        ]
    raise ValueError(f"unknown tool style {style!r}; use 'openai' or 'anthropic'")


def call_memory_tool(mem: MemoryContext, name: str, arguments: str | Mapping[str, Any]) -> str:
    """Run one of the model's calls to a memctx tool; the tool result's text. Never raises.

    Args:
        mem: The session's engine.
        name: The tool the model called.
        arguments: Its arguments, as the provider gives them (a JSON string or a mapping).

    Returns:
        For ``memory_search``, the hits as JSON (``[{content, score, session_id, turn}]``);
        for ``read_output_ref``, the whole output; on any problem (wrong types, arguments
        over :data:`MAX_ARGUMENT_CHARS` or nested past the JSON parser's depth, a store
        error), ``"error: ..."`` saying what to change.
    """
    try:
        return _call(mem, name, arguments)
    except Exception as exc:  # a tool answer, never a crash of the agent loop
        return f"error: {_shown(name)} failed: {type(exc).__name__}: {_shown(str(exc))}"


def _shown(value: object) -> str:
    """``value`` as an error text may quote it: short, whatever the model sent."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}..."


def _call(mem: MemoryContext, name: object, arguments: object) -> str:
    if not isinstance(name, str):
        return f"error: the tool name must be a string, got {type(name).__name__}"
    if isinstance(arguments, str | bytes) and len(arguments) > MAX_ARGUMENT_CHARS:
        return (
            f"error: the arguments of {_shown(name)} are {len(arguments):,} characters, over "
            f"{MAX_ARGUMENT_CHARS:,}; send a shorter query"
        )
    try:
        if isinstance(arguments, str):
            args = json.loads(arguments)
        elif isinstance(arguments, Mapping):
            args = dict(arguments)
        else:
            raise TypeError(f"got {type(arguments).__name__}")
    except RecursionError:  # "[[[[..." nested past the parser's depth
        return f"error: the arguments of {_shown(name)} are nested too deeply; send a flat object"
    except (ValueError, TypeError) as exc:
        return f"error: the arguments of {_shown(name)} are not a JSON object ({exc}); send one"
    if not isinstance(args, dict):
        kind = type(args).__name__
        return f"error: the arguments of {_shown(name)} must be a JSON object, got {kind}"
    try:
        if name == _SEARCH_NAME:
            query, limit = args.get("query"), args.get("limit", 5)
            if not isinstance(query, str) or not query.strip():
                return "error: memory_search needs a non-empty string 'query'"
            if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 20:
                return "error: memory_search 'limit' must be an integer from 1 to 20"
            return json.dumps(mem.memory_search(query, limit), ensure_ascii=False)
        if name == _READ_NAME:
            ref = args.get("ref")
            if not isinstance(ref, str):
                return (
                    "error: read_output_ref needs a string 'ref' like \"tool-output/<name>.json\""
                )
            return mem.read_output_ref(ref)
    except StoreError as exc:
        return f"error: {exc}"
    return f"error: unknown tool {_shown(name)!r}; memctx offers {', '.join(MEMORY_TOOL_NAMES)}"
