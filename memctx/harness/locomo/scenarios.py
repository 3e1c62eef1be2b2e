"""LoCoMo as scenarios: each conversation played as an agent session through every strategy.

:mod:`.suite` measures memctx's own paths at a fixed budget. Here each conversation is one
scenario of the ``locomo`` suite of ``memctx eval``, played by the replay engine like every
synthetic one, at a window it does not fit (16,000 tokens; a conversation reaches 20-26K by
its end), so every strategy has to truncate, mask, compact or recall; then each question of
categories 1-4 is asked at the end. Its probe rows and records are the synthetic suites'
(:mod:`memctx.harness.schema`): ``recall_accuracy`` is the answer string in the context the
model would receive, ``evidence_recall`` the share of the question's evidence turns in it,
``tool_accuracy`` the answer there or in the strategy's ``memory_search``.
"""

from __future__ import annotations

from pathlib import Path

from ..scenario import Probe, Scenario, Session
from .data import Conversation, load_locomo
from .product import CATEGORIES, conversation_messages

__all__ = ["LOCOMO_SUITE", "LOCOMO_WINDOW", "locomo_scenario", "locomo_scenarios"]

LOCOMO_SUITE = "locomo"
LOCOMO_WINDOW = 16_000
# The messages carry their 2023 dates and the replay's clock is 2026: with the default 90-day
# retention the store would evict every archived turn at once. This measures recall, not
# retention (as :mod:`.suite` does); a run's own --set evictionDays still wins.
_SETTINGS = {"evictionDays": 3650}


def locomo_scenario(conv: Conversation, window: int = LOCOMO_WINDOW) -> Scenario:
    """One LoCoMo conversation as a one-session scenario, its questions asked at the end
    (each probe tagged with its category, ``category-1`` … ``category-4``)."""
    messages = tuple(conversation_messages(conv))
    said = {turn.dia_id: turn.said or turn.text for turn in conv.turns}
    probes = tuple(
        Probe(
            id=f"{conv.sample_id}-q{i}",
            session_id=conv.sample_id,
            at=len(messages),
            question=q.question,
            answers=(str(q.answer),),
            evidence_text=tuple(said[e] for e in q.evidence if e in said),
            stale=(),
            kind="decision",
            tags=(f"category-{q.category}",),
        )
        for i, q in enumerate(conv.questions)
        if q.category in CATEGORIES and q.evidence and str(q.answer).strip()
    )
    return Scenario(
        id=f"locomo-{conv.sample_id}",
        suite=LOCOMO_SUITE,
        format="openai",
        seed=0,
        window=window,
        sessions=(Session(id=conv.sample_id, messages=messages),),
        probes=probes,
        meta={"source": "locomo", "settings": dict(_SETTINGS)},
    )


def locomo_scenarios(
    path: Path, *, window: int = LOCOMO_WINDOW, limit: int | None = None
) -> list[Scenario]:
    """The conversations of the LoCoMo file at ``path`` as scenarios (the first ``limit``
    only when given).

    Raises:
        ValueError: The file is not in LoCoMo's format (:func:`.data.load_locomo`).
    """
    return [locomo_scenario(conv, window) for conv in load_locomo(path)[:limit]]
