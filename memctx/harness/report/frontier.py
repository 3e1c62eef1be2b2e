"""The cost-versus-accuracy frontier of a run: which configurations are worth their cost.

A configuration (strategy × embedding) is *dominated* when another one is at least as
accurate for no more cost per model call, and strictly better on one of the two; the ones no
other configuration dominates form the (Pareto) frontier. Only configurations whose recall
accuracy is measured over every probe are compared: ``full`` is scored on the probes whose
context fits its window only, a different and easier set, so it is reported as not
comparable instead of being placed on (or under) the frontier.

Dominance compares point estimates; the confidence intervals are carried for the chart and
the table, not used in the rule. Everything here is pure (no I/O, no matplotlib), the
layout of the chart's labels included: display coordinates in, label spots out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

from .checks import ALL, pair_label

__all__ = [
    "FRONTIER_CHART",
    "FRONTIER_NOTE",
    "Box",
    "FrontierPoint",
    "Spot",
    "frontier",
    "frontier_reading",
    "frontier_table",
    "place_labels",
    "point_ends",
    "step_corners",
]

FRONTIER_CHART = "frontier.png"  # the chart's file name in the run's charts/ folder
FRONTIER_NOTE = (
    "Cost per model call against recall accuracy, all suites. A configuration is dominated "
    "when another is at least as accurate for no more cost and better on one of the two; "
    "the ones not dominated form the frontier."
)
XY = tuple[float, float]
Box = tuple[float, float, float, float]  # left, bottom, right, top (display pixels)
# Where a label goes: from the point or an end of its error bar ("point", "low", "high"),
# offset (dx, dy) in points, and its alignment (ha, va) there.
Spot = tuple[str, float, float, str, str]


@dataclass(frozen=True)
class FrontierPoint:
    """One configuration of a run, placed against the others on cost and accuracy.

    Attributes:
        strategy: The strategy, e.g. ``"memory-context"``.
        embedding: Its embedder, ``"none"`` when the strategy does not search.
        cost_per_call: Total cost over the number of model calls (USD); None if unknown.
        cost_usd: Total cost of the configuration over every call of the run (USD).
        recall_accuracy: Share of probes whose context holds an expected answer.
        recall_accuracy_ci: The 95 % interval of ``recall_accuracy``, or None.
        on_frontier: True when no comparable configuration dominates this one.
        dominated_by: The label of the cheapest configuration that dominates this one (the
            most accurate of the cheapest, then by name), None when it is not dominated.
        excluded: Why the configuration is not comparable (then it is neither on the
            frontier nor dominated), None when it is compared.
    """

    strategy: str
    embedding: str
    cost_per_call: float | None
    cost_usd: float | None
    recall_accuracy: float | None
    recall_accuracy_ci: tuple[float, float] | None
    on_frontier: bool
    dominated_by: str | None
    excluded: str | None

    @property
    def label(self) -> str:
        """``"memory-context × hash"``, or the strategy alone when it does not search."""
        return pair_label(self.strategy, self.embedding)

    @property
    def status(self) -> str:
        """``"on the frontier"``, ``"dominated by X"`` or ``"not comparable: reason"``."""
        if self.excluded is not None:
            return f"not comparable: {self.excluded}"
        if self.dominated_by is not None:
            return f"dominated by {self.dominated_by}"
        return "on the frontier"


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _ci(value: Any) -> tuple[float, float] | None:
    if isinstance(value, list | tuple) and len(value) == 2:
        low, high = _num(value[0]), _num(value[1])
        if low is not None and high is not None:
            return (low, high)
    return None


def _exclusion(record: Mapping[str, Any], cost: float | None, calls: float | None) -> str | None:
    """Why ``record`` cannot be compared with the others, or None when it can."""
    fit, probes = _num(record.get("fit")), _num(record.get("probes"))
    if fit is not None and probes is not None and fit < probes:
        return f"accuracy over {fit:,.0f} of {probes:,.0f} probes only"
    if _num(record.get("recall_accuracy")) is None:
        return "no recall accuracy"
    if cost is None:
        return "no cost"
    if calls is None or calls <= 0:
        return "no model calls"
    return None


def _dominates(a: FrontierPoint, b: FrontierPoint) -> bool:
    """``a`` is at least as accurate for no more cost per call, strictly better on one."""
    assert a.cost_per_call is not None and a.recall_accuracy is not None
    assert b.cost_per_call is not None and b.recall_accuracy is not None
    no_worse = a.cost_per_call <= b.cost_per_call and a.recall_accuracy >= b.recall_accuracy
    better = a.cost_per_call < b.cost_per_call or a.recall_accuracy > b.recall_accuracy
    return no_worse and better


def _order(point: FrontierPoint) -> tuple[bool, float, str]:
    return (point.cost_per_call is None, point.cost_per_call or 0.0, point.label)


def frontier(records: Iterable[Mapping[str, Any]]) -> tuple[FrontierPoint, ...]:
    """Place every configuration of a run on the cost-versus-accuracy frontier.

    Args:
        records: The run's pooled records (``suite == "all"``), one per strategy ×
            embedding, with ``cost_usd``, ``calls``, ``recall_accuracy``,
            ``recall_accuracy_ci``, ``fit`` and ``probes``. Per-suite records are ignored.

    Returns:
        One point per configuration, ordered by cost per call (unknown last), then label.
        A record with ``fit < probes``, or without an accuracy, a cost or any call, is
        ``excluded`` with the reason; the others are on the frontier or dominated. Two
        configurations with the same cost and accuracy do not dominate each other.
    """
    pooled = {
        (str(r["strategy"]), str(r["embedding"])): r
        for r in records
        if str(r.get("suite", "")) == ALL
    }
    points: list[FrontierPoint] = []
    for (strategy, embedding), record in pooled.items():
        cost, calls = _num(record.get("cost_usd")), _num(record.get("calls"))
        per_call = cost / calls if cost is not None and calls else None
        points.append(
            FrontierPoint(
                strategy=strategy,
                embedding=embedding,
                cost_per_call=per_call,
                cost_usd=cost,
                recall_accuracy=_num(record.get("recall_accuracy")),
                recall_accuracy_ci=_ci(record.get("recall_accuracy_ci")),
                on_frontier=False,
                dominated_by=None,
                excluded=_exclusion(record, cost, calls),
            )
        )
    compared = [p for p in points if p.excluded is None]
    placed: list[FrontierPoint] = []
    for point in points:
        if point.excluded is not None:
            placed.append(point)
            continue
        better = [other for other in compared if _dominates(other, point)]
        best = min(
            better,
            key=lambda o: (o.cost_per_call, -(o.recall_accuracy or 0.0), o.label),
            default=None,
        )
        dominator = None if best is None else best.label
        placed.append(replace(point, on_frontier=best is None, dominated_by=dominator))
    return tuple(sorted(placed, key=_order))


def _usd(value: float | None, places: int) -> str:
    return "n/a" if value is None else f"${value:,.{places}f}"


def _accuracy(point: FrontierPoint) -> str:
    if point.recall_accuracy is None:
        return "n/a"
    text = f"{100 * point.recall_accuracy:.1f} %"
    if point.recall_accuracy_ci is not None:
        low, high = point.recall_accuracy_ci
        text += f" ({100 * low:.1f}–{100 * high:.1f})"
    return text


def frontier_table(
    points: Sequence[FrontierPoint],
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """The report's frontier table as strings: its header and one row per point."""
    header = (
        "configuration",
        "cost per call",
        "total cost",
        "recall accuracy (95 % CI)",
        "frontier",
    )
    rows = tuple(
        (
            p.label,
            _usd(p.cost_per_call, 5),
            _usd(p.cost_usd, 4),
            _accuracy(p),
            p.status,
        )
        for p in points
    )
    return header, rows


