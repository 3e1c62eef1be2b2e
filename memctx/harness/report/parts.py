"""Everything one report shows, computed once and rendered by :mod:`.markdown` and
:mod:`.page`: the recommendation, the tables, the checks, the frontier, the charts, the
baseline section and the notes on how to read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .baseline import BaselineSection
from .checks import Check, run_checks
from .figures import Chart
from .frontier import FRONTIER_CHART, FRONTIER_NOTE, frontier, frontier_reading, frontier_table
from .intervals import INTERVAL_NOTE
from .notes import recall_cap_run_note, summary_model_note
from .recommend import Recommendation, recommend
from .replicates import ReplicateSection, replicate_section
from .tables import (
    Table,
    headline_table,
    kind_table,
    pooled_records,
    provenance_lines,
    scenario_table,
    suite_table,
)

__all__ = ["HEADLINE_NOTE", "KIND_NOTE", "NOTHING_POOLED", "SUITE_NOTE", "ReportParts", "gather"]

HEADLINE_NOTE = (
    "One row per strategy × embedding over every synthetic suite (real-data suites stand "
    "alone, under Real data). Recall accuracy counts probes whose context holds an expected "
    "answer; full only over the probes whose context fits its window (probes fitted)."
)
NOTHING_POOLED = (
    "Nothing is pooled: the run played no synthetic suite (real-data suites are never pooled; "
    "each has its own table under Real data)."
)
SUITE_NOTE = (
    "Each cell: recall accuracy, its 95 % interval in whole points, and n, the probes it is "
    "over (for full, those that fit its window). A figure over few probes is wide: do not "
    "rank two cells whose intervals overlap."
)

KIND_NOTE = (
    "The same probes by what they ask about, across the synthetic suites: a planted fact's "
    "kind (config, decision, ...) or the agent's working state (a rule in force, a todo "
    "item's status, a file's history, the reason for a choice, the step in progress). Each "
    "cell: recall accuracy, its 95 % interval (Wilson, over n) and n."
)


@dataclass(frozen=True)
class ReportParts:
    """The content of a report, format-free.

    Attributes:
        summary: The run's summary (schema 2).
        recommendation: What to pick, derived from the numbers.
        headline: The all-suites table.
        notes: Sentences under it (intervals, the summaries' model, the recall cap).
        by_suite: Recall accuracy per suite with intervals and n.
        by_kind: Recall accuracy per probe kind (no rows without probe rows).
        checks: The claims and their verdicts.
        frontier: The frontier table.
        frontier_reading: The frontier in a sentence.
        frontier_chart: Its chart, None when nothing is comparable or charts were skipped.
        charts: The other charts.
        chart_note: What to say when there is no chart.
        baseline: The deltas against a baseline, None without one.
        provenance: Where the numbers come from.
        scenarios: The suites' data.
        replicates: The "Across replicates" section, None for a run without replicates.
    """

    summary: Mapping[str, Any]
    recommendation: Recommendation
    headline: Table
    notes: tuple[str, ...]
    by_suite: Table
    by_kind: Table
    checks: tuple[Check, ...]
    frontier: Table
    frontier_reading: str
    frontier_chart: Chart | None
    charts: tuple[Chart, ...]
    chart_note: str
    baseline: BaselineSection | None
    provenance: tuple[str, ...]
    scenarios: Table
    replicates: ReplicateSection | None = None

    @property
    def title(self) -> str:
        """The report's title line under the heading: run id and configuration."""
        run = self.summary.get("run")
        label = self.summary.get("config_label")
        pooled = pooled_records(self.summary)
        probes = int(pooled[0].get("probes") or 0) if pooled else 0
        parts = [f"run {run}" if run else "", f"configuration {label}" if label else ""]
        parts.append(f"{probes:,} probes per configuration" if probes else "")
        return "; ".join(p for p in parts if p)

    @property
    def frontier_note(self) -> str:
        """How the frontier is built."""
        return FRONTIER_NOTE


def gather(
    summary: Mapping[str, Any],
    probes: Sequence[Mapping[str, Any]] | None,
    charts: Sequence[Chart],
    chart_note: str,
    baseline: BaselineSection | None = None,
) -> ReportParts:
    """Compute every part of the report of ``summary`` (``probes``: results.jsonl rows)."""
    points = frontier(pooled_records(summary))
    header, rows = frontier_table(points)
    chart = next((c for c in charts if c.path.name == FRONTIER_CHART), None)
    said = [note for note in (summary_model_note(summary), recall_cap_run_note(summary)) if note]
    return ReportParts(
        summary=summary,
        recommendation=recommend(summary, probes),
        headline=headline_table(summary),
        notes=(INTERVAL_NOTE, *said),
        by_suite=suite_table(summary),
        by_kind=kind_table(probes),
        checks=tuple(run_checks(summary, probes)),
        frontier=Table(header, rows),
        frontier_reading=frontier_reading(points),
        frontier_chart=chart,
        charts=tuple(c for c in charts if c is not chart),
        chart_note=chart_note,
        baseline=baseline,
        provenance=tuple(provenance_lines(summary)),
        scenarios=scenario_table(summary),
        replicates=replicate_section(summary),
    )
