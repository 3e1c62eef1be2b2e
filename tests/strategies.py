"""Every hypothesis strategy the tests use, in one place.

Conversations are generated abstractly (turns with parallel calls and their results) and
rendered into one of the four supported provider shapes, so each property runs against the
same conversation logic in every format. Each message carries an ``mid`` field: memctx must
pass unknown fields through, and the tests use it to check relative order after repair.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

FORMATS = ("openai", "anthropic", "pi", "gemini")

_words = st.sampled_from(
    ["fix", "the", "bug", "in", "parser.py", "run", "pytest", "-q", "ok", "继续", "数据库", "y"]
)
short_text = st.lists(_words, min_size=1, max_size=8).map(" ".join)
tool_names = st.sampled_from(["read", "grep", "edit", "bash", "run_tests"])


@dataclass
class Call:
    name: str
    args: dict[str, Any]
    result: str
    is_error: bool = False


@dataclass
class Turn:
    """One exchange: optional user text, then an assistant reply with 0..n parallel calls."""

    user_text: str | None
    assistant_text: str
    thinking: str | None
    calls: list[Call] = field(default_factory=list)
    user_text_after_results: str | None = None  # Anthropic lets text follow results


@st.composite
def calls(draw: st.DrawFn) -> Call:
    return Call(
        name=draw(tool_names),
        args={"path": draw(short_text), "n": draw(st.integers(0, 99))},
        result=draw(short_text),
        is_error=draw(st.booleans()),
    )


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    return Turn(
        user_text=draw(st.none() | short_text),
        assistant_text=draw(st.sampled_from(["", " "]) | short_text),
        thinking=draw(st.none() | short_text),
        calls=draw(st.lists(calls(), max_size=3)),
        user_text_after_results=draw(st.none() | short_text),
    )


@st.composite
def abstract_conversations(draw: st.DrawFn) -> tuple[bool, list[Turn]]:
    has_system = draw(st.booleans())
    return has_system, draw(st.lists(turns(), min_size=1, max_size=12))


class _Ids:
    def __init__(self, fmt: str, with_ids: bool) -> None:
        self.n = 0
        self.fmt = fmt
        self.with_ids = with_ids

    def next(self) -> str | None:
        self.n += 1
        if self.fmt == "gemini" and not self.with_ids:
            return None
        prefix = {"openai": "call_", "anthropic": "toolu_", "pi": "tc_", "gemini": "fc_"}
        return f"{prefix[self.fmt]}{self.n:04d}"


def render(fmt: str, has_system: bool, conv: list[Turn], *, gemini_ids: bool = True) -> list[Any]:
    """Render an abstract conversation as provider-format message dicts (valid pairing)."""
    ids = _Ids(fmt, gemini_ids)
    out: list[dict[str, Any]] = []
    if has_system:
        out.append({"role": "system", "content": "You are a careful coding agent."})
    pi_call_types = ("toolCall", "toolUse", "tool_use", "functionCall")
    for t_index, turn in enumerate(conv):
        # Providers want a user message before the first assistant turn; later ones optional.
        user_text = turn.user_text if turn.user_text is not None or t_index else "start"
        if user_text is not None:
            out.append(_user_text(fmt, user_text))
        call_ids = [ids.next() for _ in turn.calls]
        if not turn.calls and not turn.assistant_text.strip():
            turn.assistant_text = "done"
        out.append(_assistant(fmt, turn, call_ids, pi_call_types[t_index % 4]))
        if turn.calls:
            out.extend(_results(fmt, turn, call_ids))
    for i, message in enumerate(out):
        message["mid"] = i
    return out


def _user_text(fmt: str, text: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "user", "parts": [{"text": text}]}
    if fmt == "anthropic":
        return {"role": "user", "content": [{"type": "text", "text": text}]}
    return {"role": "user", "content": text}


def _assistant(fmt: str, turn: Turn, call_ids: list[str | None], pi_type: str) -> dict[str, Any]:
    if fmt == "openai":
        msg: dict[str, Any] = {"role": "assistant", "content": turn.assistant_text or None}
        if turn.calls:
            msg["tool_calls"] = [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _json(c.args)},
                }
                for c, cid in zip(turn.calls, call_ids, strict=True)
            ]
        return msg
    if fmt == "gemini":
        parts: list[dict[str, Any]] = []
        if turn.thinking:
            parts.append({"text": turn.thinking, "thought": True})
        if turn.assistant_text:
            parts.append({"text": turn.assistant_text})
        for c, cid in zip(turn.calls, call_ids, strict=True):
            fc: dict[str, Any] = {"name": c.name, "args": c.args}
            if cid is not None:
                fc["id"] = cid
            parts.append({"functionCall": fc})
        return {"role": "model", "parts": parts}
    blocks: list[dict[str, Any]] = []
    if turn.thinking:
        blocks.append({"type": "thinking", "thinking": turn.thinking, "signature": "sig"})
    if turn.assistant_text:
        blocks.append({"type": "text", "text": turn.assistant_text})
    for c, cid in zip(turn.calls, call_ids, strict=True):
        if fmt == "anthropic":
            blocks.append({"type": "tool_use", "id": cid, "name": c.name, "input": c.args})
        else:
            blocks.append({"type": pi_type, "id": cid, "name": c.name, "arguments": c.args})
    return {"role": "assistant", "content": blocks}


def _results(fmt: str, turn: Turn, call_ids: list[str | None]) -> list[dict[str, Any]]:
    pairs = list(zip(turn.calls, call_ids, strict=True))
    if fmt == "openai":
        return [{"role": "tool", "tool_call_id": cid, "content": c.result} for c, cid in pairs]
    if fmt == "pi":
        return [
            {
                "role": "toolResult",
                "toolCallId": cid,
                "toolName": c.name,
                "content": [{"type": "text", "text": c.result}],
                "isError": c.is_error,
            }
            for c, cid in pairs
        ]
    if fmt == "gemini":
        parts: list[dict[str, Any]] = []
        for c, cid in pairs:
            fr: dict[str, Any] = {"name": c.name, "response": {"output": c.result}}
            if cid is not None:
                fr["id"] = cid
            parts.append({"functionResponse": fr})
        return [{"role": "user", "parts": parts}]
    blocks: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": cid, "content": c.result, "is_error": c.is_error}
        for c, cid in pairs
    ]
    if turn.user_text_after_results:
        blocks.append({"type": "text", "text": turn.user_text_after_results})
    return [{"role": "user", "content": blocks}]


def _json(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)


@st.composite
def valid_conversations(draw: st.DrawFn, fmt: str) -> list[Any]:
    """A conversation in ``fmt`` that every provider would accept."""
    has_system, conv = draw(abstract_conversations())
    gemini_ids = draw(st.booleans())
    return render(fmt, has_system, conv, gemini_ids=gemini_ids)


_LIST_FIELDS = ("content", "tool_calls", "parts")


@st.composite
def damaged_conversations(draw: st.DrawFn, fmt: str) -> list[Any]:
    """A valid conversation after random message/block deletions, duplications and swaps."""
    messages = copy.deepcopy(draw(valid_conversations(fmt)))
    for _ in range(draw(st.integers(1, 6))):
        if not messages:
            break
        op = draw(st.sampled_from(["drop", "drop", "block", "block", "dup", "swap"]))
        i = draw(st.integers(0, len(messages) - 1))
        if op == "drop":
            del messages[i]
        elif op == "dup":
            messages.insert(i, copy.deepcopy(messages[i]))
        elif op == "swap" and i + 1 < len(messages):
            messages[i], messages[i + 1] = messages[i + 1], messages[i]
        elif op == "block":
            listed = [f for f in _LIST_FIELDS if isinstance(messages[i].get(f), list)]
            if listed:
                f = draw(st.sampled_from(listed))
                if messages[i][f]:
                    del messages[i][f][draw(st.integers(0, len(messages[i][f]) - 1))]
    for i, message in enumerate(messages):  # duplicates need their own mid for order checks
        message["mid"] = i
    return messages


def _junk_block() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=5),
        st.fixed_dictionaries({"type": st.sampled_from(["mystery", "image", "tool_result"])}),
        st.fixed_dictionaries({"type": st.just("tool_use"), "id": st.none() | st.integers()}),
        st.dictionaries(st.text(max_size=4), st.none() | st.integers(), max_size=3),
    )


malformed_messages = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=10),
    st.lists(st.integers(), max_size=3),
    st.fixed_dictionaries(
        {},
        optional={
            "role": st.sampled_from(["user", "assistant", "tool", "toolResult", "model", "x"])
            | st.none()
            | st.integers(),
            "content": st.none() | st.text(max_size=10) | st.lists(_junk_block(), max_size=4),
            "tool_calls": st.none() | st.lists(_junk_block(), max_size=3) | st.integers(),
            "parts": st.none() | st.lists(_junk_block(), max_size=3),
            "tool_call_id": st.none() | st.integers() | st.text(max_size=4),
        },
    ),
)


@st.composite
def fuzzed_conversations(draw: st.DrawFn) -> list[Any]:
    """A damaged conversation of any format with malformed entries spliced in."""
    fmt = draw(st.sampled_from(FORMATS))
    messages = draw(damaged_conversations(fmt))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(messages)))
        messages.insert(at, draw(malformed_messages))
    return messages


# --- smart trim -----------------------------------------------------------------------------

SUMMARY_TEXTS = (
    "[Context compacted] The user asked to fix the bug in parser.py; pytest -q passes.",
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below: fix the parser, run pytest.",
    "The conversation history before this point was compacted into the following summary:\n\n"
    "<summary>\nparser.py fixed\n</summary>",
)
RECALLED_TEXT = (
    '<recalled-context source="memory-context">\n<knowledge>\n- [decision] run pytest -q '
    "after every edit of parser.py\n</knowledge>\n</recalled-context>"
)
trim_queries = (
    st.sampled_from(
        ["", "ok", " y ", "fix parser.py", "run pytest -q", "数据库 bug", "the", "grep edit"]
    )
    | short_text
)


@dataclass
class TrimCase:
    """A valid conversation with the extras smart trim protects, and how to trim it."""

    messages: list[Any]
    query: str
    limit_share: float  # safe_limit = limit_share x the conversation's tokens
    protected_recent: int


def is_plain_user_text(message: dict[str, Any]) -> bool:
    """A user message carrying only text (no tool results), in any of the four shapes."""
    if message.get("role") != "user":
        return False
    content = message.get("content", message.get("parts"))
    if isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(b, dict) and "text" in b and b.get("type", "text") == "text" for b in content
    )


@st.composite
def trim_cases(draw: st.DrawFn, fmt: str) -> TrimCase:
    """A valid conversation in ``fmt``, maybe with a compaction summary after the system
    prompt and recalled blocks before user turns (both keep the pairing valid)."""
    has_system, conv = draw(abstract_conversations())
    messages = render(fmt, has_system, conv, gemini_ids=draw(st.booleans()))
    if draw(st.booleans()):
        at = 1 if has_system else 0
        messages.insert(at, _user_text(fmt, draw(st.sampled_from(SUMMARY_TEXTS))))
    for _ in range(draw(st.integers(0, 2))):
        spots = [i for i, m in enumerate(messages) if is_plain_user_text(m)]
        if spots:
            messages.insert(draw(st.sampled_from(spots)), _user_text(fmt, RECALLED_TEXT))
    for i, message in enumerate(messages):
        message["mid"] = i
    return TrimCase(
        messages=messages,
        query=draw(trim_queries),
        limit_share=draw(st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0, 1.5]) | st.floats(0, 1.2)),
        protected_recent=draw(st.sampled_from([6, 6, 6, 0, 1, 3, 10])),
    )


# --- text under a token budget, model names for pricing -------------------------------------

# Texts of mixed lines, a final newline included (a last line ""): blank lines, short lines
# (tabs, a stray \r) and lines of 20 to 90 characters, longer than the small budgets the
# properties cut with (3 characters per token).
_budget_lines = st.one_of(
    st.just(""),
    st.text(alphabet="ab \t\r", max_size=12),
    st.text(alphabet="xyz", min_size=20, max_size=90),
)
multiline_texts = st.lists(_budget_lines, max_size=25).map("\n".join)

# Chat models that litellm's table prices per token and that litellm.cost_per_token places,
# bare and with their provider prefix.
priced_models = st.sampled_from(
    [
        "gpt-4o",
        "openai/gpt-4o",
        "gpt-4o-mini",
        "openai/gpt-4o-mini",
        "gpt-4.1",
        "claude-sonnet-4-5",
        "anthropic/claude-sonnet-4-5",
        "claude-opus-4-5",
        "anthropic/claude-opus-4-5",
    ]
)
# Names litellm's table does not hold (a self-hosted gateway, a typo, an unknown provider).
unpriced_models = st.one_of(
    st.sampled_from(["my-own-gateway/llama-local", "claude-sonet-4-5", "gpt-4o-typo"]),
    st.text(alphabet="abcxyz-", min_size=1, max_size=12).map(lambda s: f"memctx-unknown-{s}"),
)