def frontier_reading(points: Sequence[FrontierPoint]) -> str:
    """One plain sentence: the configurations no other dominates, cheapest first."""
    best = [p.label for p in points if p.on_frontier]
    if not best:
        return "No configuration can be compared on cost and accuracy in this run."
    return f"Not dominated: {', '.join(best)}."


# --- label layout for charts/frontier.png (pure: display pixels in, spots out) -----------

# The first embedder of a strategy tries below first, the second above, so two embedders at
# one point (meerkat × hash and × transformer differ in tool hits, not in context) part
# ways; past the bar's end when the others' bars are in the way; a lone strategy tries the
# side first.
_BELOW: tuple[Spot, ...] = (
    ("point", 9, -7, "left", "top"),
    ("point", -9, -7, "right", "top"),
    ("low", 6, -3, "left", "top"),
    ("low", -6, -3, "right", "top"),
)
_ABOVE: tuple[Spot, ...] = (
    ("point", 9, 7, "left", "bottom"),
    ("point", -9, 7, "right", "bottom"),
    ("high", 6, 3, "left", "bottom"),
    ("high", -6, 3, "right", "bottom"),
)
_SIDE: tuple[Spot, ...] = (("point", 9, 0, "left", "center"), ("point", -9, 0, "right", "center"))
# What covering each thing costs a label: another label, a marker or the legend most, an
# error bar less, the step line least; each spot further down the list costs a little.
_HEAVY, _BAR, _LINE, _RANK, _OUTSIDE = 4.0, 2.0, 1.0, 0.25, 100.0


