"""LoCoMo (long conversations with evidence-labelled questions) in the harness: the adapter,
evidence recall at k and at a token budget, the product's path through ``on_context`` and
``memory_search``, and the ``locomo`` suite of ``memctx eval`` (the conversations as
scenarios through every strategy, and the evidence-recall table beside the published
figures).

May import: every package below the harness (it is part of it).
"""

from __future__ import annotations

from .data import CATEGORY_NAMES, Conversation, Question, Turn, load_locomo, normalise_evidence
from .evaluate import (
    KS,
    Packer,
    PackerFactory,
    RecallReport,
    Retriever,
    evaluate_retriever,
    per_turn_packer,
    rendered_packer,
    turn_item,
    within_budget,
)
from .product import (
    CATEGORIES,
    DATES,
    Dates,
    conversation_messages,
    evaluate_product,
    recalled_turns,
    turns_in,
)
from .scenarios import LOCOMO_SUITE as LOCOMO_SUITE
from .scenarios import LOCOMO_WINDOW, locomo_scenario
from .scenarios import locomo_scenarios as locomo_scenarios
from .suite import (
    DRAGON,
    LOCOMO_BUDGETS,
    LOCOMO_KS,
    MEM0_TOKENS,
    LocomoRow,
    format_locomo,
    run_locomo_suite,
)

__all__: list[str] = []
