"""The report's scatter charts: cost per call against recall accuracy (the frontier) and
tokens per call against recall accuracy.

Markers that would overlap are set side by side (:func:`.labels.dodge`), so the hash and
transformer runs of one strategy stay visible when they score alike; the frontier's labels
are placed by :func:`.labels.place_labels` with their measured sizes, never over one another.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..schema import NO_EMBEDDING, all_records
from .checks import pair_label
from .figures import Chart, Pair, marker_for, new_figure, pooled_by_pair, save_figure
from .frontier import FrontierPoint, frontier, point_ends, step_corners
from .intervals import share_of
from .labels import LEADER_PT, dodge, place_labels

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation

__all__ = ["FrontierDrawing", "draw_frontier", "frontier_chart", "recall_vs_tokens_chart"]

LABEL_PT = 8  # the frontier chart's point labels
MARKER_PT = 9
_DODGED = (
    " Markers closer than their size are set side by side (shifted a few pixels along the "
    "cost axis) so that none hides another."
)


@dataclass(frozen=True)
class FrontierDrawing:
    """The frontier chart before it is saved, for tests that look at its layout.

    Attributes:
        figure: The figure.
        labels: One annotation per drawn configuration.
        markers: Each configuration's marker centre in display pixels.
        points: Every configuration, comparable or not.
        dodged: True when markers were set side by side.
    """

    figure: Figure
    labels: list[Annotation]
    markers: dict[Pair, tuple[float, float]]
    points: tuple[FrontierPoint, ...]
    dodged: bool


def _shifted(ax: Axes, centres: Mapping[Pair, tuple[float, float]]) -> dict[Pair, float]:
    """The x (data coordinates) of each marker of ``centres`` once overlapping ones are set
    side by side; a marker that overlaps nothing keeps its x."""
    scale = ax.figure.dpi / 72
    display = {k: tuple(ax.transData.transform(xy)) for k, xy in centres.items()}
    pixels = dodge({k: (float(x), float(y)) for k, (x, y) in display.items()}, MARKER_PT * scale)
    back = ax.transData.inverted()
    return {
        k: float(back.transform((display[k][0] + shift, display[k][1]))[0]) if shift else xy[0]
        for (k, xy), shift in ((item, pixels[item[0]]) for item in centres.items())
    }


def _cost_axis(ax: Axes, costs: Sequence[float]) -> bool:
    """Scale the cost axis: logarithmic when the costs span 3x or more (a cluster of cheap
    configurations stays readable beside a dear one); True when it is."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    low, high = min(costs), max(costs)
    if low > 0 and high / low >= 3:
        ax.set_xscale("log")
        ax.set_xlim(low / 1.35, high * 1.35)
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
        ax.xaxis.set_minor_locator(LogLocator(base=10, subs=(1.2, 2.5, 4.0, 6.0, 8.0, 9.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"${v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        return True
    ax.set_xlim(0, high * 1.25)
    return False


def _errorbar(
    ax: Axes, x: float, y: float, low: float, high: float, colour: Any, **style: Any
) -> None:
    ax.errorbar(
        x,
        y,
        yerr=[[max(0.0, y - low)], [max(0.0, high - y)]],
        ms=MARKER_PT,
        capsize=4,
        elinewidth=1.2,
        color=colour,
        zorder=3,
        **style,
    )


def _key(ax: Axes, embeddings: Sequence[str]) -> Any:
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], marker="o", ls="", color="dimgray", ms=8, label="on the frontier"),
        Line2D([], [], marker="o", ls="", color="dimgray", mfc="white", ms=8, label="dominated"),
        Line2D([], [], color="black", alpha=0.6, label="frontier (step)"),
    ]
    handles += [
        Line2D(
            [],
            [],
            marker=marker_for(e),
            ls="",
            color="dimgray",
            ms=7,
            label="no embedding" if e == NO_EMBEDDING else f"embedding {e}",
        )
        for e in embeddings
    ]
    # Outside the axes, right of them: a legend inside could hide a point.
    return ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False
    )


