"""The cost-versus-accuracy frontier of a run: which configurations are worth their cost.

A configuration (strategy × embedding) is *dominated* when another one is at least as
accurate for no more cost per model call, and strictly better on one of the two; the ones no
other configuration dominates form the (Pareto) frontier. Only configurations whose recall
accuracy is measured over every probe are compared: ``full`` is scored on the probes whose
context fits its window only, a different and easier set, so it is reported as not
comparable instead of being placed on (or under) the frontier.

Dominance compares point estimates; the 95 % intervals (:mod:`.intervals`, over the
probes each accuracy is of) are carried for the chart, the table and the recommendation,
not used in the rule. Everything here is pure (no I/O, no matplotlib); the layout of the
chart's labels is :mod:`.labels`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .cells import num, usd
from .checks import ALL, pair_label
from .intervals import Share, share_of

__all__ = [
    "FRONTIER_CHART",
    "FRONTIER_NOTE",
    "XY",
    "FrontierPoint",
    "frontier",
    "frontier_reading",
    "frontier_table",
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


@dataclass(frozen=True)
class FrontierPoint:
    """One configuration of a run, placed against the others on cost and accuracy.

    Attributes:
        strategy: The strategy, e.g. ``"memory-context"``.
        embedding: Its embedder, ``"none"`` when the strategy does not search.
        cost_per_call: Total cost over the number of model calls (USD); None if unknown.
        cost_usd: Total cost of the configuration over every call of the run (USD).
        recall_accuracy: Share of probes whose context holds an expected answer.
        recall_accuracy_ci: The 95 % interval of ``recall_accuracy`` (Wilson, over ``n``;
            the record's own interval when it has no count), or None.
        on_frontier: True when no comparable configuration dominates this one.
        dominated_by: The label of the cheapest configuration that dominates this one (the
            most accurate of the cheapest, then by name), None when it is not dominated.
        excluded: Why the configuration is not comparable (then it is neither on the
            frontier nor dominated), None when it is compared.
        n: The probes ``recall_accuracy`` is over (fitted probes), None when unknown.
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
    n: int | None = None

    @property
    def share(self) -> Share:
        """``recall_accuracy`` with its interval and n, as the report's tables show it."""
        low, high = self.recall_accuracy_ci or (None, None)
        return Share(self.recall_accuracy, self.n, low, high)

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


def _ci(record: Mapping[str, Any]) -> tuple[float, float] | None:
    share = share_of(record)
    return None if share.low is None or share.high is None else (share.low, share.high)


def _exclusion(record: Mapping[str, Any], cost: float | None, calls: float | None) -> str | None:
    """Why ``record`` cannot be compared with the others, or None when it can."""
    fit, probes = num(record.get("fit")), num(record.get("probes"))
    if fit is not None and probes is not None and fit < probes:
        return f"accuracy over {fit:,.0f} of {probes:,.0f} probes only"
    if num(record.get("recall_accuracy")) is None:
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
        cost, calls = num(record.get("cost_usd")), num(record.get("calls"))
        per_call = cost / calls if cost is not None and calls else None
        fit = num(record.get("fit"))
        points.append(
            FrontierPoint(
                strategy=strategy,
                embedding=embedding,
                cost_per_call=per_call,
                cost_usd=cost,
                recall_accuracy=num(record.get("recall_accuracy")),
                recall_accuracy_ci=_ci(record),
                on_frontier=False,
                dominated_by=None,
                excluded=_exclusion(record, cost, calls),
                n=None if fit is None else int(fit),
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


def frontier_table(
    points: Sequence[FrontierPoint],
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """The report's frontier table as strings: its header and one row per point."""
    header = (
        "configuration",
        "cost per call",
        "total cost",
        "recall accuracy (95 % interval)",
        "frontier",
    )
    rows = tuple(
        (
            p.label,
            usd(p.cost_per_call, 5),
            usd(p.cost_usd, 4),
            p.share.text(),
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
