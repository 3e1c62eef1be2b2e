"""Every hypothesis strategy the tests use, in one place.

Conversations are generated abstractly (turns with parallel calls and their results) and
rendered into one of the four supported provider shapes, so each property runs against the
same conversation logic in every format. Each message carries an ``mid`` field: memctx must
pass unknown fields through, and the tests use it to check relative order after repair.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from memctx.messages import recalled_block_text

FORMATS = ("openai", "anthropic", "pi", "gemini", "responses")


def examples(everyday: int, *, thorough_at_most: int | None = None) -> int:
    """How many examples a property runs under the loaded profile (tests/conftest.py).

    ``everyday`` is the default profile's count, chosen per property: enough that the
    seeded examples catch the bugs the property is about (docs/testing.md says how each
    was checked). The ``thorough`` profile runs its own count (``MEMCTX_PROPERTY_EXAMPLES``,
    1,000 unless given), never fewer than ``everyday``, and at most ``thorough_at_most``
    for the properties whose every example drives the hooks end to end with a store.
    """
    if settings.get_current_profile_name() != "thorough":
        return everyday
    thorough = settings.default.max_examples
    if thorough_at_most is not None:
        thorough = min(thorough, thorough_at_most)
    return max(everyday, thorough)


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
        prefix = {
            "openai": "call_",
            "anthropic": "toolu_",
            "pi": "tc_",
            "gemini": "fc_",
            "responses": "fc_call_",
        }
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
        if fmt == "responses":
            out.extend(_responses_assistant(turn, call_ids))
        else:
            out.append(_assistant(fmt, turn, call_ids, pi_call_types[t_index % 4]))
        if turn.calls:
            out.extend(_results(fmt, turn, call_ids))
    for i, message in enumerate(out):
        message["mid"] = i
    return out


def _user_text(fmt: str, text: str) -> dict[str, Any]:
    if fmt == "responses":
        return {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
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


def _responses_assistant(turn: Turn, call_ids: list[str | None]) -> list[dict[str, Any]]:
    """An assistant turn as Responses API items: reasoning, a message, one item per call."""
    items: list[dict[str, Any]] = []
    if turn.thinking:
        summary = [{"type": "summary_text", "text": turn.thinking}]
        items.append({"type": "reasoning", "id": f"rs_{len(turn.thinking)}", "summary": summary})
    if turn.assistant_text:
        text = [{"type": "output_text", "text": turn.assistant_text, "annotations": []}]
        items.append({"type": "message", "role": "assistant", "content": text})
    for c, cid in zip(turn.calls, call_ids, strict=True):
        items.append(
            {"type": "function_call", "call_id": cid, "name": c.name, "arguments": _json(c.args)}
        )
    return items


def _results(fmt: str, turn: Turn, call_ids: list[str | None]) -> list[dict[str, Any]]:
    pairs = list(zip(turn.calls, call_ids, strict=True))
    if fmt == "responses":
        return [
            {"type": "function_call_output", "call_id": cid, "output": c.result} for c, cid in pairs
        ]
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


DAMAGE_OPS: tuple[str, ...] = ("drop", "drop", "block", "block", "dup", "swap")
DAMAGE_OPS += ("interject", "text_first", "reuse_id")  # what agents do to their histories
_ID_KEYS = ("id", "tool_call_id", "toolCallId", "tool_use_id", "call_id")


def damage(fmt: str, messages: list[Any], op: str, pick: Callable[[int], int]) -> None:
    """Apply one damage ``op`` to ``messages`` in place; ``pick(n)`` chooses in ``range(n)``.

    Besides losing, repeating and swapping messages and blocks: ``interject`` puts a user
    message right after an assistant message (a user typing while a tool runs), ``text_first``
    puts a text block before the results of a user message, and ``reuse_id`` gives a later
    call (and its results) the id of an earlier call, as SWE-agent replays do.
    """
    if not messages:
        return
    i = pick(len(messages))
    if op == "drop":
        del messages[i]
    elif op == "dup":
        messages.insert(i, copy.deepcopy(messages[i]))
    elif op == "swap" and i + 1 < len(messages):
        messages[i], messages[i + 1] = messages[i + 1], messages[i]
    elif op == "block":
        listed = [f for f in _LIST_FIELDS if isinstance(messages[i].get(f), list)]
        if listed:
            f = listed[pick(len(listed))]
            if messages[i][f]:
                del messages[i][f][pick(len(messages[i][f]))]
    elif op == "interject":
        spots = [k for k, m in enumerate(messages) if m.get("role") in ("assistant", "model")]
        at = spots[pick(len(spots))] + 1 if spots else i
        messages.insert(at, _user_text(fmt, "also, use the other file"))
    elif op == "text_first":
        holders = [
            k
            for k, m in enumerate(messages)
            if m.get("role") == "user" and isinstance(m.get(_blocks_field(fmt)), list)
        ]
        if holders:
            block = _user_text(fmt, "wait")[_blocks_field(fmt)][0]
            messages[holders[pick(len(holders))]][_blocks_field(fmt)].insert(0, block)
    elif op == "reuse_id":
        calls = [(k, cid) for k, m in enumerate(messages) for cid in _call_ids(m)]
        if len(calls) >= 2:
            a, b = sorted((pick(len(calls)), pick(len(calls))))
            (k_first, first), (k_later, later) = calls[a], calls[b]
            if k_first < k_later and first != later:
                for message in messages[k_later:]:
                    rename_ids(message, later, first)


def _blocks_field(fmt: str) -> str:
    return "parts" if fmt == "gemini" else "content"


def _call_ids(message: dict[str, Any]) -> list[str]:
    if message.get("type") == "function_call":  # a Responses call item
        return [message["call_id"]] if isinstance(message.get("call_id"), str) else []
    if message.get("role") not in ("assistant", "model"):
        return []
    ids = [c.get("id") for c in message.get("tool_calls") or []]
    for block in message.get("content") or message.get("parts") or []:
        if isinstance(block, dict):
            nested = block.get("functionCall", {})
            ids.append(block.get("id") if "type" in block else nested.get("id"))
    return [i for i in ids if isinstance(i, str)]


def rename_ids(value: Any, old: str, new: str) -> None:
    """Every call or result id ``old`` under ``value`` becomes ``new``, in place."""
    if isinstance(value, list):
        for item in value:
            rename_ids(item, old, new)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in _ID_KEYS and item == old:
                value[key] = new
            elif isinstance(item, dict | list):
                rename_ids(item, old, new)


def _numbered(messages: list[Any]) -> list[Any]:
    for i, message in enumerate(messages):  # duplicates need their own mid for order checks
        message["mid"] = i
    return messages


@st.composite
def damaged_conversations(draw: st.DrawFn, fmt: str) -> list[Any]:
    """A valid conversation after random damage (see :func:`damage`), 1 to 6 times."""
    messages = copy.deepcopy(draw(valid_conversations(fmt)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(DAMAGE_OPS))
        damage(fmt, messages, op, lambda n: draw(st.integers(0, n - 1)))
    return _numbered(messages)


def random_damaged_conversation(fmt: str, rng: random.Random) -> list[Any]:
    """What :func:`damaged_conversations` draws, drawn from a seeded ``random.Random``
    instead: for counting over a fixed, reproducible sample (no shrinking, no database)."""
    words = ["fix", "the", "bug", "in", "parser.py", "run", "pytest", "-q", "ok", "继续", "y"]

    def text() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))

    def maybe_text() -> str | None:
        return text() if rng.random() < 0.5 else None

    conv = [
        Turn(
            user_text=maybe_text(),
            assistant_text=rng.choice(["", " ", text()]),
            thinking=maybe_text(),
            calls=[
                Call(
                    rng.choice(["read", "grep", "edit", "bash", "run_tests"]),
                    {"path": text(), "n": rng.randint(0, 99)},
                    text(),
                    rng.random() < 0.5,
                )
                for _ in range(rng.randint(0, 3))
            ],
            user_text_after_results=maybe_text(),
        )
        for _ in range(rng.randint(1, 12))
    ]
    messages = render(fmt, rng.random() < 0.5, conv, gemini_ids=rng.random() < 0.5)
    for _ in range(rng.randint(1, 6)):
        damage(fmt, messages, rng.choice(DAMAGE_OPS), rng.randrange)
    return _numbered(messages)


def _junk_block(hostile: bool) -> st.SearchStrategy[Any]:
    junk = st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=5),
        st.fixed_dictionaries({"type": st.sampled_from(["mystery", "image", "tool_result"])}),
        st.fixed_dictionaries({"type": st.just("tool_use"), "id": st.none() | st.integers()}),
        st.dictionaries(st.text(max_size=4), st.none() | st.integers(), max_size=3),
    )
    if not hostile:
        return junk
    return junk | st.one_of(
        st.just(HUGE_INT),
        st.fixed_dictionaries({"type": _unhashable}),
        st.fixed_dictionaries({"type": st.just("tool_use"), "id": st.just(HUGE_INT)}),
        st.fixed_dictionaries(
            {"type": st.just("tool_result"), "content": st.just(HUGE_INT) | _unhashable}
        ),
    )


# Hostile JSON values: an int str() refuses (over 4,300 digits), a list or dict where a
# string is expected (unhashable in a set lookup).
HUGE_INT = 10**5000
_unhashable = st.lists(st.integers(), max_size=2) | st.dictionaries(
    st.text(max_size=2), st.integers(), max_size=1
)


def _malformed(hostile: bool) -> st.SearchStrategy[Any]:
    huge = st.just(HUGE_INT) if hostile else st.nothing()
    return st.one_of(
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
                "content": st.none()
                | st.text(max_size=10)
                | huge
                | st.lists(_junk_block(hostile), max_size=4),
                "tool_calls": st.none()
                | st.lists(_junk_block(hostile), max_size=3)
                | st.integers(),
                "parts": st.none() | st.lists(_junk_block(hostile), max_size=3),
                "tool_call_id": st.none() | st.integers() | huge | st.text(max_size=4),
            },
        ),
    )


malformed_messages = _malformed(hostile=False)
# Malformed and hostile: what memctx.messages must read without raising (other packages
# have not all been held to that yet).
hostile_messages = _malformed(hostile=True)


@st.composite
def fuzzed_conversations(draw: st.DrawFn, hostile: bool = False) -> list[Any]:
    """A damaged conversation of any format with malformed (or hostile) entries spliced in."""
    fmt = draw(st.sampled_from(FORMATS))
    messages = draw(damaged_conversations(fmt))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(messages)))
        messages.insert(at, draw(hostile_messages if hostile else malformed_messages))
    return messages


# --- smart trim -----------------------------------------------------------------------------

SUMMARY_TEXTS = (
    "[Context compacted] The user asked to fix the bug in parser.py; pytest -q passes.",
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below: fix the parser, run pytest.",
    "The conversation history before this point was compacted into the following summary:\n\n"
    "<summary>\nparser.py fixed\n</summary>",
)
RECALLED_TEXT = recalled_block_text(
    "<knowledge>\n- [decision] run pytest -q after every edit of parser.py\n</knowledge>"
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
    """A user message carrying only text (no tool results), in any of the five shapes."""
    if message.get("role") != "user":
        return False
    content = message.get("content", message.get("parts"))
    if isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(b, dict) and "text" in b and b.get("type", "text") in ("text", "input_text")
        for b in content
    )


def _with_markers(draw: st.DrawFn, fmt: str, has_system: bool, conv: Any) -> list[Any]:
    """``conv`` rendered in ``fmt``, maybe with a compaction summary after the system prompt
    and recalled blocks before user turns (both keep the pairing valid); each message
    numbered in ``mid`` so a test can tell which survived."""
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
    return messages


@st.composite
def trim_cases(draw: st.DrawFn, fmt: str) -> TrimCase:
    """A valid conversation in ``fmt``, maybe with a compaction summary after the system
    prompt and recalled blocks before user turns (both keep the pairing valid)."""
    has_system, conv = draw(abstract_conversations())
    messages = _with_markers(draw, fmt, has_system, conv)
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


# --- secrets of every class, for redaction properties -----------------------------------------
#
# ``secrets_by_class()`` draws a ``SecretCase(kind, text, secret)``: ``text`` holds one secret
# of class ``kind`` (a vendor token, a password on a command line, in a URL, an env file, YAML
# or JSON, a labelled value, an HTTP header, a PEM private key) in a realistic line and a
# random placement; ``secret`` is the substring that must never reach disk. Every example is a
# new random secret (a seeded generator per example, not fixed strings), built at run time so
# this file holds nothing a secret scanner would flag. Secrets hold no quote, backslash,
# whitespace or ``$``, so a JSON-encoded store holds them verbatim and a plain substring
# search finds a leak. For a PEM key ``secret`` is the whole body: check every line of
# ``secret_fragments(secret)`` (each body line of 16+ characters) instead of ``secret``.

import base64 as _sec_b64  # noqa: E402
import json as _sec_json  # noqa: E402
import random as _sec_random  # noqa: E402
import string as _sec_string  # noqa: E402
from collections.abc import Callable as _SEC_Callable  # noqa: E402
from typing import NamedTuple as _SEC_NamedTuple  # noqa: E402

_SEC_UP, _SEC_LO, _SEC_DIG = (
    _sec_string.ascii_uppercase,
    _sec_string.ascii_lowercase,
    _sec_string.digits,
)
_SEC_B62 = _SEC_UP + _SEC_LO + _SEC_DIG
_SEC_HEX = "0123456789abcdef"
_SEC_PW_CHARS = _SEC_B62 + "!*-_+.~^"  # what a generated password holds; no shell or URL syntax
_SEC_PEM_PRIVATE = "PRIVATE" + " KEY"  # assembled so this file holds no PEM header


class SecretCase(_SEC_NamedTuple):
    """One drawn secret: its class, the text holding it, and what must not survive."""

    kind: str
    text: str
    secret: str


def secret_fragments(secret: str) -> list[str]:
    """What must be absent from disk: the secret, or each 16+ character line of a PEM body."""
    lines = [line for line in secret.splitlines() if len(line) >= 16]
    return lines if len(lines) > 1 else [secret]


def _sec_mix(rng: _sec_random.Random, n: int, alphabet: str = _SEC_B62) -> str:
    """``n`` random characters holding every character class of ``alphabet``, like a key."""
    classes = [c for c in (_SEC_UP, _SEC_LO, _SEC_DIG) if set(c) & set(alphabet)]
    chars = [rng.choice(alphabet) for _ in range(n - len(classes))]
    chars += [rng.choice(c) for c in classes]
    rng.shuffle(chars)
    return "".join(chars)


def _sec_hexs(rng: _sec_random.Random, n: int) -> str:
    return "".join(rng.choice(_SEC_HEX) for _ in range(n))


def _sec_password(rng: _sec_random.Random) -> str:
    """A password: random characters, or (a third of the time) lower-case letters only."""
    if rng.random() < 0.33:
        return "".join(rng.choice(_SEC_LO) for _ in range(rng.randint(8, 24)))
    first = rng.choice(_SEC_B62)  # not ``-``: an option; not ``!``/``*``: YAML tags and aliases
    return first + _sec_mix(rng, rng.randint(7, 23), _SEC_PW_CHARS)


def _sec_user(rng: _sec_random.Random) -> str:
    return rng.choice(["admin", "deploy", "app", "root", "ci-bot", "svc_backup", "postgres"])


def _sec_b64url(rng: _sec_random.Random, nbytes: int) -> str:
    return _sec_b64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def _sec_jwt(rng: _sec_random.Random) -> str:
    head = _sec_b64url_json({"alg": "HS256", "typ": "JWT"})
    body = _sec_b64url_json({"sub": _sec_mix(rng, 12), "iat": 1_700_000_000 + rng.randrange(10**6)})
    return f"{head}.{body}.{_sec_b64url(rng, 32)}"


def _sec_b64url_json(value: object) -> str:
    return _sec_b64.urlsafe_b64encode(_sec_json.dumps(value).encode()).decode().rstrip("=")


def _sec_discord(rng: _sec_random.Random) -> str:
    user_id = str(rng.randrange(10**17, 10**19)).encode()
    head = _sec_b64.b64encode(user_id).decode().rstrip("=")
    return f"{head}.{_sec_mix(rng, 6, _SEC_B62 + '-_')}.{_sec_mix(rng, 38, _SEC_B62 + '-_')}"


_SEC_VendorMaker = _SEC_Callable[[_sec_random.Random], str]

# (class name, token maker): every vendor prefix memctx masks, with its documented body.
_SEC_VENDOR_TOKENS: tuple[tuple[str, _SEC_VendorMaker], ...] = (
    ("anthropic", lambda r: "sk-ant-api03-" + _sec_mix(r, 93, _SEC_B62 + "-_") + "AA"),
    ("anthropic_admin", lambda r: "sk-ant-admin01-" + _sec_mix(r, 93, _SEC_B62 + "-_") + "AA"),
    ("openai", lambda r: "sk-" + _sec_mix(r, 48)),
    ("openai_project", lambda r: "sk-proj-" + _sec_mix(r, 156, _SEC_B62 + "-_")),
    ("openai_service", lambda r: "sk-svcacct-" + _sec_mix(r, 120, _SEC_B62 + "-_")),
    ("github_pat", lambda r: r.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]) + _sec_mix(r, 36)),
    ("github_fine", lambda r: f"github_pat_{_sec_mix(r, 22)}_{_sec_mix(r, 59)}"),
    (
        "gitlab",
        lambda r: (
            r.choice(["glpat-", "gldt-", "glrt-", "glcbt-", "glft-", "glimt-", "gloas-"])
            + _sec_mix(r, 20, _SEC_B62 + "-_")
        ),
    ),
    ("gitlab_trigger", lambda r: "glptt-" + _sec_mix(r, 40, _SEC_B62 + "-_")),
    ("gitlab_runner", lambda r: "GR1348941" + _sec_mix(r, 20, _SEC_B62 + "-_")),
    ("huggingface", lambda r: "hf_" + _sec_mix(r, 34, _SEC_UP + _SEC_LO)),
    ("aws_key_id", lambda r: r.choice(["AKIA", "ASIA"]) + _sec_mix(r, 16, _SEC_UP + _SEC_DIG)),
    ("slack", lambda r: f"xoxb-{r.randrange(10**11)}-{r.randrange(10**12)}-{_sec_mix(r, 24)}"),
    (
        "slack_app",
        lambda r: (
            f"xapp-1-A{_sec_mix(r, 10, _SEC_UP + _SEC_DIG)}-{r.randrange(10**12)}-"
            + _sec_hexs(r, 64)
        ),
    ),
    ("stripe", lambda r: r.choice(["sk_live_", "rk_live_", "sk_test_"]) + _sec_mix(r, 99)),
    ("stripe_webhook", lambda r: "whsec_" + _sec_mix(r, 32)),
    ("google_api", lambda r: "AIza" + _sec_mix(r, 35, _SEC_B62 + "-_")),
    ("google_oauth", lambda r: "GOCSPX-" + _sec_mix(r, 28, _SEC_B62 + "-_")),
    ("npm", lambda r: "npm_" + _sec_mix(r, 36)),
    ("shopify", lambda r: r.choice(["shpat_", "shpss_", "shpca_", "shppa_"]) + _sec_hexs(r, 32)),
    ("digitalocean", lambda r: r.choice(["dop_v1_", "doo_v1_", "dor_v1_"]) + _sec_hexs(r, 64)),
    ("databricks", lambda r: "dapi" + _sec_hexs(r, 32)),
    (
        "sendgrid",
        lambda r: f"SG.{_sec_mix(r, 22, _SEC_B62 + '-_')}.{_sec_mix(r, 43, _SEC_B62 + '-_')}",
    ),
    ("pypi", lambda r: "pypi-AgEIcHlwaS5vcmc" + _sec_mix(r, 120, _SEC_B62 + "-_")),
    ("mailgun", lambda r: "key-" + _sec_hexs(r, 32)),
    ("mailchimp", lambda r: f"{_sec_hexs(r, 32)}-us{r.randint(1, 21)}"),
    ("atlassian", lambda r: "ATATT3" + _sec_mix(r, 186, _SEC_B62 + "-_=")),
    ("bitbucket", lambda r: "ATBB" + _sec_mix(r, 32)),
    ("linear", lambda r: "lin_api_" + _sec_mix(r, 40)),
    ("notion", lambda r: "secret_" + _sec_mix(r, 43)),
    ("notion_ntn", lambda r: f"ntn_{r.randrange(10**10, 10**11)}{_sec_mix(r, 35)}"),
    ("postman", lambda r: f"PMAK-{_sec_hexs(r, 24)}-{_sec_hexs(r, 34)}"),
    ("doppler", lambda r: "dp.pt." + _sec_mix(r, 43)),
    ("vault", lambda r: r.choice(["hvs.", "hvb."]) + _sec_mix(r, 90, _SEC_B62 + "-_")),
    ("grafana_cloud", lambda r: "glc_" + _sec_mix(r, 64, _SEC_B62 + "+/")),
    ("grafana_service", lambda r: f"glsa_{_sec_mix(r, 32)}_{_sec_hexs(r, 8)}"),
    ("newrelic", lambda r: "NRAK-" + _sec_mix(r, 27, _SEC_UP + _SEC_DIG)),
    ("sentry", lambda r: "sntrys_" + _sec_b64url_json({"iat": r.random(), "k": _sec_mix(r, 40)})),
    ("heroku", lambda r: "HRKU-" + _sec_mix(r, 60, _SEC_B62 + "-_")),
    ("discord_bot", _sec_discord),
    (
        "telegram_bot",
        lambda r: f"{r.randrange(10**8, 10**10)}:AA{_sec_mix(r, 33, _SEC_B62 + '-_')}",
    ),
    ("square", lambda r: r.choice(["sq0atp-", "sq0csp-"]) + _sec_mix(r, 43, _SEC_B62 + "-_")),
    ("docker_hub", lambda r: "dckr_pat_" + _sec_mix(r, 27, _SEC_B62 + "-_")),
    ("supabase", lambda r: "sbp_" + _sec_hexs(r, 40)),
    ("planetscale", lambda r: "pscale_tkn_" + _sec_mix(r, 43, _SEC_B62 + "-_")),
    ("flyio", lambda r: "fo1_" + _sec_mix(r, 43, _SEC_B62 + "-_")),
    ("figma", lambda r: "figd_" + _sec_mix(r, 40, _SEC_B62 + "-_")),
    ("terraform", lambda r: f"{_sec_mix(r, 14)}.atlasv1.{_sec_mix(r, 67, _SEC_B62 + '-_')}"),
    ("pulumi", lambda r: "pul-" + _sec_hexs(r, 40)),
    ("groq", lambda r: "gsk_" + _sec_mix(r, 52)),
    ("replicate", lambda r: "r8_" + _sec_mix(r, 37)),
    ("perplexity", lambda r: "pplx-" + _sec_mix(r, 48)),
    ("xai", lambda r: "xai-" + _sec_mix(r, 80)),
    ("tavily", lambda r: "tvly-" + _sec_mix(r, 32)),
    ("langsmith", lambda r: f"lsv2_pt_{_sec_hexs(r, 32)}_{_sec_hexs(r, 10)}"),
    (
        "dynatrace",
        lambda r: (
            f"dt0c01.{_sec_mix(r, 24, _SEC_UP + _SEC_DIG)}.{_sec_mix(r, 64, _SEC_UP + _SEC_DIG)}"
        ),
    ),
    ("jwt", _sec_jwt),
    (
        "age",
        lambda r: (
            "AGE-SECRET-KEY-1"
            + "".join(r.choice("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L") for _ in range(58))
        ),
    ),
    (
        "azure_client_secret",
        lambda r: f"{_sec_mix(r, 3)}{r.randint(0, 9)}Q~{_sec_mix(r, 34, _SEC_B62 + '_~.-')}",
    ),
)

# Where a token stands: bare in prose, after a key, quoted, in a URL, after a JSON escape...
_SEC_PLACEMENTS = (
    "using {} now",
    "export SERVICE_CREDENTIAL={}",
    'config = {{"token": "{}", "retries": 3}}',
    "Authorization: Bearer {}",
    "found the key: {}",
    "line one\\nkey {}\\nline three",
    "`{}`",
    "({})",
    "https://api.example.com/v1/items?access_token={}&page=2",
    "{}",
)


def _sec_vendor_case(
    kind: str, make: _SEC_VendorMaker
) -> _SEC_Callable[[_sec_random.Random], tuple[str, str]]:
    def build(rng: _sec_random.Random) -> tuple[str, str]:
        token = make(rng)
        return rng.choice(_SEC_PLACEMENTS).format(token), token

    return build


def _sec_twilio(rng: _sec_random.Random) -> tuple[str, str]:
    sid = "SK" + _sec_hexs(rng, 32)
    return f"client = Client(twilio_sid, api_key={sid!r})", sid


def _sec_webhook_slack(rng: _sec_random.Random) -> tuple[str, str]:
    team, bot = (_sec_mix(rng, 10, _SEC_UP + _SEC_DIG) for _ in range(2))
    path = f"T{team}/B{bot}/{_sec_mix(rng, 24)}"
    return f"curl -X POST https://hooks.slack.com/services/{path} -d @msg.json", path


def _sec_webhook_discord(rng: _sec_random.Random) -> tuple[str, str]:
    token = _sec_mix(rng, 68, _SEC_B62 + "-_")
    url = f"https://discord.com/api/webhooks/{rng.randrange(10**17, 10**19)}/{token}"
    return f"WEBHOOK={url}", token


def _sec_azure_storage(rng: _sec_random.Random) -> tuple[str, str]:
    key = _sec_b64.b64encode(rng.randbytes(64)).decode()
    text = (
        "DefaultEndpointsProtocol=https;AccountName=prodlogs;"
        f"AccountKey={key};EndpointSuffix=core.windows.net"
    )
    return text, key


def _sec_aws_secret(rng: _sec_random.Random) -> tuple[str, str]:
    key, key_id = _sec_mix(rng, 40, _SEC_B62 + "/+"), "AKIA" + _sec_mix(rng, 16, _SEC_UP + _SEC_DIG)
    return f"[default]\naws_access_key_id = {key_id}\naws_secret_access_key = {key}\n", key


def _sec_cli(template: str) -> _SEC_Callable[[_sec_random.Random], tuple[str, str]]:
    """A command line with ``{pw}`` for the password and ``{user}`` for a user name."""

    def build(rng: _sec_random.Random) -> tuple[str, str]:
        pw = _sec_password(rng)
        return template.format(pw=pw, user=_sec_user(rng)), pw

    return build


_SEC_CLI_FORMS = {
    "curl_u": "curl -u {user}:{pw} https://api.internal/v2/status",
    "curl_user": "curl -sS --user {user}:{pw} -X GET https://ci.internal/api/json",
    "curl_user_quoted": "curl --user '{user}:{pw}' https://repo.internal/artifactory/api",
    "mysql_attached": "mysql -h db.internal -u {user} -p{pw} app_production < dump.sql",
    "mysqldump": "mysqldump -u{user} -p{pw} --single-transaction shop > shop.sql",
    "mysql_long": "mysql --user={user} --password={pw} -e 'SHOW DATABASES'",
    "password_option": "mongodump --uri mongodb://db:27017 --username {user} --password {pw}",
    "docker_login": "docker login -u {user} -p {pw} registry.internal:5000",
    "docker_login_long": "podman login registry.io --username {user} --password {pw}",
    "sshpass": "sshpass -p {pw} ssh {user}@10.0.4.12 'uptime'",
    "sshpass_attached": "sshpass -p{pw} scp backup.tar {user}@bastion:/srv",
    "pgpassword": "PGPASSWORD={pw} psql -h db.internal -U {user} -d app",
    "redis_cli": "redis-cli -h cache.internal -a {pw} INFO keyspace",
    "mongosh": "mongosh --host db -u {user} -p {pw} --authenticationDatabase admin",
    "openssl": "openssl pkcs12 -export -in cert.pem -out cert.p12 -passout pass:{pw}",
    "keytool": "keytool -importkeystore -srckeystore a.jks -srcstorepass {pw} -destkeystore b.p12",
    "sqlcmd": "sqlcmd -S db.internal -U {user} -P {pw} -Q 'SELECT 1'",
    "ldapsearch": "ldapsearch -x -D cn={user},dc=corp -w {pw} -b dc=corp",
    "smbclient": "smbclient //fs01/share -U {user}%{pw} -c 'ls'",
    "zip": "zip -r -P {pw} backup.zip ./data",
    "sevenzip": "7z a -p{pw} -mhe=on secrets.7z ./vault",
    "htpasswd": "htpasswd -bc /etc/nginx/.htpasswd {user} {pw}",
    "htpasswd_stdout": "htpasswd -nbB {user} {pw}",
    "echo_pipe": "echo {pw} | docker login ghcr.io -u {user} --password-stdin",
    "sudo_stdin": "echo '{pw}' | sudo -S systemctl restart nginx",
    "kubectl_literal": "kubectl create secret generic db --from-literal=password={pw}",
    "kubectl_literal_any_key": "kubectl create secret generic db --from-literal=db-pw={pw}",
    "gh_secret": "gh secret set DEPLOY_KEY --body {pw}",
    "sqlplus": "sqlplus {user}/{pw}@//db.internal:1521/ORCL",
    "sql_alter": "ALTER USER {user} WITH PASSWORD '{pw}';",
    "sql_identified": "CREATE USER '{user}'@'%' IDENTIFIED BY '{pw}';",
    "pgpass": "db.internal:5432:app:{user}:{pw}",
    "pgpass_wildcard": "*:*:*:{user}:{pw}",
    "netrc": "machine api.heroku.com login {user}@example.com password {pw}",
    "netrc_lines": "machine git.internal\n  login {user}\n  password {pw}\n",
    "wget": "wget --user={user} --password={pw} https://files.internal/a.tgz",
    "npm_config": "npm config set //registry.internal/:_authToken {pw}",
}

_SEC_URL_FORMS = {
    "url": "DATABASE_URL=postgres://{user}:{pw}@db.internal:5432/app",
    "url_empty_user": "REDIS_URL=redis://:{pw}@cache.internal:6379/0",
    "url_at_in_password": "postgres://{user}:{pw}@{tail}@db.internal/app",
    "url_json_escaped": '{{"dsn": "postgres:\\/\\/{user}:{pw}@db.internal\\/app"}}',
    "url_git": "git clone https://oauth2:{pw}@gitlab.internal/group/repo.git",
    "url_amqp": "amqp://{user}:{pw}@rabbit.internal:5672/%2F",
}


def _sec_url(template: str) -> _SEC_Callable[[_sec_random.Random], tuple[str, str]]:
    def build(rng: _sec_random.Random) -> tuple[str, str]:
        pw, tail = _sec_password(rng), _sec_mix(rng, rng.randint(8, 16))
        text = template.format(user=_sec_user(rng), pw=pw, tail=tail)
        # A password holding an ``@``: what leaked was the part after it, up to the host.
        return text, tail if "{tail}" in template else pw

    return build


def _sec_url_encoded(rng: _sec_random.Random) -> tuple[str, str]:
    pw = _sec_password(rng).replace("~", "").replace("^", "")
    return f"GET /connect?dsn=postgres%3A%2F%2F{_sec_user(rng)}%3A{pw}%40db.internal%2Fapp", pw


# Keys that name a secret, in the shapes env files, YAML, JSON and code use.
_SEC_ENV_KEYS = (
    "DB_PASSWORD",
    "ADMIN_PASSWORD",
    "POSTGRES_PASSWORD",
    "MYSQL_ROOT_PASSWORD",
    "REDIS_PASS",
    "SMTP_PASSWD",
    "LDAP_PWD",
    "APP_SECRET",
    "JWT_SECRET",
    "GITLAB_TOKEN",
    "SLACK_BOT_TOKEN",
    "STRIPE_API_KEY",
    "OPENAI_API_KEY",
    "SENDGRID_APIKEY",
    "GCP_PRIVATE_KEY",
    "AWS_SECRET_KEY",
    "REGISTRY_CREDENTIALS",
    "SIGNING_PASSPHRASE",
    "CLIENT_SECRET",
    "DJANGO_SECRET_KEY",
)
_SEC_CONFIG_KEYS = (
    "password",
    "db_password",
    "passwd",
    "secret",
    "client_secret",
    "secretAccessKey",
    "apiKey",
    "api_key",
    "authToken",
    "accessToken",
    "refreshToken",
    "privateKey",
    "token",
    "webhook_secret",
    "smtpPassword",
    "admin-password",
)
_SEC_ENV_LINES = (
    "{k}={v}",
    "export {k}={v}",
    '{k}="{v}"',
    "{k}='{v}'",
    "docker run -e {k}={v} app:latest",
    "set -x {k} {v}",
    "ENV {k} {v}",
    "setx {k} {v}",
    "  - {k}={v}",
    "{k}: {v}",
    "{k}: '{v}'",
    "Found the token: {k}={v}",
    '$env:{k} = "{v}"',
    "{k}={v} ./run.sh",
)
_SEC_CONFIG_LINES = (
    "{k}: {v}",
    "  {k}: {v}\n  port: 5432",
    '{k}: "{v}"',
    '{{"{k}": "{v}", "user": "app"}}',
    '"{k}": "{v}",',
    '{k} = "{v}"',
    "{k}={v}",
    "{k} => '{v}',",
    "<{k}>{v}</{k}>",
    "?user=bob&{k}={v}&x=1",
    '\\"{k}\\": \\"{v}\\"',
)


def _sec_env(rng: _sec_random.Random) -> tuple[str, str]:
    value = _sec_password(rng)
    return rng.choice(_SEC_ENV_LINES).format(k=rng.choice(_SEC_ENV_KEYS), v=value), value


def _sec_config(rng: _sec_random.Random) -> tuple[str, str]:
    value = _sec_password(rng)
    return rng.choice(_SEC_CONFIG_LINES).format(k=rng.choice(_SEC_CONFIG_KEYS), v=value), value


def _sec_labelled(rng: _sec_random.Random) -> tuple[str, str]:
    value = _sec_mix(rng, rng.randint(16, 40))
    label = rng.choice(
        [
            "the token is {}",
            "Rotated the API key to {}",
            "password was {} until yesterday",
            "the secret value: {}",
            "new credentials -> {}",
            "api key: `{}`",
        ]
    )
    return label.format(value), value


_SEC_HEADER_NAMES = (
    "Authorization: Bearer",
    "Authorization: Basic",
    "Authorization: token",
    "Proxy-Authorization: Basic",
    "X-API-Key:",
    "X-Auth-Token:",
    "X-Access-Token:",
    "Private-Token:",
    "X-Vault-Token:",
    "Ocp-Apim-Subscription-Key:",
    "X-Functions-Key:",
    "Api-Key:",
)


def _sec_header(rng: _sec_random.Random) -> tuple[str, str]:
    value = _sec_mix(rng, rng.randint(20, 48), _SEC_B62 + "-_")
    line = f"{rng.choice(_SEC_HEADER_NAMES)} {value}"
    form = rng.choice(["{}", "curl -H '{}' https://api.internal/v1", '-H "{}" \\', "> {}\r\n"])
    return form.format(line), value


def _sec_cookie(rng: _sec_random.Random) -> tuple[str, str]:
    value = _sec_mix(rng, rng.randint(24, 64), _SEC_B62 + "-_")
    form = rng.choice(
        [
            "Cookie: theme=dark; sessionid={}",
            "Set-Cookie: session={}; Path=/; HttpOnly; Secure",
            "curl -b 'sid={}' https://app.internal/",
            "curl --cookie session={} https://app.internal/",
        ]
    )
    return form.format(value), value


def _sec_pem(rng: _sec_random.Random) -> tuple[str, str]:
    label = rng.choice(
        [
            "RSA " + _SEC_PEM_PRIVATE,
            _SEC_PEM_PRIVATE,
            "EC " + _SEC_PEM_PRIVATE,
            "OPENSSH " + _SEC_PEM_PRIVATE,
        ]
    )
    size = rng.choice([1200, 2400, 3200])  # 2048- to 4096-bit RSA keys are 1.2-3.2 kB of base64
    data = _sec_b64.b64encode(rng.randbytes(size * 3 // 4)).decode()
    body = "\n".join(data[i : i + 64] for i in range(0, len(data), 64))
    block = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
    form = rng.choice(["$ cat key.pem\n{}\n$ ls", '{{"private_key": "{}"}}', "{}"])
    if form.startswith("{{"):
        block = block.replace("\n", "\\n")  # a service-account JSON file keeps it on one line
    return form.format(block), body


_SEC_SECRET_BUILDERS: dict[str, _SEC_Callable[[_sec_random.Random], tuple[str, str]]] = {
    **{f"vendor_{kind}": _sec_vendor_case(kind, make) for kind, make in _SEC_VENDOR_TOKENS},
    "vendor_twilio": _sec_twilio,
    "vendor_aws_secret": _sec_aws_secret,
    "vendor_azure_storage": _sec_azure_storage,
    "webhook_slack": _sec_webhook_slack,
    "webhook_discord": _sec_webhook_discord,
    **{f"cli_{name}": _sec_cli(template) for name, template in _SEC_CLI_FORMS.items()},
    **{name: _sec_url(template) for name, template in _SEC_URL_FORMS.items()},
    "url_encoded": _sec_url_encoded,
    "env_keyed": _sec_env,
    "config_keyed": _sec_config,
    "labelled": _sec_labelled,
    "header": _sec_header,
    "cookie": _sec_cookie,
    "pem_private_key": _sec_pem,
}
SECRET_CLASSES = tuple(sorted(_SEC_SECRET_BUILDERS))


def secret_example(kind: str, seed: int) -> SecretCase:
    """The secret of class ``kind`` that ``seed`` draws (plain function, no hypothesis)."""
    text, secret = _SEC_SECRET_BUILDERS[kind](_sec_random.Random(f"{kind}:{seed}"))
    return SecretCase(kind, text, secret)


@st.composite
def secrets_by_class(draw: st.DrawFn, kinds: tuple[str, ...] = SECRET_CLASSES) -> SecretCase:
    """A random secret of one of ``kinds`` (all classes by default) in a realistic line."""
    return secret_example(draw(st.sampled_from(kinds)), draw(st.integers(0, 2**32 - 1)))


# --- compaction (seed 001) -------------------------------------------------------------------

# ``compaction_conversations(fmt)`` draws a valid conversation in ``fmt`` whose user texts and
# tool results are sometimes inflated (x5 to x400 the words: a pasted log, a large tool
# output), with maybe an earlier compaction summary after the system prompt and recalled
# blocks before user turns, as an agent's history looks when it is compacted again.
# ``compaction_cases(fmt)`` adds a window (tiny ones included, where nothing but the plain
# notice fits, or nothing at all), a verbatim-tail budget and the safeguard mode.

_compaction_inflate = st.sampled_from([1, 1, 1, 5, 40, 400])


@st.composite
def compaction_conversations(draw: st.DrawFn, fmt: str) -> list[Any]:
    """A valid conversation in ``fmt`` with some large messages (see the section note)."""
    has_system, conv = draw(abstract_conversations())
    for turn in conv:
        if turn.user_text:
            turn.user_text = " ".join([turn.user_text] * draw(_compaction_inflate))
        for call in turn.calls:
            call.result = " ".join([call.result] * draw(_compaction_inflate))
    return _with_markers(draw, fmt, has_system, conv)


@dataclass
class CompactionCase:
    """A history to compact and the sizes to compact it with."""

    messages: list[Any]
    window: int
    keep_recent_tokens: int | None
    safeguard: bool


@st.composite
def compaction_cases(draw: st.DrawFn, fmt: str) -> CompactionCase:
    """A :func:`compaction_conversations` history, a window and a tail budget."""
    messages = draw(compaction_conversations(fmt))
    window = draw(st.sampled_from([150, 600, 2_000, 8_000, 60_000]) | st.integers(100, 20_000))
    keep = draw(st.none() | st.integers(0, window))
    return CompactionCase(messages, window, keep, draw(st.booleans()))


# --- tool-output pruning (seed 003) -------------------------------------------------------

# ``pruning_cases(fmt)`` draws a :func:`compaction_conversations` history (large tool results
# among small ones), a window from tiny (everything over the ratios) to roomy (nothing to
# prune), and pruning settings around the seed's defaults (0 protected turns included).


@dataclass
class PruningCase:
    """A context to prune, the window and the ``contextPruning`` settings (as overrides)."""

    messages: list[Any]
    window: int
    settings: dict[str, Any]


@st.composite
def pruning_cases(draw: st.DrawFn, fmt: str) -> PruningCase:
    """A history, a window and pruning settings (see the section note)."""
    messages = draw(compaction_conversations(fmt))
    window = draw(st.sampled_from([200, 1_000, 4_000, 20_000, 200_000]))
    max_chars = draw(st.sampled_from([60, 400, 4_000]))
    head = draw(st.integers(0, max_chars // 2 - 1))
    tail = draw(st.integers(0, max_chars - head - 1))
    settings = {
        "keepLastAssistants": draw(st.integers(0, 4)),
        "softTrimRatio": draw(st.sampled_from([0.05, 0.3, 1.0])),
        "hardClearRatio": draw(st.sampled_from([0.05, 0.5, 1.0])),
        "minPrunableToolChars": draw(st.sampled_from([0, 500, 50_000])),
        "softTrim": {"maxChars": max_chars, "headChars": head, "tailChars": tail},
        "hardClear": {"enabled": draw(st.booleans())},
    }
    return PruningCase(messages, window, settings)


# --- memory flush (seeds 001 §1.3, 003) ------------------------------------------------------

# ``flush_timelines()`` draws what a session's flush tracker sees: a window (tiny ones where
# ``window - reserve - soft`` is not positive, up to 2M), the flush and reserve settings, and a
# run of events: a fresh token count (compaction follows when it reaches ``window - reserve``),
# ``stale`` (the count from before the last compaction reported again) and ``restart`` (a new
# tracker on the same directory).


@dataclass
class FlushTimeline:
    """Settings and events for the flush-cycle property (see the section note)."""

    window: int
    soft_threshold: int
    reserve_floor: int
    events: list[tuple[str, int]]


@st.composite
def flush_timelines(draw: st.DrawFn) -> FlushTimeline:
    """A :class:`FlushTimeline`; token counts go up to twice the window."""
    window = draw(
        st.sampled_from([1, 1_000, 5_000, 8_000, 32_000, 200_000, 1_000_000])
        | st.integers(1, 2_000_000)
    )
    soft = draw(st.sampled_from([0, 4_000, 4_000, 50_000]) | st.integers(0, 20_000))
    floor = draw(st.sampled_from([0, 20_000, 20_000]) | st.integers(0, 100_000))
    # Counts near the thresholds (60-110 % of the window) more often than uniform draws give.
    near = st.integers(6, 11).map(lambda tenths: window * tenths // 10)
    event = st.one_of(
        st.tuples(st.just("tokens"), st.integers(0, 2 * window) | near),
        st.tuples(st.just("stale"), st.just(0)),
        st.tuples(st.just("restart"), st.just(0)),
    )
    return FlushTimeline(window, soft, floor, draw(st.lists(event, min_size=4, max_size=40)))


# --- turn-based compaction and the loop guard (seed 002) ---------------------------------------

# ``turn_loop_cases(fmt)`` draws a long valid conversation in ``fmt`` (up to 40 turns, user
# texts and tool results sometimes inflated as in ``compaction_conversations``) that a test
# feeds to an agent loop turn by turn, with a random threshold, window, recent-turn budget,
# spacing and summary limit, and a scripted summariser whose replies may be long enough to
# make compactions ineffective and which may fail every n-th call.
# ``guard_timelines()`` draws a loop guard's settings and a run of turns, each with whether
# a trigger wants to compact and, if one runs, how many tokens it leaves.


@dataclass
class TurnLoopCase:
    """A conversation to replay turn by turn and the turn-based compactor's settings."""

    messages: list[Any]
    threshold: int
    window: int
    recent_turn_budget: int
    min_turns_between: int
    max_summary_tokens: int
    summary_words: int  # words of each scripted summary
    fail_every: int  # every n-th summary call fails; 0 never
    report_input: bool  # the provider reports the last call's input tokens


