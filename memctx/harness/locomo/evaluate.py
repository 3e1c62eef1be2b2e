"""Evidence recall: does a retriever bring back the turns that answer a question?

For each question (LoCoMo categories 1-4; category 5 is adversarial and has no evidence to
find) a retriever ranks the archived turns. Two readings of the ranking:

- **recall@k**: the share of the question's evidence turns among the top k.
- **recall at a token budget**: the ranking is read in order and each turn is kept while the
  recall block that holds it still fits the budget; a turn that does not fit is skipped and
  the next one tried. By default the block is the product's ``<recalled-context>`` block
  (:func:`memctx.recall.build_recall_block`: one date header per day, ``speaker: text``
  lines, the budget as its cap), counted whole with the estimate memctx budgets with
  (``ceil(len/3)``); the older reading, each turn's archived text ``[date] speaker: text``
  counted on its own (:func:`within_budget`), stays available for comparison. 2,000 tokens is
  about what Mem0 injects per question.

Both are averaged over questions (each question counts once, whatever its number of
evidence turns), overall and per category number.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memctx.recall import RecallItem, build_recall_block

from .data import Conversation, Question, Turn

__all__ = [
    "KS",
    "Packer",
    "RecallReport",
    "Retriever",
    "evaluate_retriever",
    "per_turn_packer",
    "rendered_packer",
    "turn_item",
    "within_budget",
]

KS = (5, 10, 25, 50)

# A retriever is built once per conversation and then ranks turn indices for a question.
Retriever = Callable[[str], Sequence[int]]
RetrieverFactory = Callable[[Conversation], Retriever]
# A packer fills a budget from a ranking: (ranked turn indices, budget) -> the turns kept.
Packer = Callable[[Sequence[int], int], Sequence[int]]
PackerFactory = Callable[[Conversation], Packer]


@dataclass
class RecallReport:
    """Recall figures for one retriever over a set of conversations."""

    name: str
    questions: int = 0
    at_k: dict[int, float] = field(default_factory=dict)
    at_budget: float = 0.0
    budget: int = 2000
    mean_budget_turns: float = 0.0
    by_category: dict[int, dict[str, float]] = field(default_factory=dict)
    per_conversation: dict[str, float] = field(default_factory=dict)


def within_budget(ranking: Sequence[int], costs: Sequence[int], budget: int) -> list[int]:
    """The prefix-greedy selection: take ranked items while they fit, skip the ones that don't."""
    chosen: list[int] = []
    used = 0
    for index in ranking:
        cost = costs[index]
        if used + cost <= budget:
            chosen.append(index)
            used += cost
    return chosen


def turn_item(conv: Conversation, turn: Turn, rank: int) -> RecallItem:
    """A LoCoMo turn as the product archives it (:func:`.product.conversation_messages`),
    as a recall candidate at ``rank`` in a ranking."""
    return RecallItem(
        "detail",
        turn.said or turn.text,
        score=-float(rank),  # the ranking's order: best first
        label=turn.speaker,  # the message's name, shown instead of its role
        ref=str(turn.index),
        order=(turn.timestamp, turn.index),
        session=conv.sample_id,
        seq=turn.index,
    )


def rendered_packer(conv: Conversation) -> Packer:
    """Pack through the product's recall block (:func:`memctx.recall.build_recall_block`),
    the budget being its cap: what ``on_context`` would show for this ranking."""

    def pack(ranking: Sequence[int], budget: int) -> list[int]:
        items = [turn_item(conv, conv.turns[i], rank) for rank, i in enumerate(ranking)]
        block = build_recall_block([], items, budget)
        shown = {int(item.ref) for item in block.details} if block else set()
        return [i for i in ranking if i in shown]

    return pack


def per_turn_packer(costs: Callable[[Turn], int]) -> PackerFactory:
    """Pack by each turn's own cost (:func:`within_budget`), e.g. its archived text's."""

    def factory(conv: Conversation) -> Packer:
        turn_cost = [costs(t) for t in conv.turns]
        return lambda ranking, budget: within_budget(ranking, turn_cost, budget)

    return factory


def _recall(found: set[str], evidence: Sequence[str]) -> float:
    return sum(1 for e in evidence if e in found) / len(evidence)


def evaluate_retriever(
    name: str,
    conversations: Sequence[Conversation],
    factory: RetrieverFactory,
    *,
    pack: PackerFactory = rendered_packer,
    budget: int = 2000,
    ks: Sequence[int] = KS,
    categories: Sequence[int] = (1, 2, 3, 4),
) -> RecallReport:
    """Rank every question's turns with ``factory``'s retriever and measure evidence recall.

    Args:
        name: The report's name.
        conversations: The conversations; each gets its own retriever and packer.
        factory: Builds a conversation's retriever.
        pack: Builds a conversation's packer for the budget reading (default: the rendered
            recall block; :func:`per_turn_packer` for costs per turn).
        budget: Tokens for the budget reading.
        ks: Cut-offs for recall@k.
        categories: Question categories asked (LoCoMo's 5, adversarial, has no evidence).
    """
    per_k: dict[int, list[float]] = defaultdict(list)
    at_budget: list[float] = []
    turns_used: list[int] = []
    by_cat: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    per_conv: dict[str, float] = {}
    for conv in conversations:
        retrieve = factory(conv)
        packer = pack(conv)
        ids = [t.dia_id for t in conv.turns]
        conv_scores: list[float] = []
        for q in _questions(conv, categories):
            ranking = list(retrieve(q.question))
            for k in ks:
                value = _recall({ids[i] for i in ranking[:k]}, q.evidence)
                per_k[k].append(value)
                by_cat[q.category][f"@{k}"].append(value)
            chosen = packer(ranking, budget)
            value = _recall({ids[i] for i in chosen}, q.evidence)
            at_budget.append(value)
            conv_scores.append(value)
            turns_used.append(len(chosen))
            by_cat[q.category]["budget"].append(value)
        per_conv[conv.sample_id] = statistics.fmean(conv_scores) if conv_scores else 0.0
    return RecallReport(
        name=name,
        questions=len(at_budget),
        at_k={k: statistics.fmean(v) for k, v in per_k.items()},
        at_budget=statistics.fmean(at_budget) if at_budget else 0.0,
        budget=budget,
        mean_budget_turns=statistics.fmean(turns_used) if turns_used else 0.0,
        by_category={
            c: {key: statistics.fmean(vals) for key, vals in d.items()}
            for c, d in sorted(by_cat.items())
        },
        per_conversation=per_conv,
    )


def _questions(conv: Conversation, categories: Sequence[int]) -> list[Question]:
    return [q for q in conv.questions if q.category in categories and q.evidence]
