"""Sentences under the report's headline table that say how to read its numbers.

- Which model wrote the summaries of the summary-based strategies. With the offline default
  (``memctx/offline``) they are state snapshots written by rules, so a strategy that summarises
  is measured with those summaries, not with what an LLM would write; a reader comparing it
  with ``observation-masking`` or ``truncate`` must know that.
- When ``hardCapTokens`` is not the recall block's cap at the windows the run played (the
  cap is ``min(hardCapTokens, floor(window x recallWindowRatio))``): the run measured the
  ratio's cap, and a reader who set ``hardCapTokens`` must know that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memctx.config import MemoryContextConfig, recall_cap_note
from memctx.errors import MemctxError
from memctx.llm import OFFLINE_MODEL

from ..schema import all_records

__all__ = [
    "played_windows_of",
    "recall_cap_run_note",
    "summary_model",
    "summary_model_note",
    "summary_strategies_run",
]


def summary_strategies_run(summary: Mapping[str, Any]) -> list[str]:
    """Strategies of the run that summarise (registered with ``summaries=True``) and did.

    A strategy counts when one of its records has compactions: a run whose sessions never
    reached the threshold wrote no summary, and the note would have nothing to be about.
    """
    # Imported on use: the strategies package pulls in the runtime.
    from memctx.strategies import strategy_info, strategy_names

    found: dict[str, None] = {}
    for record in all_records(summary):
        strategy = str(record.get("strategy", ""))
        compactions = record.get("compactions")
        if (
            strategy.partition(":")[0] in strategy_names()
            and strategy_info(strategy.partition(":")[0]).summaries
            and isinstance(compactions, int | float)
            and compactions > 0
        ):
            found[strategy] = None
    return list(found)


def _run_config(summary: Mapping[str, Any]) -> MemoryContextConfig | None:
    """The settings the run played with (its recorded overrides on the defaults); ``None``
    when they cannot be read."""
    overrides = (summary.get("config") or {}).get("overrides") or {}
    if not isinstance(overrides, Mapping):
        return None
    try:
        return MemoryContextConfig().with_overrides(overrides)
    except (MemctxError, ValueError, TypeError):
        return None  # a summary edited by hand: better no sentence than a wrong one


def summary_model(summary: Mapping[str, Any]) -> str | None:
    """``extractionModel`` as the run's overrides set it (``None`` when they cannot be read)."""
    config = _run_config(summary)
    return config.extraction_model if config is not None else None


def played_windows_of(summary: Mapping[str, Any]) -> list[int]:
    """The context windows the run played: its ``windows`` option, else its scenarios' own
    (``provenance.scenario_windows``; absent from summaries written before it was
    recorded, which then give none)."""
    windows = (summary.get("config") or {}).get("windows") or []
    if not windows:
        by_suite = (summary.get("provenance") or {}).get("scenario_windows") or {}
        if isinstance(by_suite, Mapping):
            windows = [w for ws in by_suite.values() if isinstance(ws, list) for w in ws]
    ints = [w for w in windows if isinstance(w, int) and not isinstance(w, bool) and w > 0]
    return sorted(set(ints))


def recall_cap_run_note(summary: Mapping[str, Any]) -> str | None:
    """The sentence saying ``hardCapTokens`` was capped below itself by
    ``recallWindowRatio`` at the windows played, naming the strategies that inserted recall
    blocks; ``None`` when it was not, or when no strategy recalled anything (the cap then
    shaped nothing)."""
    recalling: dict[str, None] = {}
    for record in all_records(summary):
        tokens = record.get("recall_tokens")
        if isinstance(tokens, int | float) and tokens > 0:
            recalling[str(record.get("strategy", ""))] = None
    config = _run_config(summary) if recalling else None
    note = recall_cap_note(config, played_windows_of(summary)) if config is not None else None
    if note is None:
        return None
    return f"Recall blocks ({', '.join(recalling)}): {note}."


def summary_model_note(summary: Mapping[str, Any]) -> str | None:
    """The sentence naming the summaries' model, or ``None`` when no strategy summarised."""
    strategies = summary_strategies_run(summary)
    model = summary_model(summary) if strategies else None
    if model is None:
        return None
    names = ", ".join(strategies)
    if model == OFFLINE_MODEL:
        return (
            f"Summaries in this run were written by {model}, memctx's deterministic rule-based "
            f"model (state snapshots read from the transcript): summary-based strategies "
            f"({names}) are measured with its summaries, not with an LLM's."
        )
    return (
        f"Summaries in this run were written by {model} (extractionModel): summary-based "
        f"strategies ({names}) are measured with that model's summaries."
    )