@st.composite
def turn_loop_cases(draw: st.DrawFn, fmt: str) -> TurnLoopCase:
    """A :class:`TurnLoopCase` in ``fmt`` (see the section note)."""
    has_system = draw(st.booleans())
    conv = draw(st.lists(turns(), min_size=1, max_size=40))
    for turn in conv:
        if turn.user_text is None and draw(st.integers(0, 3)):  # most steps open a turn
            turn.user_text = draw(short_text)
        if turn.user_text:
            turn.user_text = " ".join([turn.user_text] * draw(_compaction_inflate))
        for call in turn.calls:
            call.result = " ".join([call.result] * draw(_compaction_inflate))
    messages = render(fmt, has_system, conv, gemini_ids=draw(st.booleans()))
    return TurnLoopCase(
        messages=messages,
        threshold=draw(st.sampled_from([1, 50, 300, 2_000, 100_000]) | st.integers(1, 5_000)),
        window=draw(st.sampled_from([100, 2_000, 32_000, 200_000]) | st.integers(16, 60_000)),
        recent_turn_budget=draw(st.integers(1, 6)),
        min_turns_between=draw(st.integers(0, 5)),
        max_summary_tokens=draw(st.sampled_from([4096]) | st.integers(1, 3_000)),
        summary_words=draw(st.sampled_from([1, 5, 50]) | st.integers(1, 2_000)),
        fail_every=draw(st.sampled_from([0, 0, 1, 2, 3])),
        report_input=draw(st.booleans()),
    )


