"""The ``<recalled-context>`` message: knowledge facts and archived details under a hard cap.

Format (seed 000's sections; details grouped by the conversation's own dates)::

    <recalled-context source="memory-context">
    <knowledge>
    - [decision, from user] Use Stripe for payment processing
    - [issue, from tool bash] FAILED tests/test_webhook.py::test_replay
    </knowledge>
    <detail>
    [2026-02-10]
    user: where do we verify the webhook signature?
    assistant: Added signature verification in src/payment/webhook.ts ...
    …
    tool bash: FAILED tests/test_webhook.py::test_replay - AssertionError
      E   assert 3 == 4
    [2026-02-12]
    Caroline: ...
    </detail>
    </recalled-context>

Archived text is data (:mod:`memctx.messages.quoting`): nothing in it can close the block,
open a section, or forge a header, a gap marker or a speaker. Every item starts a line with
its provenance; the lines after the first of a multi-line item start with two spaces, which
no line memctx writes itself does; ``<`` and its look-alikes are encoded. A detail's label
says who wrote it, decided from the archived message's role (:func:`detail_label`): ``user``,
``assistant``, ``system``, ``tool <name>`` for a tool's output (never shown like a user
line), or a chat participant's ``name`` (sanitised, and never a role word, so a name cannot
pose as another role). A fact says its type and the kind of message it was extracted from
(:func:`knowledge_label`). :func:`parse_recall_block` reads a block back into its items.

The text is what the cap pays for, so the format spends it on evidence. A header names each
day once (``[YYYY-MM-DD]``, UTC, from the archived message's own timestamp; with the session
when the details come from more than one) instead of a ``[date time role]`` prefix on every
item: measured on LoCoMo, that prefix cost about a tenth of a short chat turn. For the same
reason a line does not repeat the day its header shows: an exported chat's ``[8 May 2023]
Caroline: ...`` under ``[2023-05-08]`` is shown as ``Caroline: ...``
(:attr:`RecallItem.shown_text`; a date with a time, or of another day, stays). Days appear in
chronological order and lines in archive order within a day, because a reader resolves
"yesterday" or a later correction only in order; ``…`` marks skipped messages between two
shown ones, so that two lines are not read as a reply to each other. Whitespace that carries
no meaning (trailing spaces, blank lines) is dropped; indentation is kept, code needs it.

Budget: ``cap = min(hardCapTokens, floor(window * 0.10))``
(:meth:`~memctx.config.MemoryContextConfig.recall_cap_tokens`). Knowledge gets
``knowledge_share`` (30%) of it first; details get the rest, including whatever knowledge
left unused (no facts: the whole cap). Candidates enter best score first, each kept while
its cost still fits, otherwise skipped for the next one (a greedy fill). A candidate is a
chunk, not a message: the chunks of one long tool output each compete on their own score, so
the chunk holding "297 tests, 11 failures" or a resolved version is shown even when another
chunk of the same output scored better (one chunk per message lost such answers on real
sessions). A message's other chunks compete on their own match with the query, not on the
lift the search's neighbour smoothing gives them from the best one (:func:`_collapse`), so
one relevant log does not fill the block with its neighbouring chunks. A chunk of a long
tool output comes as an excerpt (:mod:`memctx.recall.excerpt`: the lines that hold the
question's words, with their neighbours), its runs shown like the runs below. The chunks of one
message that are chosen are shown as one item: its label once, adjacent chunks (consecutive
archive keys) joined without the lines the chunker repeats between them, a gap marker line
between runs that are not adjacent, the next run's lines still continuation lines of the
same item. A detail longer than half the detail budget is
cut to that length (head kept, marked), so one huge chunk cannot crowd out every other hit.
The rendered block is then counted whole; while it is over the cap the lowest-scoring
chunk goes, then knowledge, then the block (the seed's ladder). The cap therefore holds for
the text as sent, framing included.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from typing import Any, Literal

from memctx.messages import (
    CONTINUATION,
    InfoCache,
    RoleKind,
    estimate_tokens,
    indent_continuation,
    is_compaction_summary,
    is_turn_start,
    leading_system_count,
    normalize_breaks,
    quote_text,
    recalled_block_body,
    recalled_block_text,
    role_kind,
    safe_label,
    unquote_text,
)
from memctx.text import leading_day

__all__ = [
    "GAP_MARKER",
    "RecallBlock",
    "RecallItem",
    "RecallPlacement",
    "RecalledEntry",
    "build_recall_block",
    "compact_text",
    "detail_label",
    "insert_recall",
    "knowledge_label",
    "message_source",
    "parse_recall_block",
    "recall_message",
]

GAP_MARKER = "…"
# Between two runs of one message's chunks: a gap line, and the next run's first line
# marked as the same item's continuation.
_INNER_GAP = f"\n{GAP_MARKER}\n{CONTINUATION}"
# An item's text when it shows several runs (:attr:`RecallItem.runs`), as the parser reads
# it back.
RUNS_JOIN = f"\n{GAP_MARKER}\n"
_CUT_MARK = " …[cut]"
_MAX_DETAIL_SHARE = 0.5  # of the detail budget, for any one detail
_FILL_PASSES = 6  # renders of the block to spend what the cost bounds left free
_TRAILING_WS_CHARS = " \t\r\f\v"
_TRAILING_WS = re.compile(f"[{_TRAILING_WS_CHARS}]+$", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n{2,}")
# Labels a chat participant's name may not take: it would pose as that role.
_ROLE_WORDS = frozenset(
    "user assistant system developer tool tools human ai model function unknown".split()
)
_TRUSTED_ORIGINS = ("user", "assistant")
_HEADER_RE = re.compile(r"\[\d{4}-\d{2}-\d{2}(?: session [^\]\n]*)?\]")
_FACT_RE = re.compile(r"- \[([^\]\n]+)\] (.*)")
_ITEM_RE = re.compile(r"([^\s:][^:\n]*): ?(.*)")


def detail_label(role: str, name: str | None = None) -> str:
    """Who wrote an archived message, as its recall label, decided from its ``role``.

    A tool's output (any tool-result message: OpenAI ``tool``, Pi ``toolResult``, an
    Anthropic user message carrying ``tool_result`` blocks, archived with role ``tool``) is
    ``tool <name>``, ``name`` being the tool's; ``system``; a user or assistant message with a
    ``name`` (a chat participant, as LoCoMo's speakers) shows the name, sanitised, unless it
    is a role word (``User``, ``tool bash``), which would pose as that role: then its role.
    """
    kind = role_kind({"role": role})
    if kind is RoleKind.TOOL:
        return f"tool {safe_label(name or '', '')}".rstrip()
    if kind is RoleKind.SYSTEM:
        return "system"
    base = kind.value if kind is not RoleKind.UNKNOWN else "unknown"
    if name:
        label = safe_label(name, "")
        first = label.split(" ", 1)[0].lower() if label else ""
        if label and first not in _ROLE_WORDS and not first.startswith("tool"):
            return label
    return base


def knowledge_label(fact_type: str, origin: str) -> str:
    """A fact's label: its type and the kind of message it was extracted from (``origin``:
    ``user``, ``assistant``, ``tool:<name>``; anything else, e.g. a fact stored before
    memctx recorded origins, is ``unknown``)."""
    if origin in _TRUSTED_ORIGINS:
        source = origin
    elif origin == "tool" or origin.startswith("tool:"):
        source = f"tool {safe_label(origin[5:], '')}".rstrip()
    else:
        source = "unknown"
    return f"{safe_label(fact_type)}, from {source}"


@dataclass(frozen=True)
class RecallItem:
    """One candidate for the block.

    Attributes:
        kind: ``"knowledge"`` (a fact) or ``"detail"`` (an archived message or chunk).
        text: The fact's content or the segment's text.
        score: Relevance; higher enters first and is dropped last.
        label: Its provenance: a fact's :func:`knowledge_label` (``decision, from user``), a
            detail's :func:`detail_label` (``user``, ``tool bash``, a speaker's name). Shown
            through :func:`memctx.messages.safe_label`, so any string is safe here.
        ref: Where it came from (fact id, segment id), for stats and tests.
        order: Where it sits in time: ``(timestamp, sequence)``, the sequence breaking ties
            between messages of the same moment. Ties in score are broken by it, never by
            ``ref``: ids are random UUIDs, and the same inputs must give the same block.
        source: The archived message a detail was cut from: the chunks of one long message
            share it (empty: a source of its own).
        session: The session a detail was archived in.
        seq: The detail's position in the archive (the raw store's key), when known: two
            details with consecutive positions are shown without a gap marker.
        seq_end: The position of the last chunk a shown item holds (``None``: ``seq``).
        runs: A shown item holding chunks of one message that are not all adjacent, or an
            excerpt of a long tool output (:func:`memctx.recall.excerpt.query_excerpt`):
            the text of each run of adjacent chunks or lines, shown with a gap marker
            between them (empty: the item is :attr:`text` alone). :attr:`text` is then the
            runs joined by :data:`RUNS_JOIN`, as :func:`parse_recall_block` reads them back.
        chunks: The refs of the chunks a shown item holds (empty: just :attr:`ref`).
        own: The detail's own match with the query, without what its neighbours lend it
            (the search's vector and keyword parts; ``None``: :attr:`score` is its own).
    """

    kind: Literal["knowledge", "detail"]
    text: str
    score: float
    label: str
    ref: str = ""
    order: tuple[float, int] = (0.0, 0)
    source: str = ""
    session: str = ""
    seq: int | None = None
    seq_end: int | None = None
    own: float | None = None
    runs: tuple[str, ...] = ()
    chunks: tuple[str, ...] = ()

    @cached_property
    def day(self) -> str:
        """``YYYY-MM-DD`` (UTC) of the item's time: the day header it is shown under."""
        return time.strftime("%Y-%m-%d", time.gmtime(self.order[0]))

    @cached_property
    def line(self) -> str:
        """The item as one entry of its section (computed once: the fill and the render
        read it several times)."""
        if self.kind == "knowledge":
            return f"- [{safe_label(self.label)}] {quote_text(' '.join(self.text.split()))}"
        if self.runs:  # the gap marker is memctx's own line: no continuation prefix
            shown = (indent_continuation(quote_text(compact_text(r))) for r in self.runs)
            return f"{safe_label(self.label)}: {_INNER_GAP.join(shown)}"
        text = indent_continuation(quote_text(compact_text(self.shown_text)))
        return f"{safe_label(self.label)}: {text}"

    @cached_property
    def shown_text(self) -> str:
        """A detail's :attr:`text` as its line shows it, before whitespace compaction:
        without a leading date that names only the day of its header (an exported chat's
        ``[8 May 2023] Caroline: ...`` under ``[2023-05-08]`` shows ``Caroline: ...``). An
        item of several runs (an excerpt, chunks with gaps) shows them as they are."""
        lead = None if self.runs else leading_day(self.text)
        if lead is None or lead[0] != self.day or not self.text[lead[1] :].strip():
            return self.text
        return self.text[lead[1] :]

    def cost(self, count: Callable[[str], int]) -> int:
        """Tokens of :attr:`line`, or a little more: a detail's text is counted before its
        blank lines and trailing spaces are dropped, which only shortens it. Choosing among
        many candidates then costs one count each, not one whitespace pass each."""
        if self.kind == "knowledge" or self.runs or "line" in self.__dict__:
            return count(self.line)
        return count(self.rough_line)

    @cached_property
    def rough_line(self) -> str:
        """:attr:`line` before whitespace compaction: what :meth:`cost` counts (computed
        once: the fill asks an item's cost several times)."""
        shown = indent_continuation(quote_text(normalize_breaks(self.shown_text)))
        return f"{safe_label(self.label)}: {shown}"


@dataclass(frozen=True)
class RecallBlock:
    """The built block: its text, what is in it and what it costs."""

    text: str
    knowledge: tuple[RecallItem, ...]
    details: tuple[RecallItem, ...]
    tokens: int
    cap: int
    dropped: int


def compact_text(text: str) -> str:
    """Drop whitespace that carries no meaning: trailing spaces, blank lines, both ends.
    Every kind of line break (``\\r``, ``\\u2028``, ...) becomes ``\\n``."""
    text = normalize_breaks(text)
    if "\n" not in text:
        return text.strip()  # one line, the usual case: no regex needed
    # Each regex pass only when it can match: a line ends with a space, a tab, ... (before a
    # line break or at the very end), a line is blank. A recalled tool output of thousands of
    # characters usually has neither, and the passes were most of the block's rendering.
    if text[-1] in _TRAILING_WS_CHARS or any(c + "\n" in text for c in _TRAILING_WS_CHARS):
        text = _TRAILING_WS.sub("", text)
    if "\n\n" in text:
        text = _BLANK_LINES.sub("\n", text)
    return text.strip()


def message_source(session_id: str, timestamp: float, turn: int | None, role: str) -> str:
    """The archived message a segment belongs to, from what the store keeps of it.

    The archive writes every chunk of one message with the same session, time, turn and
    role; two messages archived in one call differ in their turn. Without a turn (segments
    added by other callers) there is no telling, so the segment is its own source.
    """
    return "" if turn is None else f"{session_id}|{timestamp!r}|{turn}|{role}"


def _by_score(item: RecallItem) -> tuple[float, tuple[float, int], str]:
    """Best first; among equal scores the earlier item, then by text (deterministic)."""
    return (-item.score, item.order, item.text)


def _cut(item: RecallItem, max_tokens: int, count: Callable[[str], int]) -> RecallItem | None:
    """``item`` with its text shortened to about ``max_tokens`` (head kept); ``None`` when
    not even one character of it fits."""
    if item.cost(count) <= max_tokens or count(item.line) <= max_tokens:
        return item
    # An excerpt's runs are cut as one text (its gap markers become plain lines of it).
    item = dataclasses.replace(item, runs=())
    text = compact_text(item.text)
    lo, hi = 0, len(text)
    while lo < hi:  # longest head that fits, by bisection on characters
        mid = (lo + hi + 1) // 2
        if count(dataclasses.replace(item, text=text[:mid] + _CUT_MARK).line) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    head = text[:lo].rstrip()
    return dataclasses.replace(item, text=head + _CUT_MARK) if head else None


def _collapse(details: Sequence[RecallItem], per_source: int | None) -> list[RecallItem]:
    """At most ``per_source`` details per source (``None``: all), best first.

    A message's best chunk competes on its score. Its other chunks compete on their own
    match with the query (:attr:`RecallItem.own`) when that is lower: the search lifts each
    chunk by its neighbours' scores, and a chunk's neighbours are mostly its own message's
    other chunks, so every chunk of a relevant long output would otherwise score like its
    best one and a single log could fill the block.
    """
    seen: dict[str, int] = {}
    out = []
    for item in sorted(details, key=_by_score):
        if item.source:
            seen[item.source] = seen.get(item.source, 0) + 1
            if per_source is not None and seen[item.source] > per_source:
                continue
            if seen[item.source] > 1 and item.own is not None and item.own < item.score:
                item = dataclasses.replace(item, score=item.own)
        out.append(item)
    return sorted(out, key=_by_score)


def _without_overlap(before: str, after: str) -> str:
    """``after`` without the whole lines it repeats from the end of ``before``.

    The archive's chunker (:func:`memctx.text.chunk_text`) makes consecutive chunks of one
    message share a few whole lines; shown together, the shared lines would be paid twice.
    The longest run of ``before``'s last lines that ``after`` opens with is dropped (none
    when ``after`` does not open with a suffix of whole lines of ``before``, as after a
    line too long for one chunk, which is cut without overlap).
    """
    start = 0
    while True:  # each line start of ``before``, earliest (the longest suffix) first
        tail = before[start:]
        if after.startswith(tail) and (len(after) == len(tail) or after[len(tail)] == "\n"):
            return after[len(tail) + 1 :]
        brk = before.find("\n", start)
        if brk < 0:
            return after
        start = brk + 1


def _merged(chunks: Sequence[RecallItem]) -> RecallItem:
    """Chunks of one archived message, in archive order, as one item: its label once, the
    runs of adjacent chunks joined without their overlap, a gap marker between runs. A
    chunk cut to the detail share ends its run (what follows its cut is not shown)."""
    runs: list[str] = list(chunks[0].runs[:-1])
    current = chunks[0].runs[-1] if chunks[0].runs else chunks[0].text
    for before, item in pairwise(chunks):
        whole = not before.runs and not item.runs  # an excerpt joins no neighbour
        if whole and _adjacent(before, item) and not before.text.endswith(_CUT_MARK):
            rest = _without_overlap(before.text, item.text)
            current = f"{current}\n{rest}" if rest else current
        else:
            runs.append(current)
            runs.extend(item.runs[:-1])
            current = item.runs[-1] if item.runs else item.text
    runs.append(current)
    shown = [run for run in map(compact_text, runs) if run] or [""]
    first = chunks[0]
    return dataclasses.replace(
        first,
        text=RUNS_JOIN.join(shown),
        score=max(c.score for c in chunks),
        seq_end=chunks[-1].seq_end if chunks[-1].seq_end is not None else chunks[-1].seq,
        runs=tuple(shown) if len(shown) > 1 else (),
        chunks=tuple(c.ref for c in chunks),
    )


def _shown(
    details: Sequence[RecallItem], memo: dict[tuple[int, ...], RecallItem] | None = None
) -> list[RecallItem]:
    """The chosen details as the block shows them: the chunks of one archived message (one
    ``source``) as one item (:func:`_merged`), every other detail as it is. ``memo`` keeps
    merged items by their chunks' identities: a build renders its block several times, and
    an item made once keeps its rendered line."""
    by_source: dict[str, list[RecallItem]] = {}
    out: list[RecallItem] = []
    for item in sorted(details, key=_in_archive_order):
        if item.source:
            by_source.setdefault(item.source, []).append(item)
        else:
            out.append(item)
    for chunks in by_source.values():
        if len(chunks) == 1:
            out.append(chunks[0])
            continue
        key = tuple(map(id, chunks))
        merged = memo.get(key) if memo is not None else None
        if merged is None:
            merged = _merged(chunks)
            if memo is not None:
                memo[key] = merged
        out.append(merged)
    return sorted(out, key=_in_archive_order)


def _in_archive_order(item: RecallItem) -> tuple[tuple[float, int], str]:
    return (item.order, item.text)


def _render_details(details: Sequence[RecallItem]) -> str:
    """Shown details (:func:`_shown`) grouped under one header per (session, day),
    chronological, gaps marked."""
    if not details:
        return ""
    sessions = {d.session for d in details}
    groups: dict[tuple[str, str], list[RecallItem]] = {}
    for item in details:
        groups.setdefault((item.session, item.day), []).append(item)
    out: list[str] = []
    for group, items in sorted(groups.items(), key=lambda g: (g[1][0].order, g[0])):
        out.append(_header(group, len(sessions) > 1))
        for i, item in enumerate(items):
            if i and not _adjacent(items[i - 1], item):
                out.append(GAP_MARKER)
            out.append(item.line)
    return "\n".join(out)


def _adjacent(before: RecallItem, after: RecallItem) -> bool:
    """Whether ``after`` comes right after ``before`` in the archive (consecutive keys)."""
    end = before.seq_end if before.seq_end is not None else before.seq
    return end is not None and after.seq is not None and after.seq - end == 1


def _render(
    knowledge: Sequence[RecallItem],
    details: Sequence[RecallItem],
    memo: dict[tuple[int, ...], RecallItem] | None = None,
) -> str:
    parts = []
    if knowledge:
        ordered = sorted(knowledge, key=_by_score)
        parts += ["<knowledge>", *(k.line for k in ordered), "</knowledge>"]
    if details:
        parts += ["<detail>", _render_details(_shown(details, memo)), "</detail>"]
    return recalled_block_text("\n".join(parts))


def _header(group: tuple[str, str], multi: bool) -> str:
    session, day = group
    return f"[{day} session {safe_label(session)}]" if multi else f"[{day}]"


def _fill_details(
    candidates: Sequence[RecallItem],
    budget: int,
    count: Callable[[str], int],
    *,
    chosen: list[RecallItem],
    days: set[tuple[str, str]],
    multi: bool,
) -> None:
    """Greedy fill of ``budget``, best first, into ``chosen``. An item costs its line, a
    possible gap marker and, for a day not shown yet, its header: an upper bound of what it
    adds to the rendered section."""
    gap = count(GAP_MARKER) + 1
    used = 0
    taken = {id(item) for item in chosen}
    for item in candidates:
        if id(item) in taken:
            continue
        group = (item.session, item.day)
        cost = item.cost(count) + 1 + gap
        if group not in days:
            cost += count(_header(group, multi)) + 1
        if used + cost <= budget:
            chosen.append(item)
            days.add(group)
            used += cost


def build_recall_block(
    knowledge: Sequence[RecallItem],
    details: Sequence[RecallItem],
    cap_tokens: int,
    *,
    knowledge_share: float = 0.3,
    count: Callable[[str], int] = estimate_tokens,
    per_source: int | None = None,
) -> RecallBlock | None:
    """Choose and render what fits; ``None`` when nothing does (or nothing was found).

    Args:
        knowledge: Candidate facts (``kind="knowledge"``).
        details: Candidate archived messages (``kind="detail"``).
        cap_tokens: The hard cap for the whole block, framing included.
        knowledge_share: Share of the cap reserved for knowledge first.
        count: Token counter for text (the runtime's estimate or exact counter).
        per_source: Most chunks of one archived message shown (the best-scoring ones;
            ``None``: no limit, each chunk competes on its own score). The chunks of one
            message chosen are shown as one item (:func:`_merged`).
    """
    if cap_tokens <= 0 or not (knowledge or details):
        return None
    room = max(cap_tokens - count(_render([], [])) - 2, 0)
    kept_k: list[RecallItem] = []
    used_k = 0
    # The share is for the facts themselves; their section's tags come off the details.
    for item in sorted(knowledge, key=_by_score):
        cost = count(item.line) + 1
        if used_k + cost <= int(room * knowledge_share):
            kept_k.append(item)
            used_k += cost
    if kept_k:
        used_k += count("<knowledge>\n</knowledge>\n") + 1
    d_budget = room - used_k
    cut_to = max(int(d_budget * _MAX_DETAIL_SHARE), 1)
    cut = (_cut(d, cut_to, count) for d in _collapse(details, per_source))
    candidates = [d for d in cut if d is not None]
    by_score: list[RecallItem] = []
    memo: dict[tuple[int, ...], RecallItem] = {}  # merged items, by their chunks
    days: set[tuple[str, str]] = set()
    multi = len({c.session for c in candidates}) > 1
    frame = count("<detail>\n</detail>\n") + 1
    _fill_details(candidates, d_budget - frame, count, chosen=by_score, days=days, multi=multi)
    # Each cost was an upper bound (a gap marker per item, a newline per line): what the
    # rendered block leaves free goes to the next candidates, until nothing more fits.
    for _ in range(_FILL_PASSES):
        before = len(by_score)
        slack = cap_tokens - count(_render(kept_k, by_score, memo))
        _fill_details(candidates, slack, count, chosen=by_score, days=days, multi=multi)
        if len(by_score) == before:
            break
    by_score.sort(key=_by_score)
    dropped = len(knowledge) - len(kept_k) + len(details) - len(by_score)
    while True:
        text = _render(kept_k, by_score, memo)
        tokens = count(text)
        if tokens <= cap_tokens and (kept_k or by_score):
            shown = tuple(_shown(by_score, memo))
            return RecallBlock(text, tuple(kept_k), shown, tokens, cap_tokens, dropped)
        if by_score:
            by_score.pop()  # the lowest-scoring detail goes first
            dropped += 1
        elif kept_k and tokens > cap_tokens:
            kept_k.pop()
            dropped += 1
        else:
            return None


def recall_message(block: RecallBlock, like: Sequence[Any] = ()) -> dict[str, Any]:
    """The block as a ``role: "user"`` message shaped like the caller's messages.

    Gemini-shaped conversations (``parts`` instead of ``content``) get a ``parts`` message;
    everything else a plain string ``content``, which every other supported format accepts.
    """
    gemini = any(isinstance(m, dict) and "parts" in m and "content" not in m for m in like)
    if gemini:
        return {"role": "user", "parts": [{"text": block.text}]}
    return {"role": "user", "content": block.text}


@dataclass(frozen=True)
class RecalledEntry:
    """One item read back from a block by :func:`parse_recall_block`.

    Attributes:
        kind: ``"knowledge"`` or ``"detail"``.
        label: The provenance the block gives it (``decision, from user``, ``tool bash``).
        text: Its text, decoded (a cut detail ends with ``" …[cut]"``).
        header: The day header a detail is shown under (``""`` for a fact).
    """

    kind: Literal["knowledge", "detail"]
    label: str
    text: str
    header: str = ""


def parse_recall_block(text: str) -> list[RecalledEntry]:
    """The items of a block :func:`build_recall_block` wrote, in the order shown.

    Raises:
        ValueError: ``text`` is not such a block (no exact frame, a line that is no part of
            the format, sections out of order), naming the line.
    """
    body = recalled_block_body(text)
    if body is None:
        raise ValueError("not a recall block: the text lacks memctx's exact frame")
    entries: list[RecalledEntry] = []
    section = ""
    done: list[str] = []
    header = ""
    lines: list[str] = []  # the open detail's lines

    def close_detail() -> None:
        if lines:
            last = entries[-1]
            entries[-1] = dataclasses.replace(last, text=unquote_text("\n".join(lines)))
            lines.clear()

    gap = False  # a gap marker was read: inside the open item if a continuation follows
    for number, line in enumerate(body.split("\n") if body else [], start=2):
        if line in ("<knowledge>", "<detail>") and not section and line[1:-1] not in done:
            if done and line == "<knowledge>":
                raise ValueError(f"line {number}: <knowledge> after <detail>")
            section = line[1:-1]
            continue
        if section == "detail" and line.startswith(CONTINUATION) and lines:
            if gap:  # a gap between two runs of one message's chunks
                lines.append(GAP_MARKER)
                gap = False
            lines.append(line[len(CONTINUATION) :])
            continue
        if gap:
            close_detail()
            gap = False
        if section and line == f"</{section}>":
            close_detail()
            done.append(section)
            section = ""
            continue
        if section == "knowledge" and (fact := _FACT_RE.fullmatch(line)):
            entries.append(RecalledEntry("knowledge", fact[1], unquote_text(fact[2])))
            continue
        if section == "detail":
            if line == GAP_MARKER and lines:
                gap = True
                continue
            if _HEADER_RE.fullmatch(line) or line == GAP_MARKER:
                close_detail()
                header = line if line != GAP_MARKER else header
                if header:
                    continue
            elif header and (item := _ITEM_RE.fullmatch(line)):
                close_detail()
                entries.append(RecalledEntry("detail", item[1], "", header))
                lines.append(item[2])
                continue
        raise ValueError(f"line {number} of the recall block is no part of its format: {line!r}")
    if section:
        raise ValueError(f"the <{section}> section is not closed")
    return entries


RecallPlacement = Literal["after-system", "before-request", "end"]


def insert_recall(
    messages: list[dict[str, Any]],
    block: dict[str, Any] | None,
    infos: InfoCache,
    placement: RecallPlacement = "after-system",
) -> list[dict[str, Any]]:
    """``messages`` with the recall ``block`` at ``placement``; ``messages`` itself when
    there is no block.

    ``after-system`` (seed 000's place): after the leading system messages and a compaction
    summary. ``before-request``: just before the latest user request (a user message that is
    not a tool result, a compaction summary or a recalled block), never between a tool call
    and its result; after the system messages when there is none. ``end``: after the last
    message. The block changes every turn and invalidates the cached prefix from where it
    sits, so the later it sits, the more of each request is read from the cache.
    """
    if block is None:
        return messages
    at = leading_system_count(messages, infos)
    if at < len(messages) and is_compaction_summary(messages[at]):
        at += 1
    if placement == "end":
        at = len(messages)
    elif placement == "before-request":
        at = next(
            (i for i in range(len(messages) - 1, at - 1, -1) if is_turn_start(messages[i], infos)),
            at,
        )
    return [*messages[:at], block, *messages[at:]]
