"""LoCoMo through every strategy: what each keeps of a long chat at a small window.

:mod:`.suite` measures memctx's own paths at a fixed budget. Here each conversation is
played as an agent session through the replay engine, at a window it does not fit (16,000
tokens by default; a conversation reaches 20-26K by its end), so every strategy has to
truncate, mask, compact or recall; then each question of categories 1-4 is asked at the
end. Per strategy × embedding: the share of evidence turns in the context the model would
receive, whether the answer string is in it, whether the strategy's memory tool
(``memory_search``) returns it, and the tokens sent per call. The same engine and checks as
every synthetic scenario.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..engine import run_scenario
from ..metrics import aggregate
from ..scenario import Probe, Scenario, Session
from ..schema import NO_EMBEDDING
from ..strategies import parse_strategy
from .data import Conversation, load_locomo
from .product import CATEGORIES, conversation_messages

__all__ = [
    "LOCOMO_WINDOW",
    "StrategyRow",
    "format_strategy_rows",
    "locomo_scenario",
    "run_locomo_strategies",
]

LOCOMO_WINDOW = 16_000
# The messages carry their 2023 dates and the replay's clock is 2026: with the default 90-day
# retention the store would evict every archived turn at once. This measures recall, not
# retention (as :mod:`.suite` does).
_RETENTION = {"evictionDays": 3650}


@dataclass(frozen=True, slots=True)
class StrategyRow:
    """One strategy × embedding over the conversations played.

    Attributes:
        strategy: The strategy.
        embedding: ``hash``, ``transformer`` or ``-`` (it does not search).
        questions: Questions asked (categories 1-4).
        fit: Of those, the ones whose context fitted the window (``full`` sends the whole
            conversation: over the window it is not fit); the shares are over these.
        evidence: Mean share of evidence turns in the context.
        answer: Share whose answer string is in the context.
        tool: Share whose answer is in the context or in ``memory_search``'s result.
        tokens_per_call: Mean tokens sent per model call.
        violations: Failed checks (must be 0).
    """

    strategy: str
    embedding: str
    questions: int
    fit: int
    evidence: float
    answer: float
    tool: float
    tokens_per_call: float
    violations: int


def locomo_scenario(conv: Conversation, window: int = LOCOMO_WINDOW) -> Scenario:
    """One LoCoMo conversation as a one-session scenario, its questions asked at the end."""
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
        suite="locomo",
        format="openai",
        seed=0,
        window=window,
        sessions=(Session(id=conv.sample_id, messages=messages),),
        probes=probes,
    )


def run_locomo_strategies(
    path: Path,
    strategies: Sequence[str],
    *,
    embeddings: Sequence[str] = ("hash", "transformer"),
    window: int = LOCOMO_WINDOW,
    limit: int | None = None,
) -> list[StrategyRow]:
    """Play the LoCoMo conversations at ``path`` through each strategy (module docstring);
    a strategy that does not search runs once."""
    scenarios = [locomo_scenario(c, window) for c in load_locomo(path)[:limit]]
    for strategy in strategies:
        parse_strategy(strategy)  # an unknown name fails before any replay
    rows = []
    with tempfile.TemporaryDirectory(prefix="memctx-locomo-play-") as tmp:
        for strategy in strategies:
            for embedding in embeddings:
                results = [
                    run_scenario(
                        scenario,
                        strategy,
                        embedding,
                        config_overrides=_RETENTION,
                        # A fresh folder per job: a store left by another must not be found.
                        work_dir=Path(tmp) / f"{strategy}-{embedding}-{k}",
                    )
                    for k, scenario in enumerate(scenarios)
                ]
                shown = next((p.embedding for r in results for p in r.probes), embedding)
                (record,) = [
                    r
                    for r in aggregate([("locomo", strategy, shown, r) for r in results])
                    if r["suite"] == "locomo"
                ]
                rows.append(
                    StrategyRow(
                        strategy,
                        shown,
                        record["probes"],
                        record["fit"],
                        record["evidence_recall"] or 0.0,
                        record["recall_accuracy"] or 0.0,
                        record["tool_accuracy"] or 0.0,
                        record["tokens_per_call"],
                        record["violations"],
                    )
                )
                if shown == NO_EMBEDDING:
                    break  # it does not search: the same context whatever the embedder
    return rows


def format_strategy_rows(rows: Sequence[StrategyRow], window: int = LOCOMO_WINDOW) -> str:
    """A Markdown table of :func:`run_locomo_strategies`'s rows."""
    lines = [
        f"| strategy (window {window:,}) | embedding | questions (fit) | evidence in context | "
        "answer in context | with memory_search | tokens / call | violations |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.strategy} | {'-' if r.embedding == NO_EMBEDDING else r.embedding} | "
            f"{r.questions} ({r.fit}) | "
            f"{100 * r.evidence:.1f} % | {100 * r.answer:.1f} % | {100 * r.tool:.1f} % | "
            f"{r.tokens_per_call:,.0f} | {r.violations} |"
        )
    return "\n".join(lines)