@dataclass
class GuardTimeline:
    """A loop guard's settings and what happens at each turn of a run."""

    min_turns_between: int
    margin: float
    max_backoff_turns: int
    threshold: int
    # Per turn: (turns since the previous step >= 0, a trigger wants to compact, outcome):
    # outcome is the tokens a compaction leaves, or None for a failed one.
    steps: list[tuple[int, bool, int | None]]


@st.composite
def guard_timelines(draw: st.DrawFn) -> GuardTimeline:
    """A :class:`GuardTimeline` (see the section note)."""
    threshold = draw(st.sampled_from([1, 100, 100_000]) | st.integers(1, 10**6))
    outcome = st.none() | st.integers(0, 2 * threshold)
    step = st.tuples(st.sampled_from([0, 1, 1, 1, 2, 5]), st.booleans() | st.just(True), outcome)
    return GuardTimeline(
        min_turns_between=draw(st.integers(0, 6)),
        margin=draw(st.sampled_from([0.0, 0.1, 0.5]) | st.floats(0, 0.99)),
        max_backoff_turns=draw(st.sampled_from([1, 32]) | st.integers(1, 100)),
        threshold=threshold,
        steps=draw(st.lists(step, min_size=1, max_size=80)),
    )


# --- session summary sidecar (seed 004) ------------------------------------------------------

