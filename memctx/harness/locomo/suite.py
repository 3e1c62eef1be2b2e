"""``memctx eval --suite locomo``: LoCoMo evidence recall through memctx's own paths.

Each conversation is archived once per embedder as an agent's history is
(``MemoryContext.on_before_compact``, one message per turn, the session's date as its
timestamp). Then each question is asked two ways, as an agent meets memctx:

- **the recall block** ``on_context`` injects, at ``hardCapTokens`` 500 / 1,000 / 2,000 /
  4,000 (the window ten times the cap, so the cap is the limit): a turn counts when its whole
  ``speaker: text`` line stands in the block;
- **``memory_search``** with ``limit`` k = 5 / 10 (and 20, its largest); k = 25 / 50 go past
  the tool's cap of 20, so they rank the same store with the same hybrid search
  (:func:`memctx.store.search_store`) without the cap: a turn counts when its text is in a
  hit.

Each is measured twice: with the date in each message's ``timestamp`` field (and the speaker
as its ``name``), and with both only at the start of the message's text (``[8 May 2023]
Caroline: ...``, as an exported chat log writes them): the ``dates`` column, ``timestamp`` or
``text``.

Per path: evidence recall (the share of a question's evidence turns found, averaged), per
category 1-4 and overall, whether the answer string is present, and the tokens it took.
Category 5 (adversarial: no answer exists) is reported apart. The published reference
points are printed beside them: the LoCoMo paper's DRAGON retriever at k = 5/10/25/50 and
Mem0's ≈ 1,764 memory tokens per question. Nothing is tuned per conversation: the same code
runs on conversations not seen here.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal

from memctx.config import DEFAULT_TRANSFORMER_MODEL, MemoryContextConfig, TransformerModelName
from memctx.messages import estimate_tokens, is_recalled_block, message_text
from memctx.retrieval import CachedEmbedder, Embedder, make_embedder
from memctx.runtime import MemoryContext
from memctx.store import RawStore, search_store

from ..answers import normalise_answer
from .data import CATEGORY_NAMES, Conversation, Question, load_locomo
from .product import DATES, Dates, conversation_messages, turns_in

__all__ = [
    "DRAGON",
    "LOCOMO_BUDGETS",
    "LOCOMO_KS",
    "MEM0_TOKENS",
    "LocomoRow",
    "format_locomo",
    "run_locomo_suite",
]

LOCOMO_BUDGETS = (500, 1_000, 2_000, 4_000)
LOCOMO_KS = (5, 10, 20, 25, 50)
DRAGON = {5: 0.567, 10: 0.662, 25: 0.767, 50: 0.827}  # LoCoMo paper, Table 3 (10 convs)
MEM0_TOKENS = 1_764  # Mem0 paper (arXiv 2504.19413), Table 2: memory tokens per question
_TOOL_CAP = 20  # memory_search returns at most this many hits
_RETENTION_DAYS = 3650  # conversations span a year: measure recall, not retention


@dataclass(frozen=True, slots=True)
class LocomoRow:
    """One path at one size with one embedder.

    Attributes:
        embedding: ``hash`` or ``transformer``.
        dates: Where the messages' dates were: their ``timestamp`` field or their ``text``.
        path: ``recall block`` or ``memory_search``.
        size: The block's token cap, or k.
        questions: Questions of categories 1-4 asked.
        evidence_recall: Mean share of evidence turns found, categories 1-4.
        by_category: The same per category (1-4), and ``5`` for the adversarial ones that
            carry evidence.
        answer_present: Share whose answer string is in what the path returned.
        tokens: Mean tokens the path returned per question.
    """

    embedding: str
    dates: str
    path: str
    size: int
    questions: int
    evidence_recall: float
    by_category: dict[int, float] = field(default_factory=dict)
    answer_present: float = 0.0
    tokens: float = 0.0


class _Tally:
    def __init__(self) -> None:
        self.recall: dict[int, list[float]] = defaultdict(list)
        self.answer: list[float] = []
        self.tokens: list[int] = []

    def add(self, category: int, recall: float, answer: bool | None, text: str) -> None:
        self.recall[category].append(recall)
        if category != 5 and answer is not None:
            self.answer.append(float(answer))
        if category != 5:
            self.tokens.append(estimate_tokens(text))

    def row(self, embedding: str, dates: str, path: str, size: int) -> LocomoRow:
        main = [v for c, values in self.recall.items() if c != 5 for v in values]
        return LocomoRow(
            embedding,
            dates,
            path,
            size,
            len(main),
            round(statistics.fmean(main), 4) if main else 0.0,
            {c: round(statistics.fmean(v), 4) for c, v in sorted(self.recall.items())},
            round(statistics.fmean(self.answer), 4) if self.answer else 0.0,
            round(statistics.fmean(self.tokens), 1) if self.tokens else 0.0,
        )


def run_locomo_suite(
    path: Path,
    out_dir: Path | None = None,
    *,
    embeddings: Sequence[Literal["hash", "transformer"]] = ("hash", "transformer"),
    budgets: Sequence[int] = LOCOMO_BUDGETS,
    ks: Sequence[int] = LOCOMO_KS,
    limit: int | None = None,
    dates: Sequence[Dates] = DATES,
    transformer_model: TransformerModelName = DEFAULT_TRANSFORMER_MODEL,
) -> list[LocomoRow]:
    """Run the suite (module docstring) on the LoCoMo file at ``path``.

    Args:
        path: ``locomo7.json`` (or any file in LoCoMo's format).
        out_dir: Where ``locomo.md`` and ``locomo.json`` go; ``None`` writes nothing.
        embeddings: ``hash`` and/or ``transformer``.
        budgets: Recall block caps (tokens).
        ks: ``memory_search`` limits.
        limit: The first N conversations only (a quick slice), ``None`` for all.
        dates: Where the messages carry their dates (:func:`.product.conversation_messages`),
            each measured on its own.
        transformer_model: The ``transformer`` embedder's model (``transformerModel``); a
            model other than the default is named in the rows' embedder.
    """
    conversations = load_locomo(path)[:limit]
    rows: list[LocomoRow] = []
    for embedding in embeddings:
        # Each question is asked on eight paths: its vector is computed once (this suite
        # measures recall, not the hook's latency).
        embedder = CachedEmbedder(make_embedder(embedding, model=transformer_model))
        label: str = embedding
        if embedding == "transformer" and transformer_model != DEFAULT_TRANSFORMER_MODEL:
            label = f"transformer ({transformer_model})"
        for where in dates:
            tallies = {("recall block", b): _Tally() for b in budgets}
            tallies.update({("memory_search", k): _Tally() for k in ks})
            with tempfile.TemporaryDirectory(prefix="memctx-locomo-") as tmp:
                for conv in conversations:
                    store = Path(tmp) / conv.sample_id
                    _one_conversation(conv, embedder, store, budgets, ks, tallies, where)
            rows += [t.row(label, where, p, s) for (p, s), t in tallies.items()]
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "locomo.md").write_text(
            f"# LoCoMo evidence recall ({len(conversations)} conversation"
            f"{'' if len(conversations) == 1 else 's'})\n\n" + format_locomo(rows) + "\n",
            encoding="utf-8",
        )
        (out_dir / "locomo.json").write_text(
            json.dumps([asdict(r) for r in rows], indent=2) + "\n", encoding="utf-8"
        )
    return rows


def _one_conversation(
    conv: Conversation,
    embedder: Embedder,
    store_dir: Path,
    budgets: Sequence[int],
    ks: Sequence[int],
    tallies: dict[tuple[str, int], _Tally],
    dates: Dates,
) -> None:
    asked_at = max(turn.timestamp for turn in conv.turns) + 86_400.0  # the day after
    kind = "hash" if embedder.name.startswith("hash") else "transformer"
    settings = {"evictionDays": _RETENTION_DAYS, "embeddingModel": kind}
    questions = [q for q in conv.questions if q.evidence]
    for n, budget in enumerate(budgets):
        config = MemoryContextConfig().with_overrides({**settings, "hardCapTokens": budget})
        with MemoryContext(
            config,
            store_dir=store_dir,
            session_id=conv.sample_id,
            context_window_tokens=budget * 10,
            embedder=embedder,
            clock=partial(float, asked_at),
        ) as engine:
            if n == 0:  # archived once; the later caps read the same store
                engine.on_before_compact(conversation_messages(conv, dates))
                engine.wait_idle(3600)
            for question in questions:
                sent = engine.on_context([{"role": "user", "content": question.question}])
                block = next((message_text(m) for m in sent if is_recalled_block(m)), "")
                _score(tallies[("recall block", budget)], conv, question, block, speaker=True)
            if n == 0:
                for k in (k for k in ks if k <= _TOOL_CAP):
                    for question in questions:
                        hits = engine.memory_search(question.question, limit=k)
                        text = "\n".join(h["content"] for h in hits)
                        _score(tallies[("memory_search", k)], conv, question, text, speaker=False)
    wide = [k for k in ks if k > _TOOL_CAP]
    if wide:
        store = RawStore(store_dir, embedder=embedder, eviction_days=None)
        try:
            for question in questions:
                ranked = search_store(
                    store, question.question, limit=max(wide), session_id=conv.sample_id
                )
                for k in wide:
                    text = "\n".join(store.get(hit.key).content for hit in ranked[:k])
                    _score(tallies[("memory_search", k)], conv, question, text, speaker=False)
        finally:
            store.close()


def _score(
    tally: _Tally, conv: Conversation, question: Question, text: str, *, speaker: bool
) -> None:
    found = turns_in(text, conv, speaker=speaker)
    recall = sum(e in found for e in question.evidence) / len(question.evidence)
    answer = str(question.answer) if question.answer else ""
    present = normalise_answer(answer) in normalise_answer(text) if answer else None
    tally.add(question.category, recall, present, text)


def format_locomo(rows: Sequence[LocomoRow]) -> str:
    """A Markdown table: one line per embedding × dates × path × size, the references
    after."""
    cats = (1, 2, 3, 4)
    head = " | ".join(f"{c} {CATEGORY_NAMES[c]}" for c in cats)
    lines = [
        f"| embedding | dates | path | size | questions | evidence recall | {head} | "
        "adversarial (5) | answer present | tokens |",
        "|---|---|---|---|---|---|" + "---|" * len(cats) + "---|---|---|",
    ]
    for r in rows:
        per = " | ".join(f"{100 * r.by_category.get(c, 0.0):.1f} %" for c in cats)
        adv = r.by_category.get(5)
        lines.append(
            f"| {r.embedding} | {r.dates} | {r.path} | {r.size:,} | {r.questions} | "
            f"{100 * r.evidence_recall:.1f} % | {per} | "
            f"{'-' if adv is None else f'{100 * adv:.1f} %'} | "
            f"{100 * r.answer_present:.1f} % | {r.tokens:,.0f} |"
        )
    refs = ", ".join(f"k = {k}: {100 * v:.1f} %" for k, v in DRAGON.items())
    lines += [
        "",
        f"References (all 10 conversations, categories 1-4): DRAGON retriever {refs} (LoCoMo "
        f"paper, Table 3); Mem0 injects ≈ {MEM0_TOKENS:,} memory tokens per question (Mem0 "
        "paper, Table 2).",
    ]
    return "\n".join(lines)
