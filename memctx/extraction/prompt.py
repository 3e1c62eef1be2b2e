"""Knowledge extraction prompts: rendering, chunking, and strict parsing of the answers.

Pure functions behind :mod:`~memctx.extraction.extract` (which runs the pipeline against a
store and a model). Two prompts:

- ``extract-knowledge``: the coding-agent extraction prompt of seed 000 (six fact types, the
  exclusions, a JSON array of ``{"type", "content", "context"}`` objects). The conversation is
  rendered as ``[role] text`` entries between ``<conversation>`` and ``</conversation>`` and
  split into chunks so that each call stays under a token budget. Every line of an entry after
  its first starts with two spaces (:data:`memctx.messages.CONTINUATION`), so a line inside a
  message (a tool output's ``[user] ...``) never reads as the header of another; each entry
  knows who wrote it (:class:`Entry`), for the fact's origin decided in code.
- ``decide-update``: Mem0-style choice between ADD / UPDATE / SUPERSEDE / NONE for one new fact
  against numbered candidate facts, answered as ``{"op": ..., "target": <number or null>}``.

Parsers are strict: a bare JSON value or one fenced block, nothing guessed out of prose.
Anything else raises :class:`ParseError`, whose message is what the repair request shows the
model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memctx.llm import task_marker
from memctx.messages import (
    BlockKind,
    RoleKind,
    estimate_tokens,
    indent_continuation,
    inspect_message,
    is_recalled_block,
    normalize_breaks,
    safe_label,
)
from memctx.store import Fact, FactType, UpdateOp
from memctx.text import cut_middle, split_text

__all__ = [
    "CONVERSATION_CLOSE",
    "CONVERSATION_OPEN",
    "MAX_CONTENT_CHARS",
    "TASK_DECIDE",
    "TASK_EXTRACT",
    "Entry",
    "ParseError",
    "ProposedFact",
    "chunk_conversation",
    "decision_messages",
    "extraction_messages",
    "parse_decision",
    "parse_facts",
    "prompt_overhead_tokens",
    "render_entries",
    "render_messages",
    "repair_messages",
]

TASK_EXTRACT = "extract-knowledge"
TASK_DECIDE = "decide-update"
CONVERSATION_OPEN = "<conversation>"
CONVERSATION_CLOSE = "</conversation>"

# The prompt asks for <= 200 characters; an item well past that is a pasted dump, not a fact.
MAX_CONTENT_CHARS = 400
_MAX_CONTEXT_CHARS = 200
# Tool traffic is bulk: the decision an agent took matters, not the file it read. A result
# keeps its head (what was run, the first lines) and its tail (the verdict, the last error).
_RESULT_HEAD, _RESULT_TAIL = 500, 300
_CALL_ARGS = 300
_CODE_LINES = 6  # lines of a fenced code block that stay in the rendering
_BAD_OUTPUT_CHARS = 8000  # of a malformed answer echoed back in a repair request

_SYSTEM_EXTRACT = """\
You extract durable knowledge from a coding agent's conversation, so that the agent can \
recall it after older messages are removed from its context.

Extract facts of these six types:
- decision: a choice that was made, and what it replaced. Example: "Use PostgreSQL instead \
of MySQL for the orders database"
- implementation: what was built and where (files, functions, endpoints, commands). \
Example: "Stripe webhook endpoint is POST /api/stripe/webhook in app/routes/billing.py"
- config: settings, hosts, ports, URLs, versions, environment variables, deploy targets. \
Example: "API deploys to the staging host via Docker Compose and listens on port 8080"
- issue: a bug, error or failure that matters. Example: "SSL certificate error \
(CERT_HAS_EXPIRED) when calling the payments API from staging"
- task_state: what is done, in progress, or not yet done. Example: "Refund logic is not yet \
implemented"
- architecture: how components are arranged and talk to each other. Example: "Event-driven: \
the orders service publishes to Redis pub/sub and the email worker consumes it"

Rules:
- One self-contained statement per fact, at most 200 characters. Name the files, \
identifiers, commands and values it is about; never write "it", "this file" or "the above".
- Do not extract greetings or small talk, temporary debugging steps (print statements, \
one-off commands), speculation or ideas that were not adopted, or questions.
- Do not copy raw file contents, code or logs: extract the decision or fact about them.
- Never include secrets: API keys, tokens, passwords, private keys, credentials. Text shown \
as [REDACTED:...] is a removed secret; leave such facts out.
- When a later message changes an earlier fact, extract only the latest state.
- "context": a few words on where the fact came from (who said it, which file or command).

