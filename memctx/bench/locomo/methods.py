"""LoCoMo evidence recall: the product's path, and the search methods behind it.

Two readings, for hash and transformer embeddings:

- **through the product** (:mod:`.product`): every conversation archived with
  ``on_before_compact``, every question asked through ``on_context``, evidence counted inside
  the ``<recalled-context>`` block it returns. This is what an agent receives, and the figure
  the README quotes. Measured twice: with each message's date in its ``timestamp`` field,
  and with the date (and the speaker) only at the start of its text.
- **the methods table**: every conversation archived turn by turn into a fresh
  :class:`~memctx.store.RawStore` as the product archives it (the speaker as the message's
  name, the session date as its timestamp), each question ranked by
  :func:`~memctx.store.search_store` with one set of search parameters, and the ranking
  packed into the product's recall block (:func:`memctx.recall.build_recall_block`) with a
  2,000-token cap. It compares BM25 only, vectors only, the seed's hybrid and memctx's
  defaults, with each addition switched off in turn (the ablations).

Decay needs a "now": the questions are asked after the last session, so ``now`` is the last
session's timestamp. LoCoMo questions are about any point of the past, so any decay can only
cost recall here; the rows show how much.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from memctx.harness.locomo import (
    CATEGORY_NAMES,
    KS,
    Conversation,
    PackerFactory,
    RecallReport,
    Retriever,
    conversation_messages,
    evaluate_product,
    evaluate_retriever,
    load_locomo,
    per_turn_packer,
    rendered_packer,
)
from memctx.messages import estimate_tokens
from memctx.retrieval import SEED_PRESET, Embedder, SearchParams, make_embedder
from memctx.store import RawStore, search_store

__all__ = [
    "DEFAULT_METHOD",
    "METHODS",
    "Method",
    "archive_conversation",
    "evaluate_methods",
    "run_locomo",
]

RANK_DEPTH = 150  # ranked turns per question: more than a 2,000-token budget can hold


@dataclass(frozen=True)
class Method:
    name: str
    params: SearchParams
    decay: bool = False  # decay relative to the last session
    per_turn: bool = False  # budget by each turn's archived text instead of the rendered block


_PLAIN = replace(SearchParams(), neighbour_weight=0.0, episode_weight=0.0, decay=1.0)
_DEFAULT = SearchParams()
DEFAULT_METHOD = Method("memctx default (no decay)", _DEFAULT)
METHODS = (
    Method("bm25 only", replace(_PLAIN, vector_weight=0.0, text_weight=1.0)),
    Method("vector only", replace(_PLAIN, vector_weight=1.0, text_weight=0.0)),
    Method("hybrid 0.7/0.3 (seed, no decay)", _PLAIN),
    Method(
        "seed preset (0.995 per hour)",
        replace(SEED_PRESET, candidates=_DEFAULT.candidates),
        decay=True,
    ),
    DEFAULT_METHOD,
    Method("  - grouped block", _DEFAULT, per_turn=True),
    Method("  - without neighbours", replace(_DEFAULT, neighbour_weight=0.0)),
    Method("  - without episode boost", replace(_DEFAULT, episode_weight=0.0)),
    Method("  + decay 0.995 per day", replace(_DEFAULT, decay=0.995), decay=True),
)


def archive_conversation(
    conv: Conversation, embedder: Embedder, root: Path
) -> tuple[RawStore, list[int]]:
    """Store every turn as the product archives it; return the store and the turn index of
    each segment key."""
    store = RawStore(root / conv.sample_id, embedder=embedder, eviction_days=None)
    items = [
        {
            "session_id": conv.sample_id,
            "role": message["role"],
            "name": message["name"],
            "content": message["content"],
            "timestamp": message["timestamp"],
            "turn": turn.index,
        }
        for turn, message in zip(conv.turns, conversation_messages(conv), strict=True)
    ]
    stored = store.add_many(items)
    # A turn whose text repeats an earlier one in its session is stored once (dedup); the
    # earlier turn stands for both.
    turn_of_key: dict[int, int] = {}
    for turn, segment in zip(conv.turns, stored, strict=True):
        if segment is not None:
            key = store.key_of(segment.id)
            assert key is not None
            turn_of_key[key] = turn.index
    keys = [0] * (max(turn_of_key, default=-1) + 1)
    for key, index in turn_of_key.items():
        keys[key] = index
    return store, keys


def _retriever(store: RawStore, turn_of_key: list[int], method: Method, now: float) -> Retriever:
    def rank(question: str) -> list[int]:
        hits = search_store(
            store,
            question,
            limit=RANK_DEPTH,
            cross_session=True,  # one conversation per store
            params=method.params,
            now=now if method.decay else None,
        )
        return [turn_of_key[h.key] for h in hits]

    return rank


class _Archive:
    """One conversation's store and its key -> turn map (made once for every method)."""

    def __init__(self, conv: Conversation, embedder: Embedder, root: Path) -> None:
        self.store, self.turn_of_key = archive_conversation(conv, embedder, root)
        self.now = max(t.timestamp for t in conv.turns)

    def retriever(self, method: Method) -> Retriever:
        return _retriever(self.store, self.turn_of_key, method, self.now)


