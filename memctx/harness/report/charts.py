"""PNG charts of one evaluation run (matplotlib, Agg, byte-stable output).

The charts themselves live in :mod:`.chart_points` (the frontier, tokens against accuracy),
:mod:`.chart_bars` (cost, accuracy by suite, hash against transformer, latency) and
:mod:`.chart_session` (one session over time), their shared pieces in :mod:`.figures`;
:func:`write_charts` draws every one the run's data allows. matplotlib is imported only when
a chart is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..schema import all_records
from .chart_bars import by_suite_chart, cost_chart, hash_vs_transformer_chart, latency_chart
from .chart_points import frontier_chart, recall_vs_tokens_chart
from .chart_session import LONG_SUITE, pick_session, session_calls, tokens_over_calls_chart
from .checks import pairs
from .figures import Chart, colours_for, new_figure, save_figure
from .frontier import FRONTIER_CHART

__all__ = [
    "CHART_NAMES",
    "LONG_SUITE",
    "Chart",
    "new_figure",
    "pick_session",
    "save_figure",
    "session_calls",
    "write_charts",
]

# Every chart's file name, in report order.
CHART_NAMES = (
    "recall_vs_tokens.png",
    "cost.png",
    FRONTIER_CHART,
    "accuracy_by_suite.png",
    "hash_vs_transformer.png",
    "hook_latency.png",
    "tokens_over_calls.png",
)


def write_charts(
    summary: Mapping[str, Any],
    session: Sequence[Mapping[str, Any]],
    out_dir: Path,
) -> list[Chart]:
    """Write every chart the run's data allows into ``out_dir``.

    Args:
        summary: The run's ``summary.json``.
        session: Call rows of the session to plot over time (see :func:`pick_session`).
        out_dir: Folder for the PNGs (created).

    Returns:
        The charts written, in report order (charts without data are left out; a file an
        earlier render left for one of them is removed).
    """
    from matplotlib import rc_context

    out_dir.mkdir(parents=True, exist_ok=True)
    colours = colours_for(pairs(all_records(summary)))
    drawers = (
        recall_vs_tokens_chart,
        cost_chart,
        frontier_chart,
        by_suite_chart,
        hash_vs_transformer_chart,
        latency_chart,
    )
    # Fixed fonts, sizes and hash salt: the same data gives the same bytes.
    with rc_context(
        {
            "svg.hashsalt": "memctx",
            "font.family": "DejaVu Sans",
            "font.size": 10,
            "axes.titlesize": 12,
            "axes.titleweight": "bold",
            "axes.grid": True,
            "axes.grid.axis": "y",
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    ):
        charts = [
            draw(summary, colours, out_dir / name)
            for draw, name in zip(drawers, CHART_NAMES, strict=False)
        ]
        charts.append(tokens_over_calls_chart(session, colours, out_dir / CHART_NAMES[-1]))
    written = [c for c in charts if c is not None]
    for stale in set(CHART_NAMES) - {c.path.name for c in written}:
        (out_dir / stale).unlink(missing_ok=True)  # left by an earlier render
    return written
