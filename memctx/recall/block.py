"""The ``<recalled-context>`` message: knowledge facts and raw details under a hard token cap.

Format (seed 000, "Recall Injection Format")::

    <recalled-context source="memory-context">

    <knowledge>
    - [decision] Use Stripe for payment processing
    </knowledge>

    <detail>
    [2026-02-10 14:31 assistant] Added signature verification in src/payment/webhook.ts ...
    </detail>

    </recalled-context>

Budget: ``cap = min(hardCapTokens, floor(window * 0.10))`` (:meth:`MemoryContextConfig.
recall_cap_tokens`). Knowledge gets ``knowledge_share`` (30%) of it, details the rest plus
whatever knowledge left unused: a demanding user wants the cap spent on evidence, not left
empty. Items enter best score first. A detail longer than half the detail budget is cut to
that length (head kept, marked), so one huge tool output cannot crowd out every other hit.
The rendered block is then counted whole; while it is over the cap the lowest-scoring detail
is dropped, then the block falls back to knowledge only, then to nothing (the seed's ladder).
The cap therefore holds for the text as sent, framing included.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memctx.messages import (
    RECALLED_CONTEXT_TAG,
    InfoCache,
    estimate_tokens,
    is_compaction_summary,
    leading_system_count,
)

__all__ = [
    "RecallBlock",
    "RecallItem",
    "build_recall_block",
    "detail_label",
    "insert_recall",
    "message_source",
    "recall_message",
]

_OPEN = f'{RECALLED_CONTEXT_TAG} source="memory-context">'
_CLOSE = "</recalled-context>"
_CUT_MARK = " …[cut]"
_MAX_DETAIL_SHARE = 0.5  # of the detail budget, for any one detail


@dataclass(frozen=True)
class RecallItem:
    """One candidate for the block.

    Attributes:
        kind: ``"knowledge"`` (a fact) or ``"detail"`` (an archived message).
        text: The fact's content or the segment's text.
        score: Relevance; higher enters first and is dropped last.
        label: ``decision`` for a fact; ``2026-02-10 14:31 assistant`` for a detail.
        ref: Where it came from (fact id, segment id), for stats and tests.
        order: Where it sits in time: ``(timestamp, sequence)``, the sequence breaking ties
            between messages archived at the same moment (parallel tool results). Ties in
            score and chronology are broken by it, never by ``ref``: ids are random UUIDs,
            and the same inputs must give the same block.
        source: The archived message a detail was cut from: the chunks of one long message
            share it (empty: a source of its own).
    """

    kind: Literal["knowledge", "detail"]
    text: str
    score: float
    label: str
    ref: str = ""
    order: tuple[float, int] = (0.0, 0)
    source: str = ""

    def render(self) -> str:
        if self.kind == "knowledge":
            return f"- [{self.label}] {_one_line(self.text)}"
        return f"[{self.label}] {self.text.strip()}"


@dataclass(frozen=True)
class RecallBlock:
    """The built block: its text, what is in it and what it costs."""

    text: str
    knowledge: tuple[RecallItem, ...]
    details: tuple[RecallItem, ...]
    tokens: int
    cap: int
    dropped: int


def message_source(session_id: str, timestamp: float, turn: int | None, role: str) -> str:
    """The archived message a segment belongs to, from what the store keeps of it.

    The archive writes every chunk of one message with the same session, time, turn and
    role; two messages archived in one call differ in their turn. Without a turn (segments
    added by other callers) there is no telling, so the segment is its own source.
    """
    return "" if turn is None else f"{session_id}|{timestamp!r}|{turn}|{role}"


def detail_label(timestamp: float | None, role: str) -> str:
    """``YYYY-MM-DD HH:MM role`` in UTC (the seed's detail prefix); role alone without time."""
    if timestamp is None:
        return role
    stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime(timestamp))
    return f"{stamp} {role}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cut(item: RecallItem, max_tokens: int, count: Callable[[str], int]) -> RecallItem:
    """``item`` with its text shortened to about ``max_tokens`` (head kept)."""
    if count(item.text) <= max_tokens:
        return item
    lo, hi = 0, len(item.text)
    while lo < hi:  # longest head that fits, by bisection on characters
        mid = (lo + hi + 1) // 2
        if count(item.text[:mid] + _CUT_MARK) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    head = item.text[:lo].rstrip()
    return dataclasses.replace(item, text=head + _CUT_MARK)