# ``sidecar_cases(fmt)`` draws a session as the summary sidecar sees it across turns: a valid
# conversation in ``fmt`` (maybe with a compaction summary and recalled blocks, as in
# ``compaction_conversations``), the sidecar's settings, and a run of events the test applies
# to the transcript before each update: ``grow`` (the next n messages arrive), ``inject`` (the
# materialised summary goes into the system context and that prompt is what gets stored),
# ``echo`` (the materialised summary comes back as a user message, the seed's loop),
# ``compact`` (the history becomes a compaction summary and its last n messages) and
# ``restart`` (the sidecar is opened again from its file).

SIDECAR_EVENTS = ("grow", "grow", "grow", "inject", "echo", "compact", "restart")


@dataclass
class SidecarCase:
    """A session, the sidecar's settings and the events of its turns (see the section note)."""

    fmt: str
    messages: list[Any]
    max_items: int
    item_chars: int
    max_chars: int
    events: list[tuple[str, int]]


@st.composite
def sidecar_cases(draw: st.DrawFn, fmt: str) -> SidecarCase:
    """A :class:`SidecarCase` in ``fmt``."""
    has_system, conv = draw(abstract_conversations())
    event = st.tuples(st.sampled_from(SIDECAR_EVENTS), st.integers(0, 8))
    return SidecarCase(
        fmt=fmt,
        messages=_with_markers(draw, fmt, has_system, conv),
        max_items=draw(st.sampled_from([1, 3, 60]) | st.integers(1, 20)),
        item_chars=draw(st.sampled_from([10, 60, 240]) | st.integers(1, 300)),
        max_chars=draw(st.sampled_from([0, 80, 400, 4_000]) | st.integers(0, 2_000)),
        events=draw(st.lists(event, min_size=3, max_size=14)),
    )