def draw_frontier(
    summary: Mapping[str, Any], colours: Mapping[Pair, Any]
) -> FrontierDrawing | None:
    """The cost-versus-accuracy chart, drawn but not saved; None when nothing is comparable."""
    points = frontier(all_records(summary))
    drawn = [p for p in points if p.excluded is None]
    if not drawn:
        return None
    fig = new_figure(10, 5.6)
    ax = fig.add_subplot()
    ax.grid(True, axis="both")
    log = _cost_axis(ax, [p.cost_per_call or 0.0 for p in drawn])
    ax.set_ylim(0, 105)
    ax.set_xlabel(
        "Cost per model call (USD): answering model + LLM work" + (", log scale" if log else "")
    )
    ax.set_ylabel("Recall accuracy (%), bars: 95 % interval")
    ax.set_title("Cost vs recall accuracy: the frontier")
    legend = _key(ax, list(dict.fromkeys(p.embedding for p in drawn)))
    fig.draw_without_rendering()  # lay the figure out: display coordinates are final
    shifts = _shifted(ax, {(p.strategy, p.embedding): point_ends(p)["point"] for p in drawn})
    placed = [replace(p, cost_per_call=shifts[(p.strategy, p.embedding)]) for p in drawn]
    for p in placed:
        ends = point_ends(p)
        colour = colours.get((p.strategy, p.embedding), "tab:gray")
        (x, y), low, high = ends["point"], ends["low"][1], ends["high"][1]
        _errorbar(
            ax, x, y, low, high, colour, fmt=marker_for(p.embedding), mew=1.8,
            mfc=colour if p.on_frontier else "white",
        )  # fmt: skip
    corners = step_corners([point_ends(p)["point"] for p in placed if p.on_frontier])
    ax.plot([x for x, _ in corners], [y for _, y in corners], color="black", lw=1.2, alpha=0.6)
    sizes = {}
    for p in placed:
        probe = ax.text(0, 0, p.label, fontsize=LABEL_PT, weight="bold" if p.on_frontier else None)
        box = probe.get_window_extent()
        sizes[(p.strategy, p.embedding)] = (float(box.width) + 2, float(box.height) + 2)
        probe.remove()

    def display(xy: tuple[float, float]) -> tuple[float, float]:
        x, y = ax.transData.transform(xy)
        return float(x), float(y)

    frame, key = ax.get_window_extent(), legend.get_window_extent()
    spots = place_labels(
        placed,
        display,
        (frame.x0, frame.y0, frame.x1, frame.y1),
        (key.x0, key.y0, key.x1, key.y1),
        fig.dpi / 72,
        LABEL_PT,
        sizes,
    )
    labels = []
    for p in placed:
        anchor, dx, dy, ha, va = spots[(p.strategy, p.embedding)]
        colour = colours.get((p.strategy, p.embedding), "tab:gray")
        far = math.hypot(dx, dy) > LEADER_PT
        label = ax.annotate(
            p.label,
            point_ends(p)[anchor],
            xytext=(dx, dy),
            textcoords="offset points",
            ha=ha,
            va=va,
            fontsize=LABEL_PT,
            weight="bold" if p.on_frontier else None,
            color=colour,
            arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.7} if far else None,
            # A light backing: a grid or step line behind a label never cuts through it.
            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85},
            zorder=4,
        )
        label.set_in_layout(False)
        labels.append(label)
    markers = {(p.strategy, p.embedding): display(point_ends(p)["point"]) for p in placed}
    dodged = any(p.cost_per_call != q.cost_per_call for p, q in zip(placed, drawn, strict=True))
    return FrontierDrawing(fig, labels, markers, points, dodged)


def frontier_chart(
    summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path
) -> Chart | None:
    """Write the frontier chart to ``path``; None when no configuration is comparable."""
    drawing = draw_frontier(summary, colours)
    if drawing is None:
        return None
    left_out = [f"{p.label} ({p.excluded})" for p in drawing.points if p.excluded is not None]
    return Chart(
        save_figure(drawing.figure, path),
        "Cost vs recall accuracy: the frontier",
        "Up and to the left is better. Filled markers and bold labels: on the frontier (no "
        "other configuration is as accurate for less), joined by the step line; hollow: "
        "dominated. Dominance compares the point estimates; the bars are 95 % intervals."
        + (_DODGED if drawing.dodged else "")
        + (f" Not drawn, not comparable: {'; '.join(left_out)}." if left_out else ""),
    )


def recall_vs_tokens_chart(
    summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path
) -> Chart | None:
    """Write tokens per call against recall accuracy to ``path``; None without data."""
    points: dict[Pair, tuple[float, float, float, float]] = {}
    for pair, record in pooled_by_pair(summary).items():
        share, tokens = share_of(record), record.get("tokens_per_call")
        if share.known and isinstance(tokens, int | float):
            assert share.value is not None and share.low is not None and share.high is not None
            points[pair] = (tokens / 1000, 100 * share.value, 100 * share.low, 100 * share.high)
    if not points:
        return None
    fig = new_figure(10, 5)
    ax = fig.add_subplot()
    ax.grid(True, axis="both")
    ax.set_xlim(0, max(1.0, *(x for x, *_ in points.values())) * 1.1)
    ax.set_ylim(0, 105)
    ax.set_xlabel("Mean input tokens per model call (thousands)")
    ax.set_ylabel("Recall accuracy (%), bars: 95 % interval")
    ax.set_title("Recall accuracy vs tokens per call (all suites)")
    from matplotlib.lines import Line2D

    handles = [
        Line2D(
            [],
            [],
            marker=marker_for(pair[1]),
            ls="",
            ms=8,
            color=colours[pair],
            label=f"{pair_label(*pair)}{' (fitted probes)' if pair[0] == 'full' else ''}: "
            f"{y:.1f} % at {x:,.1f}k",
        )
        for pair, (x, y, _, _) in points.items()
    ]
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False
    )
    fig.draw_without_rendering()  # the legend is in: display coordinates are final
    shifts = _shifted(ax, {pair: (x, y) for pair, (x, y, _, _) in points.items()})
    for pair, (_, y, low, high) in points.items():
        _errorbar(ax, shifts[pair], y, low, high, colours[pair], fmt=marker_for(pair[1]))
    dodged = any(shifts[pair] != x for pair, (x, *_) in points.items())
    return Chart(
        save_figure(fig, path),
        "Recall accuracy vs tokens per call",
        "Up and to the left is better: more answers in context for fewer tokens. Bars: 95 % "
        "intervals." + (_DODGED.replace("cost", "token") if dodged else ""),
    )