Answer with only a JSON array and no other text, for example:
[{"type": "decision", "content": "Use PostgreSQL 16 instead of MySQL", "context": "user \
decision during database setup"}]
Answer [] when there is nothing worth keeping."""

_USER_EXTRACT = """\
Extract the facts from this conversation (part {part} of {parts}).
{open}
{conversation}
{close}"""

_SYSTEM_DECIDE = """\
You maintain a store of facts about a software project. Compare the NEW fact with the \
numbered EXISTING facts and choose one operation:
- ADD: none of the existing facts is about the same thing.
- UPDATE: existing fact N says the same thing and the new fact adds detail without \
contradicting it; the new text replaces N's.
- SUPERSEDE: the new fact contradicts or replaces existing fact N (a changed decision, value \
or status); N is kept only as history.
- NONE: existing fact N already says this.
There is no DELETE.
Answer with only a JSON object, for example {"op": "SUPERSEDE", "target": 2} or \
{"op": "ADD", "target": null}. "target" is the number of the existing fact for UPDATE, \
SUPERSEDE and NONE, and null for ADD."""

# Names a model may use for a type. Only unambiguous ones: "design" or "note" could be
# several types, so such items are dropped rather than filed under a guess.
_TYPE_SYNONYMS: dict[str, FactType] = {
    "bug": FactType.ISSUE,
    "error": FactType.ISSUE,
    "problem": FactType.ISSUE,
    "todo": FactType.TASK_STATE,
    "task": FactType.TASK_STATE,
    "status": FactType.TASK_STATE,
    "progress": FactType.TASK_STATE,
    "configuration": FactType.CONFIG,
    "setting": FactType.CONFIG,
    "impl": FactType.IMPLEMENTATION,
    "arch": FactType.ARCHITECTURE,
}

_FENCE_RE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
_CODE_FENCE_RE = re.compile(r"^([ \t]*)(```|~~~)[^\n]*\n(.*?)^\1\2[ \t]*$", re.DOTALL | re.M)
_OPS: frozenset[str] = frozenset({"ADD", "UPDATE", "SUPERSEDE", "NONE"})


class ParseError(ValueError):
    """A model answer is not the JSON the prompt asked for; the message says what is wrong."""


@dataclass(frozen=True)
class ProposedFact:
    """One valid item of an extraction answer (before the secret guard)."""

    type: FactType
    content: str
    context: str


# --- rendering and chunking -------------------------------------------------------------------


def _shrink_code(text: str) -> str:
    """Keep only the first lines of each fenced code block: the prose around it is the fact."""

    def shrink(m: re.Match[str]) -> str:
        lines = m.group(3).splitlines()
        if len(lines) <= _CODE_LINES:
            return m.group(0)
        kept = "\n".join(lines[:_CODE_LINES])
        fence = m.group(1) + m.group(2)
        return f"{fence}\n{kept}\n… [{len(lines) - _CODE_LINES} more lines of code] …\n{fence}"

    return _CODE_FENCE_RE.sub(shrink, text) if "```" in text or "~~~" in text else text


def _neutral(text: str) -> str:
    # Text that closes the conversation tag early would end the input for the model too.
    return text.replace(CONVERSATION_OPEN, "<conversation_>").replace(
        CONVERSATION_CLOSE, "</conversation_>"
    )


@dataclass(frozen=True)
class Entry:
    """One rendered piece of the conversation and who wrote it.

    Attributes:
        text: ``[role] text``; every line after the first starts with two spaces, so no line
            of a message reads as the header of another (a tool output's ``[user] ...``).
        origin: ``user``, ``assistant`` (its text and its tool calls), ``tool:<name>`` or
            ``tool`` (a tool's output), ``unknown``: decided from the message's role and the
            block's kind, never from the text.
    """

    text: str
    origin: str


def _entry(label: str, text: str, origin: str) -> Entry:
    return Entry(f"[{label}] {indent_continuation(normalize_breaks(text))}".rstrip(), origin)


def render_messages(messages: Iterable[object]) -> list[str]:
    """The texts of :func:`render_entries`."""
    return [entry.text for entry in render_entries(messages)]


def render_entries(messages: Iterable[object]) -> list[Entry]:
    """One ``[role] text`` entry per readable piece of the conversation.

    System messages (instructions, not session facts), recalled-context blocks (memctx's own
    output), thinking and images are left out. Tool calls keep their name and an excerpt of
    their arguments, tool results a head + tail excerpt, long fenced code blocks their first
    lines.
    """
    entries: list[Entry] = []
    names: dict[str, str] = {}  # call id -> tool name: Anthropic results carry only the id
    for message in messages:
        if is_recalled_block(message):
            continue
        info = inspect_message(message)
        if info.kind is RoleKind.SYSTEM:
            continue
        known = info.kind is not RoleKind.UNKNOWN
        role = info.kind.value if known else f"unknown: {safe_label(info.role or '?', '?')}"
        for block in info.blocks:
            text = block.text.strip()
            if block.kind is BlockKind.TEXT and text:
                is_tool = info.kind is RoleKind.TOOL
                label = "tool result" if is_tool else role
                trusted = known and role in ("user", "assistant")
                origin = "tool" if is_tool else role if trusted else "unknown"
                entries.append(_entry(label, _neutral(_shrink_code(text)), origin))
            elif block.kind is BlockKind.TOOL_CALL:
                if block.tool_id and block.tool_name:
                    names[block.tool_id] = block.tool_name
                args = cut_middle(text, _CALL_ARGS, 0) if text else ""
                label = f"assistant tool call: {safe_label(block.tool_name or '?', '?')}"
                entries.append(_entry(label, _neutral(args), "assistant"))
            elif block.kind is BlockKind.TOOL_RESULT and text:
                label = "tool error" if block.is_error else "tool result"
                tool = safe_label(block.tool_name or names.get(block.tool_id or "", ""), "")
                name = f": {tool}" if tool else ""
                body = cut_middle(text, _RESULT_HEAD, _RESULT_TAIL)
                origin = f"tool:{tool}" if tool else "tool"
                entries.append(_entry(f"{label}{name}", _neutral(body), origin))
    return entries


def chunk_conversation(entries: Sequence[str], budget_tokens: int) -> list[str]:
    """Pack rendered entries, in order, into texts of at most ``budget_tokens`` each.

    Budgets are in :func:`~memctx.messages.estimate_tokens` units (``ceil(chars / 3)``), so
    the character limit is exact. An entry larger than the budget is cut with
    :func:`memctx.text.split_text` (at line breaks; inside a line only when that line alone is
    over the budget) and its pieces are packed like entries.

    Raises:
        ValueError: ``budget_tokens`` is below 1.
    """
    if budget_tokens < 1:
        raise ValueError(f"chunk budget must be at least 1 token, got {budget_tokens}")
    limit = budget_tokens * 3
    chunks: list[str] = []
    current = ""
    for entry in entries:
        for piece in split_text(entry, budget_tokens):
            if current and len(current) + 1 + len(piece) > limit:
                chunks.append(current)
                current = piece
            else:
                current = f"{current}\n{piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks


# --- prompts ----------------------------------------------------------------------------------


def extraction_messages(conversation: str, part: int = 1, parts: int = 1) -> list[dict[str, Any]]:
    """The system + user messages that ask for the facts of one conversation chunk."""
    user = _USER_EXTRACT.format(
        part=part,
        parts=parts,
        open=CONVERSATION_OPEN,
        conversation=conversation,
        close=CONVERSATION_CLOSE,
    )
    return [
        {"role": "system", "content": f"{task_marker(TASK_EXTRACT)}\n{_SYSTEM_EXTRACT}"},
        {"role": "user", "content": user},
    ]


def prompt_overhead_tokens() -> int:
    """Estimated tokens of the extraction prompt around the conversation text."""
    return sum(estimate_tokens(str(m["content"])) for m in extraction_messages("", 999, 999))


def decision_messages(
    new_type: str, new_content: str, candidates: Sequence[Fact]
) -> list[dict[str, Any]]:
    """The system + user messages that ask how a new fact relates to numbered candidates."""
    lines = [f"NEW fact: [{new_type}] {new_content}", "", "EXISTING facts:"]
    lines += [f"{i}. [{f.type.value}] {f.content}" for i, f in enumerate(candidates, start=1)]
    return [
        {"role": "system", "content": f"{task_marker(TASK_DECIDE)}\n{_SYSTEM_DECIDE}"},
        {"role": "user", "content": "\n".join(lines)},
    ]


def repair_messages(
    messages: Sequence[Mapping[str, Any]], bad_output: str, error: str, expected: str
) -> list[dict[str, Any]]:
    """The original prompt, the model's malformed answer, and a request for the fixed JSON."""
    bad = bad_output if len(bad_output) <= _BAD_OUTPUT_CHARS else bad_output[:_BAD_OUTPUT_CHARS]
    request = (
        f"Your answer could not be used: {error}. Reply again with only {expected}, "
        "no prose and no code fence."
    )
    return [
        *(dict(m) for m in messages),
        {"role": "assistant", "content": bad},
        {"role": "user", "content": request},
    ]


# --- parsing ----------------------------------------------------------------------------------


def _load_json(text: str) -> Any:
    stripped = (text or "").strip()
    if not stripped:
        raise ParseError("the answer is empty")
    if not stripped.startswith(("[", "{")) and (fence := _FENCE_RE.search(stripped)):
        stripped = fence.group(1).strip()
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None


def _fact_type(value: object) -> FactType | None:
    if not isinstance(value, str):
        return None
    name = value.strip().lower().replace("-", "_").replace(" ", "_")
    if name in FactType._value2member_map_:
        return FactType(name)
    if name.endswith("s") and name[:-1] in FactType._value2member_map_:  # "decisions"
        return FactType(name[:-1])
    return _TYPE_SYNONYMS.get(name)


def _item(value: object) -> ProposedFact | None:
    """One answer item, or None when it is not a usable fact."""
    if not isinstance(value, Mapping):
        return None
    kind, content, context = (
        _fact_type(value.get("type")),
        value.get("content"),
        value.get("context"),
    )
    if context is None:
        context = ""
    if kind is None or not isinstance(content, str) or not isinstance(context, str):
        return None
    content, context = " ".join(content.split()), " ".join(context.split())
    if not content or len(content) > MAX_CONTENT_CHARS:
        return None
    return ProposedFact(kind, content, context[:_MAX_CONTEXT_CHARS])


def parse_facts(text: str) -> tuple[list[ProposedFact], int]:
    """Parse an extraction answer into valid facts and the number of items dropped.

    Accepted shapes: a JSON array of items, an object whose ``"facts"`` is such an array, or
    either inside one fenced code block. An item needs a known ``type`` (or an unambiguous
    synonym such as ``bug`` or ``todo``), non-blank string ``content`` of at most
    :data:`MAX_CONTENT_CHARS` characters, and a string or missing ``context``; any other item
    is dropped and counted, the rest are kept.

    Raises:
        ParseError: the answer is not one of the accepted shapes.
    """
    data = _load_json(text)
    if isinstance(data, Mapping):
        if not isinstance(data.get("facts"), list):
            raise ParseError('expected a JSON array, or an object with a "facts" array')
        data = data["facts"]
    if not isinstance(data, list):
        raise ParseError(f"expected a JSON array, got a JSON {type(data).__name__}")
    facts = [f for f in map(_item, data) if f is not None]
    return facts, len(data) - len(facts)


def parse_decision(text: str, candidates: int) -> tuple[UpdateOp | None, int | None]:
    """Parse a ``decide-update`` answer into ``(op, 0-based candidate index)``.

    ``op`` is None for DELETE, which memctx never carries out (the caller treats it as NONE).
    UPDATE and SUPERSEDE need a target in ``1..candidates``; NONE may name one; ADD's target
    is ignored.

    Raises:
        ParseError: not a JSON object with a known ``op`` and a valid ``target``.
    """
    data = _load_json(text)
    if not isinstance(data, Mapping):
        raise ParseError('expected a JSON object {"op": ..., "target": ...}')
    op = data.get("op")
    op = op.strip().upper() if isinstance(op, str) else op
    if op == "DELETE":
        return None, None
    if op not in _OPS:
        raise ParseError(f'"op" must be one of ADD, UPDATE, SUPERSEDE, NONE, got {op!r}')
    if op == "ADD":
        return "ADD", None
    target = data.get("target")
    if target is None and op == "NONE":
        return "NONE", None
    if isinstance(target, bool) or not isinstance(target, int) or not 1 <= target <= candidates:
        raise ParseError(
            f'"target" must be the number of an existing fact (1 to {candidates}) for {op}, '
            f"got {target!r}"
        )
    chosen: UpdateOp = "UPDATE" if op == "UPDATE" else "SUPERSEDE" if op == "SUPERSEDE" else "NONE"
    return chosen, target - 1
