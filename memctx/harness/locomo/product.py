"""LoCoMo evidence recall through the product: what ``MemoryContext.on_context`` injects.

The other LoCoMo figures (:mod:`.methods`) rank turns with a search call and pack them into
a block the benchmark renders itself. An agent receives something else: the one
``<recalled-context>`` message that ``on_context`` inserts. This module measures that:

1. Each conversation is archived the way an agent's history is, through
   ``MemoryContext.on_before_compact``: one message per turn (``role`` user for the first
   speaker, assistant for the second, the speaker as ``name``, the session's date as its
   ``timestamp``), with knowledge extraction as configured (on by default: the offline
   extractor's facts then compete for the cap as they would in use). With ``dates="text"``
   the messages have neither ``name`` nor ``timestamp``: their text opens with both, as an
   exported chat log writes them (``[8 May 2023] Caroline: ...``), and the archive reads the
   date from the text (:func:`memctx.text.leading_date`).
2. Each question of categories 1-4 is asked as the last (and only) user message of a call
   to ``on_context``; evidence counts only when the evidence turn's text stands whole inside
   the ``<recalled-context>`` block (a detail cut to fit does not count).

The cap is ``hardCapTokens`` (2,000 by default, about what Mem0 injects per question), with
a window large enough (10x the cap) for the cap to be the limit.
"""

from __future__ import annotations

import re
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

from memctx.config import MemoryContextConfig
from memctx.messages import is_recalled_block, message_text
from memctx.retrieval import Embedder
from memctx.runtime import MemoryContext

from .data import Conversation, Turn
from .evaluate import RecallReport

__all__ = [
    "CATEGORIES",
    "DATES",
    "Dates",
    "conversation_messages",
    "evaluate_product",
    "recalled_turns",
    "turns_in",
]

Dates = Literal["timestamp", "text"]
DATES: tuple[Dates, ...] = ("timestamp", "text")  # where a message's date is: its field, its text
CATEGORIES = (1, 2, 3, 4)  # category 5 (adversarial) has no evidence to find
_SPACE = re.compile(r"\s+")
_RETENTION_DAYS = 3650


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _said(turn: Turn) -> str:
    return turn.said or turn.text


def conversation_messages(conv: Conversation, dates: Dates = "timestamp") -> list[dict[str, Any]]:
    """The conversation as a two-party chat in OpenAI's shape: the first speaker as ``user``,
    the second as ``assistant``.

    Args:
        conv: The conversation.
        dates: ``timestamp``: each message carries its speaker as ``name`` and its session's
            date as ``timestamp``. ``text``: neither; the text starts with both, as an
            exported chat log writes them (``[8 May 2023] Caroline: ...``), so whatever
            memctx knows of the time it reads from the text.
    """
    if dates not in DATES:
        raise ValueError(f"dates must be one of {', '.join(DATES)}, got {dates!r}")
    first = conv.speakers[0]
    messages: list[dict[str, Any]] = []
    for turn in conv.turns:
        role = "user" if turn.speaker == first else "assistant"
        if dates == "text":
            messages.append(
                {"role": role, "content": f"[{turn.date}] {turn.speaker}: {_said(turn)}"}
            )
        else:
            messages.append(
                {
                    "role": role,
                    "name": turn.speaker,
                    "content": _said(turn),
                    "timestamp": turn.timestamp,
                }
            )
    return messages


def recalled_turns(block: str, conv: Conversation) -> set[str]:
    """The dialogue ids of the turns whose whole line (``speaker: text``) stands in
    ``block``."""
    return turns_in(block, conv, speaker=True)


def turns_in(text: str, conv: Conversation, *, speaker: bool) -> set[str]:
    """The dialogue ids of the turns whose whole text stands in ``text``: as a
    ``speaker: text`` line (the recall block) or the text alone (a search hit)."""
    flat = _flat(text)
    return {
        turn.dia_id
        for turn in conv.turns
        if _flat(f"{turn.speaker}: {_said(turn)}" if speaker else _said(turn)) in flat
    }


def _block(messages: Sequence[dict[str, Any]]) -> str:
    return next((message_text(m) for m in messages if is_recalled_block(m)), "")


def evaluate_product(
    conversations: Sequence[Conversation],
    embedder: Embedder,
    *,
    name: str,
    cap: int = 2000,
    overrides: dict[str, Any] | None = None,
    dates: Dates = "timestamp",
) -> RecallReport:
    """Evidence recall of the ``<recalled-context>`` block ``on_context`` builds per question.

    Args:
        conversations: LoCoMo conversations (:func:`~.data.load_locomo`).
        embedder: The embedder every conversation's store uses (shared: the transformer
            loads once, its text cache serves every run).
        name: The report's name.
        cap: ``hardCapTokens``.
        overrides: More configuration (dotted camelCase keys, as ``--set`` takes them).
        dates: Where each message's date is (:func:`conversation_messages`).
    """
    # LoCoMo conversations span up to a year; the default 90-day retention would evict the
    # first months before the questions are asked. This measures recall, not retention.
    settings = {
        "hardCapTokens": cap,
        "evictionDays": _RETENTION_DAYS,
        "embeddingModel": "hash" if embedder.name == "hash" else "transformer",
    }
    config = MemoryContextConfig().with_overrides(settings | (overrides or {}))
    window = cap * 10
    scores: list[float] = []
    used: list[int] = []
    by_cat: dict[int, list[float]] = defaultdict(list)
    per_conv: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="memctx-locomo-product-") as tmp:
        for conv in conversations:
            # Asked the day after the last session: nothing is past the store's age limit.
            asked = max(turn.timestamp for turn in conv.turns) + 86_400.0
            engine = MemoryContext(
                config,
                store_dir=Path(tmp) / conv.sample_id,
                session_id=conv.sample_id,
                context_window_tokens=window,
                embedder=embedder,
                clock=partial(float, asked),
            )
            try:
                engine.on_before_compact(conversation_messages(conv, dates))
                engine.wait_idle(3600)
                conv_scores = []
                for question in conv.questions:
                    if question.category not in CATEGORIES or not question.evidence:
                        continue
                    sent = engine.on_context([{"role": "user", "content": question.question}])
                    block = _block(sent)
                    found = recalled_turns(block, conv)
                    value = sum(e in found for e in question.evidence) / len(question.evidence)
                    conv_scores.append(value)
                    by_cat[question.category].append(value)
                    used.append(len(found))
                failures = {
                    k: v for k, v in engine.stats()["counts"].items() if k.endswith("failures")
                }
                if any(failures.values()):
                    raise RuntimeError(f"{conv.sample_id}: hook failures {failures}")
            finally:
                engine.close()
            scores += conv_scores
            per_conv[conv.sample_id] = statistics.fmean(conv_scores) if conv_scores else 0.0
    return RecallReport(
        name=name,
        questions=len(scores),
        at_budget=statistics.fmean(scores) if scores else 0.0,
        budget=cap,
        mean_budget_turns=statistics.fmean(used) if used else 0.0,
        by_category={c: {"budget": statistics.fmean(v)} for c, v in sorted(by_cat.items())},
        per_conversation=per_conv,
    )
