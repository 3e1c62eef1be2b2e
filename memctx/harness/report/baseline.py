"""The report's "Against the baseline" section: this run's deltas against another run.

The deltas, their intervals and the noise rule are :func:`memctx.harness.deltas.compare_runs`'
(the same ones ``memctx compare`` and the gate use); this module picks the metrics a report
shows, sums up what moved beyond noise in a sentence or two, and renders the section with
:mod:`memctx.harness.deltas_render`. The section opens with the same one-line verdict as
``memctx compare``. A baseline that did not play the same scenarios
(:func:`memctx.harness.comparability.run_differences`) gets no tables: the section says
"cannot compare", names each difference with its fix, and how to compare anyway.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..comparability import Comparability, run_differences
from ..deltas import Delta, Verdict, compare_runs, comparison_notes, verdict_of
from ..deltas_render import (
    format_deltas_html,
    format_deltas_md,
    paired_note,
    verdict_html,
    verdict_md,
)
from ..runs import read_summary
from .checks import pair_label
from .loading import RunDirError

__all__ = [
    "BASELINE_METRICS",
    "BaselineSection",
    "baseline_html",
    "baseline_md",
    "baseline_section",
    "read_baseline",
]

# The metrics the section tabulates: what decides (accuracy) and what it costs.
BASELINE_METRICS = ("recall_accuracy", "tool_accuracy", "tokens_per_call", "cost_per_call")
_BEFORE, _AFTER = "baseline", "this run"
_SHOWN = 4  # rows named at most per sentence


@dataclass(frozen=True)
class BaselineSection:
    """What the report says about a baseline.

    Attributes:
        name: How the baseline is named in the report (its run id or path).
        deltas: One per row both runs have.
        notes: Rows of only one run, and how pooled rows were paired.
        findings: Sentences: which shares moved beyond noise, which did not.
        verdict: The one line the section opens with.
        refusal: Why the two runs are not compared, one item per line (then there are no
            deltas); empty when they are.
        setup: What differs between the runs' setups (:func:`run_differences`).
    """

    name: str
    deltas: tuple[Delta, ...]
    notes: tuple[str, ...]
    findings: tuple[str, ...]
    verdict: Verdict
    refusal: tuple[str, ...] = ()
    setup: Comparability | None = None


def read_baseline(spec: str | Path) -> tuple[dict[str, Any], str]:
    """The baseline's summary and its name: a summary JSON, a run folder, a run id or
    ``latest``.

    Raises:
        RunDirError: Nothing there, or not a run summary (the message says what to pass).
    """
    try:
        summary = read_summary(spec, what="baseline")
    except ValueError as exc:
        raise RunDirError(str(exc)) from None
    return summary, str(summary.get("run") or spec)


def _row(delta: Delta) -> str:
    where = "all suites" if delta.pooled else delta.suite
    return f"{pair_label(delta.strategy, delta.embedding)} in {where}"


def _moved(deltas: Sequence[Delta], metric: str, verdict: str) -> list[str]:
    out = []
    for delta in deltas:
        change = delta.change(metric)
        if change and change.significant and change.verdict == verdict and change.delta:
            out.append(f"{_row(delta)} ({100 * change.delta:+.1f} points)")
    return out


def _findings(deltas: Sequence[Delta]) -> list[str]:
    out = []
    for metric, title in (
        ("recall_accuracy", "Recall accuracy"),
        ("tool_accuracy", "Tool accuracy"),
    ):
        judged = [d for d in deltas if (c := d.change(metric)) and c.significant is not None]
        if not judged:
            continue
        worse, better = _moved(judged, metric, "worse"), _moved(judged, metric, "better")
        if not worse and not better:
            out.append(
                f"{title}: no change beyond noise in any of the {len(judged)} rows compared."
            )
            continue
        parts = []
        for said, rows in (("fell", worse), ("rose", better)):
            if rows:
                more = f" and {len(rows) - _SHOWN} more" if len(rows) > _SHOWN else ""
                parts.append(
                    f"{said} beyond noise in {len(rows)} row(s): {', '.join(rows[:_SHOWN])}{more}"
                )
        rest = len(judged) - len(worse) - len(better)
        out.append(f"{title} {'; '.join(parts)}; within noise in the other {rest}.")
    return out


def baseline_section(
    run: Mapping[str, Any],
    baseline: Mapping[str, Any],
    name: str,
    *,
    probes: tuple[Iterable[Mapping[str, Any]], Iterable[Mapping[str, Any]]] | None = None,
    allow_different_scenarios: bool = False,
) -> BaselineSection:
    """Compare ``run`` with ``baseline`` (both summaries) for the report; ``probes``, the
    baseline's probe rows then the run's, pair the shares probe by probe. Runs that did not
    play the same scenarios are not compared unless ``allow_different_scenarios``."""
    setup = run_differences(baseline, run)  # "the baseline", "this run"
    if not setup.comparable and not allow_different_scenarios:
        verdict = verdict_of([], setup=setup)
        return BaselineSection(name, (), (), (), verdict, tuple(setup.refusal_lines()), setup=setup)
    deltas = compare_runs(baseline, run, BASELINE_METRICS, probes=probes)
    notes = [
        *setup.lines(),
        *comparison_notes(baseline, run, before_name=_BEFORE, after_name=_AFTER),
    ]
    notes.append(paired_note(deltas))
    verdict = verdict_of(
        deltas,
        before=setup.before,
        after=setup.after,
        setup=setup,
        allowed=allow_different_scenarios,
    )
    return BaselineSection(
        name, tuple(deltas), tuple(notes), tuple(_findings(deltas)), verdict, setup=setup
    )


def _intro(section: BaselineSection) -> str:
    return (
        f"This run against {section.name}: per suite × strategy × embedding, the baseline's "
        "value, this run's and the change; * marks a change beyond noise."
    )


def _refused(section: BaselineSection) -> str:
    return (
        f"This run is not compared with {section.name}: the two did not play the same "
        "scenarios, so their figures would differ for reasons other than quality."
    )


def baseline_md(section: BaselineSection) -> str:
    """The section as Markdown (its ``##`` heading included)."""
    opening = verdict_md(section.verdict)
    if section.refusal:
        items = "\n".join(f"- {line}" for line in section.refusal)
        return "\n\n".join(("## Against the baseline", opening, _refused(section), items))
    findings = "\n".join(f"- {line}" for line in section.findings)
    tables = format_deltas_md(
        section.deltas, section.notes, before=_BEFORE, after=_AFTER, level=3
    ).rstrip()
    return "\n\n".join(
        part
        for part in ("## Against the baseline", opening, _intro(section), findings, tables)
        if part
    )


def baseline_html(section: BaselineSection) -> str:
    """The section as HTML (its ``<h2>`` included); styled by the page's deltas CSS."""
    opening = f'<div class="memctx-deltas">{verdict_html(section.verdict)}</div>'
    if section.refusal:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in section.refusal)
        return (
            f"<h2>Against the baseline</h2>{opening}<p>{html.escape(_refused(section))}</p>"
            f"<ul>{items}</ul>"
        )
    findings = "".join(f"<li>{html.escape(line)}</li>" for line in section.findings)
    table = format_deltas_html(section.deltas, section.notes, before=_BEFORE, after=_AFTER)
    return (
        f"<h2>Against the baseline</h2>{opening}<p>{html.escape(_intro(section))}</p>"
        + (f"<ul>{findings}</ul>" if findings else "")
        + table
    )
