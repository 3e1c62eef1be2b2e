"""Where the frontier chart puts its markers and labels so that none hides another.

Pure layout (no matplotlib): display coordinates in, offsets and label spots out.

- :func:`dodge` sets markers that would overlap side by side (two embedders of one strategy
  often land on the same cost and accuracy), so every configuration stays visible.
- :func:`place_labels` puts each label at the spot that covers least: never over another
  label while any spot is free (near spots first, then farther ones joined to their point by
  a leader line), then as little of the markers, the legend, the error bars and the step line
  as it can, inside the frame.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from itertools import pairwise
from typing import TypeVar

from .frontier import XY, FrontierPoint, point_ends, step_corners

__all__ = ["LEADER_PT", "Box", "Spot", "dodge", "place_labels"]

K = TypeVar("K", bound=Hashable)
Box = tuple[float, float, float, float]  # left, bottom, right, top (display pixels)
# Where a label goes: from the point or an end of its error bar ("point", "low", "high"),
# offset (dx, dy) in points, and its alignment (ha, va) there.
Spot = tuple[str, float, float, str, str]
LEADER_PT = 14.0  # a label further than this from its point gets a leader line

# The first embedder of a strategy tries below first, the second above, so two embedders at
# one point part ways; past the bar's end when the others' bars are in the way; a lone
# strategy tries the side first.
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
# Farther out in eight directions, tried only when every near spot is taken.
_RING: tuple[Spot, ...] = tuple(
    ("point", ux * distance, uy * distance, ha, va)
    for distance in (20.0, 32.0, 46.0, 62.0)
    for ux, uy, ha, va in (
        (1.0, 0.0, "left", "center"),
        (-1.0, 0.0, "right", "center"),
        (0.0, 1.0, "center", "bottom"),
        (0.0, -1.0, "center", "top"),
        (0.7, 0.7, "left", "bottom"),
        (-0.7, 0.7, "right", "bottom"),
        (0.7, -0.7, "left", "top"),
        (-0.7, -0.7, "right", "top"),
    )
)
# What covering each thing costs a label: another label (all but forbidden), a marker or the
# legend, an error bar, the step line; each spot further down the list costs a little.
_LABEL, _HEAVY, _BAR, _LINE, _RANK, _OUTSIDE = 1000.0, 4.0, 2.0, 2.0, 0.25, 10_000.0


def dodge(centres: Mapping[K, XY], size: float, gap: float = 2.0) -> dict[K, float]:
    """Horizontal shifts (display pixels) that set overlapping markers side by side.

    Markers are squares of ``size`` pixels around ``centres``; markers that overlap, directly
    or through a chain, form a group spread evenly around the group's mean x, ``size + gap``
    apart, in the order of their x then key; groups that then overlap are merged and spread
    again, until no two markers overlap (at most one merge per marker).

    Returns:
        The shift per key (0 for a marker left where it is).
    """
    keys = sorted(centres, key=lambda k: (centres[k][0], str(k)))
    x = {k: centres[k][0] for k in keys}
    step = size + gap
    parent = {k: k for k in keys}  # groups only grow: a spread group never splits again

    def root(k: K) -> K:
        while parent[k] != k:
            k = parent[k]
        return k

    for _ in range(len(keys)):
        merged = False
        for i, a in enumerate(keys):
            for b in keys[i + 1 :]:
                close = abs(x[a] - x[b]) < size and abs(centres[a][1] - centres[b][1]) < size
                if close and root(a) != root(b):
                    parent[root(b)] = root(a)
                    merged = True
        if not merged:
            break
        groups: dict[K, list[K]] = {}
        for k in keys:
            groups.setdefault(root(k), []).append(k)
        for group in groups.values():
            middle = sum(centres[k][0] for k in group) / len(group)
            for i, k in enumerate(sorted(group, key=lambda k: (centres[k][0], str(k)))):
                x[k] = middle + (i - (len(group) - 1) / 2) * step
    return {k: x[k] - centres[k][0] for k in keys}


def _spots(rank: int, count: int) -> tuple[Spot, ...]:
    if count == 1:
        return _SIDE + _ABOVE + _BELOW + _RING
    near = _BELOW + _ABOVE + _SIDE if rank % 2 == 0 else _ABOVE + _BELOW + _SIDE
    return near + _RING


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _label_box(at: XY, size: XY, spot: Spot, scale: float) -> Box:
    """The box of a label of ``size`` (display pixels) at ``spot`` from ``at``."""
    _, dx, dy, ha, va = spot
    width, height = size
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
    sizes: Mapping[tuple[str, str], XY] | None = None,
) -> dict[tuple[str, str], Spot]:
    """Where to put each point's label so that it covers as little as it can.

    Labels are placed in ``points`` order, each at the spot of least cost: what it covers
    (a label already placed costs so much that it is covered only when no spot is free;
    markers and the legend weigh most of the rest, error bars less, the step line least),
    plus a little per spot down its list so that a label stays near its point, plus a lot
    if it leaves ``frame``.

    Args:
        points: The drawn (comparable) points.
        to_display: Data coordinates (cost per call, accuracy in %) to display pixels.
        frame: The axes' box in display pixels.
        legend: The legend's box in display pixels, or None.
        scale: Display pixels per point (dpi / 72).
        font_pt: The labels' font size in points.
        sizes: Each label's measured (width, height) in display pixels; estimated from its
            length and ``font_pt`` when absent.

    Returns:
        The spot per (strategy, embedding); a spot further than :data:`LEADER_PT` points
        from its point wants a leader line.
    """
    taken = _obstacles(points, to_display, scale)
    if legend is not None:
        taken.append((legend, _HEAVY))
    by_strategy: dict[str, list[str]] = {}
    for p in points:
        by_strategy.setdefault(p.strategy, []).append(p.embedding)
    out: dict[tuple[str, str], Spot] = {}
    for p in points:
        key = (p.strategy, p.embedding)
        size = (sizes or {}).get(key) or (
            0.6 * font_pt * len(p.label) * scale,
            1.25 * font_pt * scale,
        )
        embeddings = sorted(by_strategy[p.strategy])
        spots = _spots(embeddings.index(p.embedding), len(embeddings))
        ends = {name: to_display(xy) for name, xy in point_ends(p).items()}
        boxes = [_label_box(ends[s[0]], size, s, scale) for s in spots]
        costs = [
            i * _RANK
            + sum(weight for t, weight in taken if _overlaps(box, t))
            + (0.0 if frame[0] <= box[0] and box[2] <= frame[2] and frame[1] <= box[1]
               and box[3] <= frame[3] else _OUTSIDE)
            for i, box in enumerate(boxes)
        ]  # fmt: skip
        pick = min(range(len(spots)), key=costs.__getitem__)
        out[key] = spots[pick]
        taken.append((boxes[pick], _LABEL))
    return out
