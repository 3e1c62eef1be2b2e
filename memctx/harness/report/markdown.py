"""``report.md``: the report's parts (:class:`.parts.ReportParts`) as Markdown."""

from __future__ import annotations

from .baseline import baseline_md
from .figures import Chart
from .parts import HEADLINE_NOTE, KIND_NOTE, NOTHING_POOLED, SUITE_NOTE, ReportParts
from .replicates import REPLICATE_SUITE_NOTE, ReplicateSection
from .tables import md_table

__all__ = ["CHARTS_DIR", "report_markdown"]

CHARTS_DIR = "charts"


def _figure(chart: Chart, heading: bool) -> str:
    image = f"![{chart.title}]({CHARTS_DIR}/{chart.path.name})\n\n{chart.caption}"
    return f"### {chart.title}\n\n{image}" if heading else image


def _recommendation(parts: ReportParts) -> str:
    reco = parts.recommendation
    lines = [f"**{reco.headline}**" if reco.pick else reco.headline, ""]
    lines += [f"- {line}" for line in reco.details]
    if reco.caveats:
        lines += ["", "Caveats:", ""] + [f"- {line}" for line in reco.caveats]
    return "\n".join(lines).strip()


def _replicates(section: ReplicateSection) -> list[str]:
    return [
        "## Across replicates",
        "\n\n".join(section.notes),
        md_table(section.pooled),
        section.largest,
        REPLICATE_SUITE_NOTE,
        md_table(section.by_suite),
    ]


def report_markdown(parts: ReportParts) -> str:
    """The whole ``report.md`` (without the real-data section, appended by the caller)."""
    frontier = [
        "## Cost vs accuracy frontier",
        parts.frontier_note,
        *([_figure(parts.frontier_chart, False)] if parts.frontier_chart else []),
        md_table(parts.frontier),
        parts.frontier_reading,
    ]
    sections = [
        "# memctx evaluation report",
        *([parts.title] if parts.title else []),
        "## Recommendation",
        _recommendation(parts),
        "## All suites",
        HEADLINE_NOTE,
        md_table(parts.headline) if parts.headline.rows else NOTHING_POOLED,
        "\n\n".join(parts.notes),
        *([baseline_md(parts.baseline)] if parts.baseline else []),
        "## Recall accuracy by suite",
        SUITE_NOTE,
        md_table(parts.by_suite),
        *(
            ["## Recall accuracy by probe kind", KIND_NOTE, md_table(parts.by_kind)]
            if parts.by_kind.rows
            else []
        ),
        *(_replicates(parts.replicates) if parts.replicates else []),
        "## Checks",
        "\n".join(f"- **{c.verdict}**: {c.text}" for c in parts.checks),
        *frontier,
        "## Charts",
        "\n\n".join(_figure(c, True) for c in parts.charts) or parts.chart_note,
        "## Provenance",
        "\n".join(f"- {line}" for line in parts.provenance),
        md_table(parts.scenarios),
    ]
    return "\n\n".join(s for s in sections if s) + "\n"