_PER_TURN: PackerFactory = per_turn_packer(lambda turn: estimate_tokens(turn.text))


def evaluate_methods(
    conversations: Sequence[Conversation],
    kind: str,
    methods: Sequence[Method],
    *,
    budget: int = 2000,
    cache_dir: Path | None = None,
    product: bool = True,
) -> list[RecallReport]:
    """Archive every conversation with the ``kind`` embedder once; evaluate each method.

    With ``product``, the first two reports are the product's own path (:mod:`.product`),
    with ``budget`` as ``hardCapTokens``: the dates in the messages' ``timestamp`` fields,
    then only at the start of their text.
    """
    cache = cache_dir / f"embeddings-{kind}.bin" if cache_dir else None
    embedder = make_embedder(kind, cache_path=cache)  # type: ignore[arg-type]
    if reason := getattr(embedder, "fallback_reason", None):
        print(f"note: {kind} requested, hash used: {reason}")
    reports: list[RecallReport] = []
    if product:
        started = time.perf_counter()
        name = f"{kind:11s} through on_context (the product)"
        reports.append(evaluate_product(conversations, embedder, name=name, cap=budget))
        name = f"{kind:11s} the product, dates in the text"
        reports.append(
            evaluate_product(conversations, embedder, name=name, cap=budget, dates="text")
        )
        print(f"[{kind}] product path in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memctx-locomo-") as tmp:
        archived = {c.sample_id: _Archive(c, embedder, Path(tmp)) for c in conversations}
        print(f"[{kind}] archived in {time.perf_counter() - started:.1f} s")
        try:
            for method in methods:

                def factory(conv: Conversation, method: Method = method) -> Retriever:
                    return archived[conv.sample_id].retriever(method)

                report = evaluate_retriever(
                    f"{kind:11s} {method.name}",
                    conversations,
                    factory,
                    pack=_PER_TURN if method.per_turn else rendered_packer,
                    budget=budget,
                )
                reports.append(report)
        finally:
            for archive in archived.values():
                archive.store.close()
    return reports


def run_locomo(
    path: Path,
    *,
    embedders: Sequence[str] = ("hash", "transformer"),
    methods: Sequence[Method] = METHODS,
    budget: int = 2000,
    cache_dir: Path | None = None,
) -> list[RecallReport]:
    """Evaluate every method with every embedder; print the tables; return the reports."""
    conversations = load_locomo(path)
    fixed = sum(c.evidence_fixed for c in conversations)
    dropped = sum(c.evidence_dropped for c in conversations)
    print(
        f"LoCoMo: {len(conversations)} conversations, "
        f"{sum(len(c.turns) for c in conversations)} turns; evidence ids repaired {fixed}, "
        f"dropped {dropped} (name no turn)"
    )
    reports: list[RecallReport] = []
    for kind in embedders:
        reports += evaluate_methods(
            conversations, kind, methods, budget=budget, cache_dir=cache_dir
        )
    _print(reports, budget)
    return reports


def _print(reports: Sequence[RecallReport], budget: int) -> None:
    head = f"{'embedder / method':46s}" + "".join(f"  @{k:<4d}" for k in KS)
    head += f"  @{budget}tok  turns  " + "  ".join(f"c{c}" for c in (1, 2, 3, 4))
    head += "  worst conv"
    print()
    print(head)
    print("-" * len(head))
    for r in reports:
        cells = "".join(f"  {r.at_k[k]:5.1%}" if k in r.at_k else f"  {'-':>5s}" for k in KS)
        cats = "  ".join(f"{r.by_category.get(c, {}).get('budget', 0):.0%}" for c in (1, 2, 3, 4))
        worst = min(r.per_conversation.values(), default=0.0)
        print(
            f"{r.name:46s}{cells}  {r.at_budget:7.1%}  {r.mean_budget_turns:5.0f}  {cats}"
            f"  {worst:6.1%}"
        )
    names = ", ".join(f"c{n} {CATEGORY_NAMES[n]}" for n in (1, 2, 3, 4))
    print(
        f"\nrecall = share of a question's evidence turns retrieved, averaged over "
        f"{reports[0].questions if reports else 0} questions; @{budget}tok = greedy fill of a "
        f"{budget}-token recall block; categories at the budget: {names}. 'through "
        f"on_context': the <recalled-context> block the product injects (cap {budget}), no "
        f"ranking cut-offs; the other rows rank with one search and pack the ranking into "
        f"the same block; '- grouped block' counts each turn's archived "
        f"'[date] speaker: text' on its own."
    )