def user_message(fmt: str, text: str) -> dict[str, Any]:
    """A plain user message holding ``text`` in ``fmt`` (the shape :func:`render` gives it)."""
    return _user_text(fmt, text)


# --- tool payload refs (seed 004) --------------------------------------------------------------

# ``payload_texts`` draws a tool output: any unicode but lone surrogates (CJK, emoji, controls,
# NUL, combining marks), short, or a drawn piece repeated up to 150,000 characters.
# ``payload_conversations(fmt)`` draws a valid conversation in ``fmt`` whose tool results are
# often payload texts; with ``damaged`` it is then damaged as ``damaged_conversations`` does,
# and with ``details`` a Pi result may carry ``details`` (``status``, ``exitCode`` and a
# payload-text ``stdout``). ``secret_payloads()`` draws a long tool output holding one
# planted secret of any class (``secrets_by_class``) and the secret case.

_payload_chars = st.characters(exclude_categories=("Cs",))
payload_texts = st.one_of(
    st.text(_payload_chars, max_size=800),
    st.tuples(st.text(_payload_chars, min_size=1, max_size=40), st.integers(1, 4_000)).map(
        lambda piece: (piece[0] * piece[1])[:150_000]
    ),
)


@st.composite
def payload_conversations(
    draw: st.DrawFn, fmt: str, *, damaged: bool = False, details: bool = False
) -> list[Any]:
    """A conversation in ``fmt`` with large tool outputs (see the section note)."""
    has_system, conv = draw(abstract_conversations())
    for turn in conv:
        for call in turn.calls:
            if draw(st.booleans()):
                call.result = draw(payload_texts)
    messages = render(fmt, has_system, conv, gemini_ids=draw(st.booleans()))
    for message in messages:
        if details and message.get("role") == "toolResult" and draw(st.booleans()):
            stdout = draw(payload_texts)
            message["details"] = {"status": "completed", "exitCode": 0, "stdout": stdout}
    if damaged:
        for _ in range(draw(st.integers(1, 6))):
            op = draw(st.sampled_from(DAMAGE_OPS))
            damage(fmt, messages, op, lambda n: draw(st.integers(0, n - 1)))
    return _numbered(messages)


@st.composite
def secret_payloads(draw: st.DrawFn) -> tuple[str, SecretCase]:
    """A tool output of at least 1,000 characters with one secret line planted in it."""
    case = draw(secrets_by_class())
    filler = "".join(f"{draw(short_text)} line {k}\n" for k in range(draw(st.integers(1, 40))))
    before, after = (500 + draw(st.integers(0, 3_000)) for _ in range(2))
    head, tail = (filler * (n // len(filler) + 1) for n in (before, after))
    return f"{head}{case.text}\n{tail}", case


# --- Paired outcomes: two configurations' yes/no answers on the same probes --------------


@st.composite
def paired_outcomes(draw: st.DrawFn) -> tuple[dict[int, bool], dict[int, bool]]:
    """``(before, after)``: each probe's outcome in two measurements over 1-400 probes."""
    n = draw(st.integers(1, 400))
    cells = draw(
        st.lists(st.sampled_from([(1, 1), (1, 0), (0, 1), (0, 0)]), min_size=n, max_size=n)
    )
    return (
        {i: bool(b) for i, (b, _) in enumerate(cells)},
        {i: bool(a) for i, (_, a) in enumerate(cells)},
    )
