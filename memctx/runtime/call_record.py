"""What one ``on_context`` call did, as data: :class:`ContextCallRecord`.

:attr:`memctx.MemoryContext.last_call` holds the record of the latest call (``None`` before
the first) and :meth:`memctx.MemoryContext.stats` carries it as a plain dict under
``last_call``. It answers, for one call, the questions the cumulative counters cannot: how
large the context was before and after, which of the caller's messages were left out and by
which step, what was recalled (with scores and sizes) or why nothing was, and whether a
pairing repair, a cut or a fallback happened.

Every figure comes from what the hook already knows, and building the record never raises
into the hook (:class:`CallNotes` is filled step by step and frozen once; a failure while
freezing yields a record of the sizes alone).

Why a message was trimmed: :mod:`memctx.runtime.trimmed`; the exact count per step is in
:attr:`ContextCallRecord.trimmed_bm25` / ``trimmed_oldest`` / ``trimmed_pairing``.

Tool results that seed 003's pruning soft-trimmed or cleared in the copy sent are not
trimmed (they are still sent, shortened): their positions are in
:attr:`ContextCallRecord.pruned`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memctx.config import MemoryContextConfig
from memctx.messages import TokenCounter
from memctx.recall import RecallBlock, RecallItem
from memctx.text import redact
from memctx.trim import IntArray, TrimResult

from .trimmed import NO_TRIM, TrimmedMessage, TrimmedMessages, trim_layer

__all__ = [
    "PREVIEW_CHARS",
    "CallNotes",
    "ContextCallRecord",
    "RecallStatus",
    "RecalledItem",
    "fallback_record",
    "freeze_safely",
    "preview",
]

PREVIEW_CHARS = 120  # of a recalled item's text, and of the query, in the record

RecallStatus = Literal["inserted", "no_query", "no_match", "failed", "not_run"]
"""What became of recall in a call: a block was ``inserted``; the query was under three
characters (``no_query``); nothing cleared the relevance bar or fitted the cap
(``no_match``); the search failed and the turn went on without it (``failed``); the hook
failed before recall (``not_run``, on the fallback record)."""


@dataclass(frozen=True, slots=True)
class RecalledItem:
    """One item of the recall block inserted.

    Attributes:
        kind: ``"knowledge"`` (an extracted fact) or ``"detail"`` (an archived message or
            chunk of one).
        source: ``"knowledge"`` (the knowledge store), ``"archive"`` (the raw store) or
            ``"pending"`` (archived this call, not yet embedded: found by keywords alone).
        ref: The fact id or segment id (``pending:N`` for a pending one).
        score: Its relevance score (a detail's hybrid score; a fact's keyword score).
        tokens: Tokens of its line in the block.
        preview: The start of its text, whitespace collapsed, at most 120 characters.
    """

    kind: Literal["knowledge", "detail"]
    source: Literal["knowledge", "archive", "pending"]
    ref: str
    score: float
    tokens: int
    preview: str


@dataclass(frozen=True, slots=True)
class ContextCallRecord:
    """The structured account of one ``on_context`` call (module docs).

    Attributes:
        call: 1 for the engine's first ``on_context`` call, 2 for the next, …
        messages_in: Messages the caller passed.
        messages_out: Messages returned (to send).
        tokens_before: Estimated tokens of the caller's messages as passed.
        tokens_after: Estimated tokens of the messages returned, recall block included.
        query: The recall query (its last 120 characters; ``""`` when there was none).
        trim: ``"none"``; ``"smart"`` (over the safe limit, ranked against the query) or
            ``"forced"`` (over the window with a query too short to rank by).
        trimmed: The caller's messages left out, in their order.
        trimmed_bm25: How many smart trim's layer 2 removed.
        trimmed_oldest: How many layer 3 (oldest first) removed.
        trimmed_pairing: How many the trim's pairing repair dropped whole.
        dropped_recalled: Recall blocks of earlier calls taken out of the context (each
            call inserts its own).
        pruned: Positions (in the caller's list) of tool results sent soft-trimmed or
            cleared by ``contextPruning``.
        recall: What became of recall (:data:`RecallStatus`).
        recalled: The items of the block inserted, best first (empty without a block).
        recall_tokens: Tokens of the block inserted, as the message sent (0 without one).
        recall_candidates: Candidates the searches returned (facts, and details that
            cleared ``min_score``), before the cap chose among them.
        best_score: The best detail candidate's score (0.0 without any): with no fact, a
            block needs it to reach ``min_best_score``.
        min_score: The score each detail in a block must reach (``autoRecallMinScore``).
        min_best_score: The score the best detail must reach for a block without facts
            (``autoRecallMinBestScore``).
        pairing_repairs: Pairing problems repaired in the context sent: the violations the
            final check found and repaired, or the messages the trim's own repair dropped or
            edited.
        tool_results_cut: Oversized tool results cut to head and tail to fit the window.
        degraded: Parts that failed and were skipped while the call went on
            (``"archive"``, ``"recall"``).
        fallback: The hook failed and returned the caller's messages unchanged.
        error: The failure's type and message, when ``fallback`` or ``degraded``.
    """

    call: int
    messages_in: int
    messages_out: int
    tokens_before: int
    tokens_after: int
    query: str = ""
    trim: Literal["none", "smart", "forced"] = "none"
    trimmed: TrimmedMessages = NO_TRIM
    trimmed_bm25: int = 0
    trimmed_oldest: int = 0
    trimmed_pairing: int = 0
    dropped_recalled: int = 0
    pruned: tuple[int, ...] = ()
    recall: RecallStatus = "no_query"
    recalled: tuple[RecalledItem, ...] = ()
    recall_tokens: int = 0
    recall_candidates: int = 0
    best_score: float = 0.0
    min_score: float = 0.0
    min_best_score: float = 0.0
    pairing_repairs: int = 0
    tool_results_cut: int = 0
    degraded: tuple[str, ...] = ()
    fallback: bool = False
    error: str | None = None

    @property
    def recall_inserted(self) -> bool:
        """Whether a ``<recalled-context>`` block was inserted."""
        return self.recall == "inserted"

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: lists for tuples, dicts for the nested records."""
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name in ("trimmed", "recalled"):
                value = [_plain(item) for item in value]
            elif isinstance(value, tuple):
                value = list(value)
            out[field.name] = value
        out["recall_inserted"] = self.recall_inserted
        return out


def _plain(item: TrimmedMessage | RecalledItem) -> dict[str, Any]:
    return {field.name: getattr(item, field.name) for field in dataclasses.fields(item)}


def preview(text: str) -> str:
    """The start of ``text`` with every run of whitespace one space, at most
    :data:`PREVIEW_CHARS` characters (``…`` ends a cut one)."""
    # Flattening a prefix of the text gives a prefix of the flattened text (only its last
    # word may be cut short), so a long text, a recalled tool output of thousands of
    # characters, is flattened no further than the preview needs.
    head = " ".join(text[: 2 * PREVIEW_CHARS].split())
    if len(head) > PREVIEW_CHARS:
        return head[: PREVIEW_CHARS - 1] + "…"
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _query_preview(query: str, redact: Callable[[str], str] | None) -> str:
    """The query's tail as the record shows it: redacted over twice the length kept, so a
    secret that straddles the cut is still recognised whole."""
    tail = query[-2 * PREVIEW_CHARS :]
    if redact is not None:
        tail = redact(tail)
    return " ".join(tail.split())[-PREVIEW_CHARS:]


class CallNotes:
    """What one call did so far; the engine fills it step by step, :meth:`freeze` ends it.

    Args:
        call: The call's number (1 for the first).
        messages: The caller's list, as passed.
    """

    def __init__(self, call: int, messages: Sequence[object]) -> None:
        self.call = call
        self.messages = messages
        self.tokens_before = 0
        self.query = ""
        self.trim: Literal["none", "smart", "forced"] = "none"
        self.trimmed = NO_TRIM
        self.layers = (0, 0, 0)
        self.dropped_recalled = 0
        self.pruned: tuple[int, ...] = ()
        self.recall: RecallStatus = "no_query"
        self.block: RecallBlock | None = None
        self.recall_tokens = 0
        self.recall_candidates = 0
        self.best_score = 0.0
        self.pairing_repairs = 0
        self.tool_results_cut = 0
        self.degraded: list[str] = []
        self.error: str | None = None

    def read(
        self,
        tokens: int,
        recalled: int,
        sent: Sequence[object],
        originals: Mapping[int, Any],
        count: Callable[[Any], int],
    ) -> None:
        """The input as the hook read it: ``sent`` (the caller's messages, with pruned
        copies in place of ``originals``' values), ``tokens`` in all, ``recalled`` earlier
        recall blocks among it. Pruned copies' tokens are counted back to the caller's."""
        if originals:
            at = [i for i, m in enumerate(sent) if id(m) in originals]
            self.pruned = tuple(at)
            tokens += sum(count(originals[id(sent[i])]) - count(sent[i]) for i in at)
        self.tokens_before = tokens
        self.dropped_recalled = recalled

    def trimmed_by(
        self, result: TrimResult, positions: IntArray, tokens: IntArray, forced: bool
    ) -> None:
        """Smart trim removed ``result.trimmed``, at ``positions`` of the caller's list, of
        ``tokens`` each; ``forced``: only because the context was over the window."""
        layer = trim_layer(result, forced)
        self.trim = "forced" if layer == "forced" else "smart"
        counts = result.layer_counts
        self.layers = (counts.bm25, counts.oldest, counts.pairing)
        self.pairing_repairs = counts.pairing + counts.pairing_edited
        at: list[int] = positions.tolist()
        messages = self.messages
        self.trimmed = TrimmedMessages([messages[i] for i in at], at, tokens.tolist(), layer)

    def recalled(self, block: RecallBlock | None, candidates: int, best_score: float) -> None:
        """Recall ran: ``block`` is what it built (``None``: nothing cleared the bars or
        fit), from ``candidates``, the best detail scoring ``best_score``."""
        self.block = block
        self.recall_candidates = candidates
        self.best_score = best_score
        self.recall = "inserted" if block is not None else "no_match"

    def failed(self, part: str, error: str) -> None:
        """``part`` failed and the call went on without it."""
        self.degraded.append(part)
        self.error = error
        if part == "recall":
            self.recall = "failed"

    def freeze(
        self,
        out: Sequence[object],
        tokens_after: int,
        *,
        min_score: float,
        min_best_score: float,
        count_text: Callable[[str], int],
        redact: Callable[[str], str] | None = None,
    ) -> ContextCallRecord:
        """The record of the finished call; ``redact`` masks secrets in the query shown."""
        block = self.block
        recalled: tuple[RecalledItem, ...] = ()
        if block is not None:
            items = sorted((*block.knowledge, *block.details), key=lambda it: -it.score)
            recalled = tuple(_recalled(item, count_text) for item in items)
        bm25, oldest, pairing = self.layers
        return ContextCallRecord(
            call=self.call,
            messages_in=len(self.messages),
            messages_out=len(out),
            tokens_before=int(self.tokens_before),
            tokens_after=int(tokens_after),
            query=_query_preview(self.query, redact),
            trim=self.trim,
            trimmed=self.trimmed,
            trimmed_bm25=bm25,
            trimmed_oldest=oldest,
            trimmed_pairing=pairing,
            dropped_recalled=self.dropped_recalled,
            pruned=self.pruned,
            recall=self.recall,
            recalled=recalled,
            recall_tokens=self.recall_tokens if block is not None else 0,
            recall_candidates=self.recall_candidates,
            best_score=round(float(self.best_score), 6),
            min_score=float(min_score),
            min_best_score=float(min_best_score),
            pairing_repairs=self.pairing_repairs,
            tool_results_cut=self.tool_results_cut,
            degraded=tuple(self.degraded),
            error=self.error,
        )


def freeze_safely(
    notes: CallNotes,
    out: Sequence[object],
    tokens_after: int,
    config: MemoryContextConfig,
    counter: TokenCounter,
) -> tuple[ContextCallRecord, str | None]:
    """``notes.freeze(...)``, or, should that fail, a record of what is sure (sizes, the
    call's number) with the error: the second value (``None`` when all went well)."""
    try:
        record = notes.freeze(
            out,
            tokens_after,
            min_score=config.auto_recall_min_score,
            min_best_score=config.auto_recall_min_best_score,
            count_text=counter.count_text,
            redact=redact if config.redaction else None,
        )
    except Exception as exc:  # the record must never cost the turn
        error = f"record: {type(exc).__name__}: {exc}"
        record = ContextCallRecord(
            call=notes.call,
            messages_in=len(notes.messages),
            messages_out=len(out),
            tokens_before=int(notes.tokens_before),
            tokens_after=int(tokens_after),
            recall="not_run",
            error=error,
        )
        return record, error
    return record, None


def fallback_record(
    call: int, messages: object, error: str, count: Callable[[Any], int]
) -> ContextCallRecord:
    """The record of a call that failed and passed ``messages`` through unchanged."""
    size = len(messages) if isinstance(messages, list) else 0
    try:
        tokens = sum(count(m) for m in messages) if isinstance(messages, list) else 0
    except Exception:  # the input that broke the hook may break counting too
        tokens = 0
    return ContextCallRecord(
        call=call,
        messages_in=size,
        messages_out=size,
        tokens_before=tokens,
        tokens_after=tokens,
        recall="not_run",
        fallback=True,
        error=error,
    )


def _recalled(item: RecallItem, count_text: Callable[[str], int]) -> RecalledItem:
    if item.kind == "knowledge":
        source: Literal["knowledge", "archive", "pending"] = "knowledge"
    else:
        source = "pending" if item.ref.startswith("pending:") else "archive"
    return RecalledItem(
        item.kind,
        source,
        item.ref,
        round(float(item.score), 6),
        int(count_text(item.line)),
        # The preview flattens every run of whitespace, so compacting first (two regex
        # passes over the whole text, once per recalled item and turn) would change nothing.
        preview(item.text),
    )