def point_ends(point: FrontierPoint) -> dict[str, XY]:
    """The point (cost per call, accuracy in %) and the ends of its error bar."""
    acc, cost = point.recall_accuracy or 0.0, point.cost_per_call or 0.0
    low, high = point.recall_accuracy_ci or (acc, acc)
    return {"point": (cost, 100 * acc), "low": (cost, 100 * low), "high": (cost, 100 * high)}


def step_corners(points: Sequence[XY]) -> list[XY]:
    """The corners of a step line through ``points`` (sorted by x): across, then up."""
    corners: list[XY] = []
    for x, y in points:
        if corners:
            corners.append((x, corners[-1][1]))
        corners.append((x, y))
    return corners


def _spots(rank: int, count: int) -> tuple[Spot, ...]:
    if count == 1:
        return _SIDE + _ABOVE + _BELOW
    return _BELOW + _ABOVE + _SIDE if rank % 2 == 0 else _ABOVE + _BELOW + _SIDE


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _label_box(at: XY, text: str, spot: Spot, scale: float, font_pt: float) -> Box:
    """The box of ``text`` at ``spot`` from ``at`` (its size estimated, nothing drawn)."""
    _, dx, dy, ha, va = spot
    width, height = 0.6 * font_pt * len(text) * scale, 1.25 * font_pt * scale
    left = at[0] + dx * scale - {"left": 0.0, "center": width / 2, "right": width}[ha]
    bottom = at[1] + dy * scale - {"bottom": 0.0, "center": height / 2, "top": height}[va]
    return (left, bottom, left + width, bottom + height)


def _obstacles(
    points: Sequence[FrontierPoint], to_display: Callable[[XY], XY], scale: float
) -> list[tuple[Box, float]]:
    """Markers, error bars and step-line segments as display boxes, with their weights."""
    out: list[tuple[Box, float]] = []
    for p in points:
        ends = {name: to_display(xy) for name, xy in point_ends(p).items()}
        (x, y), low, high = ends["point"], ends["low"][1], ends["high"][1]
        out.append(((x - 7 * scale, y - 7 * scale, x + 7 * scale, y + 7 * scale), _HEAVY))
        out.append(((x - 5 * scale, low - 2 * scale, x + 5 * scale, high + 2 * scale), _BAR))
    best = [point_ends(p)["point"] for p in points if p.on_frontier]
    line = [to_display(corner) for corner in step_corners(best)]
    pad = 1.5 * scale
    for (xa, ya), (xb, yb) in pairwise(line):
        box = (min(xa, xb) - pad, min(ya, yb) - pad, max(xa, xb) + pad, max(ya, yb) + pad)
        out.append((box, _LINE))
    return out


def place_labels(
    points: Sequence[FrontierPoint],
    to_display: Callable[[XY], XY],
    frame: Box,
    legend: Box | None,
    scale: float,
    font_pt: float,
) -> dict[tuple[str, str], Spot]:
    """Where to put each point's label so that it covers as little as it can.

    Labels are placed in ``points`` order, each at the spot of least cost: what it covers
    (labels already placed, markers and the legend weigh most, error bars less, the step
    line of the frontier least), plus a little per spot down its list so that a label stays
    near its point, plus a lot if it leaves ``frame``.

    Args:
        points: The drawn (comparable) points.
        to_display: Data coordinates (cost per call, accuracy in %) to display pixels.
        frame: The axes' box in display pixels.
        legend: The legend's box in display pixels, or None.
        scale: Display pixels per point (dpi / 72).
        font_pt: The labels' font size in points.

    Returns:
        The spot per (strategy, embedding).
    """
    taken = _obstacles(points, to_display, scale)
    if legend is not None:
        taken.append((legend, _HEAVY))
    by_strategy: dict[str, list[str]] = {}
    for p in points:
        by_strategy.setdefault(p.strategy, []).append(p.embedding)
    out: dict[tuple[str, str], Spot] = {}
    for p in points:
        embeddings = sorted(by_strategy[p.strategy])
        spots = _spots(embeddings.index(p.embedding), len(embeddings))
        ends = {name: to_display(xy) for name, xy in point_ends(p).items()}
        boxes = [_label_box(ends[s[0]], p.label, s, scale, font_pt) for s in spots]
        costs = [
            i * _RANK
            + sum(weight for t, weight in taken if _overlaps(box, t))
            + (0.0 if frame[0] <= box[0] and box[2] <= frame[2] and frame[1] <= box[1]
               and box[3] <= frame[3] else _OUTSIDE)
            for i, box in enumerate(boxes)
        ]  # fmt: skip
        pick = min(range(len(spots)), key=costs.__getitem__)
        out[(p.strategy, p.embedding)] = spots[pick]
        taken.append((boxes[pick], _HEAVY))
    return out
