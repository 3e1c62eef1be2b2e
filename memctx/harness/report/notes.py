"""Sentences under the report's headline table that say how to read its numbers.

One for now: which model wrote the summaries of the summary-based strategies. With the
offline default (``memctx/offline``) they are extractive, written by rules, so a strategy
that summarises is measured with those summaries, not with what an LLM would write; a
reader comparing it with ``observation-masking`` or ``truncate`` must know that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.errors import MemctxError
from memctx.llm import OFFLINE_MODEL

from ..schema import all_records

__all__ = ["summary_model", "summary_model_note", "summary_strategies_run"]


def summary_strategies_run(summary: Mapping[str, Any]) -> list[str]:
    """Strategies of the run that summarise (registered with ``summaries=True``) and did.

    A strategy counts when one of its records has compactions: a run whose sessions never
    reached the threshold wrote no summary, and the note would have nothing to be about.
    """
    # Imported on use: the strategies package pulls in the runtime.
    from ..strategies import SUMMARY_STRATEGIES

    found: dict[str, None] = {}
    for record in all_records(summary):
        strategy = str(record.get("strategy", ""))
        compactions = record.get("compactions")
        if (
            strategy.partition(":")[0] in SUMMARY_STRATEGIES
            and isinstance(compactions, int | float)
            and compactions > 0
        ):
            found[strategy] = None
    return list(found)


def summary_model(summary: Mapping[str, Any]) -> str | None:
    """``extractionModel`` as the run's overrides set it (``None`` when they cannot be read)."""
    overrides = (summary.get("config") or {}).get("overrides") or {}
    if not isinstance(overrides, Mapping):
        return None
    try:
        return MemoryContextConfig().with_overrides(overrides).extraction_model
    except (MemctxError, ValueError, TypeError):
        return None  # a summary edited by hand: better no sentence than a wrong one


def summary_model_note(summary: Mapping[str, Any]) -> str | None:
    """The sentence naming the summaries' model, or ``None`` when no strategy summarised."""
    strategies = summary_strategies_run(summary)
    model = summary_model(summary) if strategies else None
    if model is None:
        return None
    names = ", ".join(strategies)
    if model == OFFLINE_MODEL:
        return (
            f"Summaries in this run were written by {model}, memctx's deterministic extractive "
            f"model: summary-based strategies ({names}) are measured with its summaries, not "
            "with an LLM's."
        )
    return (
        f"Summaries in this run were written by {model} (extractionModel): summary-based "
        f"strategies ({names}) are measured with that model's summaries."
    )