def _take(
    items: Sequence[RecallItem], budget: int, count: Callable[[str], int]
) -> tuple[list[RecallItem], int]:
    """Best-first greedy fill of ``budget``; returns the chosen items and the tokens used."""
    chosen: list[RecallItem] = []
    used = 0
    for item in sorted(items, key=_by_score):
        cost = count(item.render()) + 1  # + the newline joining it
        if used + cost <= budget:
            chosen.append(item)
            used += cost
    return chosen, used


def _collapse(details: Sequence[RecallItem], per_source: int) -> list[RecallItem]:
    """At most ``per_source`` details per source, the best-scoring ones."""
    seen: dict[str, int] = {}
    out = []
    for item in sorted(details, key=_by_score):
        if item.source:
            seen[item.source] = seen.get(item.source, 0) + 1
            if seen[item.source] > per_source:
                continue
        out.append(item)
    return out


def _by_score(item: RecallItem) -> tuple[float, tuple[float, int], str]:
    """Best first; among equal scores the earlier item, then by text (deterministic)."""
    return (-item.score, item.order, item.text)


def _render(knowledge: Sequence[RecallItem], details: Sequence[RecallItem]) -> str:
    parts = [_OPEN, ""]
    if knowledge:
        parts += ["<knowledge>", *(k.render() for k in knowledge), "</knowledge>", ""]
    if details:
        parts += ["<detail>", "\n\n".join(d.render() for d in details), "</detail>", ""]
    parts.append(_CLOSE)
    return "\n".join(parts)


def build_recall_block(
    knowledge: Sequence[RecallItem],
    details: Sequence[RecallItem],
    cap_tokens: int,
    *,
    knowledge_share: float = 0.3,
    count: Callable[[str], int] = estimate_tokens,
    per_source: int = 1,
) -> RecallBlock | None:
    """Choose and render what fits; ``None`` when nothing does (or nothing was found).

    Args:
        knowledge: Candidate facts (``kind="knowledge"``).
        details: Candidate archived messages (``kind="detail"``).
        cap_tokens: The hard cap for the whole block, framing included.
        knowledge_share: Share of the cap reserved for knowledge first.
        count: Token counter for text (the runtime's estimate or exact counter).
        per_source: Most chunks of one archived message shown (the best-scoring ones). The
            chunks of a long tool output overlap and resemble each other, and neighbour
            smoothing lifts them together: uncollapsed, one file can fill the whole block.
    """
    if cap_tokens <= 0 or not (knowledge or details):
        return None
    frame = count(_render([], [])) + 8  # tags + section headers, rounded up
    room = max(cap_tokens - frame, 0)
    k_budget = int(room * knowledge_share)
    kept_k, used_k = _take(knowledge, k_budget, count)
    d_budget = room - used_k
    cut_to = max(int(d_budget * _MAX_DETAIL_SHARE), 1)
    trimmed = [_cut(d, cut_to, count) for d in _collapse(details, per_source)]
    kept_d, _ = _take(trimmed, d_budget, count)
    # Details in conversation order read better than by score: keep score order only for
    # dropping.
    by_score = sorted(kept_d, key=_by_score)
    dropped = len(knowledge) - len(kept_k) + len(details) - len(kept_d)
    while True:
        shown = sorted(by_score, key=lambda i: (i.order, i.label, i.text))
        text = _render(kept_k, shown)
        tokens = count(text)
        if tokens <= cap_tokens and (kept_k or shown):
            return RecallBlock(text, tuple(kept_k), tuple(shown), tokens, cap_tokens, dropped)
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


def insert_recall(
    messages: list[dict[str, Any]], block: dict[str, Any] | None, infos: InfoCache
) -> list[dict[str, Any]]:
    """``messages`` with the recall ``block`` after the leading system messages and a
    compaction summary (seed 000's place for it); ``messages`` itself when there is none."""
    if block is None:
        return messages
    at = leading_system_count(messages, infos)
    if at < len(messages) and is_compaction_summary(messages[at]):
        at += 1
    return [*messages[:at], block, *messages[at:]]
