"""What a reader sees in the charts: labels that never collide, markers that never hide one
another (hash and transformer at the same point included), error bars that make a figure
over 2 probes look uncertain."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.synthetic_run import build_run
from matplotlib.text import Text

from memctx.harness.report.chart_bars import draw_by_suite
from memctx.harness.report.chart_points import MARKER_PT, FrontierDrawing, draw_frontier
from memctx.harness.report.checks import pairs
from memctx.harness.report.figures import colours_for
from memctx.harness.report.labels import dodge
from memctx.harness.schema import all_records, upgrade_summary

BASELINE = Path(__file__).resolve().parents[2] / "reports" / "baseline" / "summary.json"
Box = tuple[float, float, float, float]


def _draw(summary: dict[str, Any]) -> FrontierDrawing:
    drawing = draw_frontier(summary, colours_for(pairs(all_records(summary))))
    assert drawing is not None
    drawing.figure.draw_without_rendering()  # the final layout, as savefig draws it
    return drawing


def _boxes(drawing: FrontierDrawing) -> list[Box]:
    out = []
    for label in drawing.labels:
        box = Text.get_window_extent(label)  # the text itself, not its leader line
        out.append((box.x0, box.y0, box.x1, box.y1))
    return out


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _pooled(strategy: str, embedding: str, cost: float, acc: float) -> dict[str, Any]:
    return {
        "suite": "all", "strategy": strategy, "embedding": embedding, "probes": 380,
        "fit": 380, "recall_accuracy": acc, "recall_accuracy_ci": [acc - 0.04, acc + 0.04],
        "cost_usd": cost, "calls": 1000,
    }  # fmt: skip


def _crowded() -> dict[str, Any]:
    """Eight configurations, four pairs of them at one cost and accuracy (hash and
    transformer alike), the rest close by."""
    pooled = []
    for i, strategy in enumerate(("meerkat", "openclaw", "memory-context", "planner-x")):
        for embedding in ("hash", "transformer"):
            pooled.append(_pooled(strategy, embedding, 15.0 + 0.4 * i, 0.27 + 0.01 * i))
    return {"records": [], "pooled": pooled}


@pytest.mark.parametrize("which", ["baseline", "synthetic", "crowded"])
def test_frontier_labels_never_collide_and_markers_never_hide_each_other(which: str) -> None:
    if which == "baseline":
        summary = upgrade_summary(json.loads(BASELINE.read_text(encoding="utf-8")))
    elif which == "synthetic":
        summary = build_run().summary
    else:
        summary = _crowded()
    drawing = _draw(summary)
    boxes = _boxes(drawing)
    assert len(boxes) == sum(p.excluded is None for p in drawing.points)
    for a, b in itertools.combinations(boxes, 2):
        assert not _overlap(a, b), (a, b)
    size = MARKER_PT * drawing.figure.dpi / 72
    centres = list(drawing.markers.values())
    for (xa, ya), (xb, yb) in itertools.combinations(centres, 2):
        assert abs(xa - xb) >= size - 0.5 or abs(ya - yb) >= size - 0.5, (xa, ya, xb, yb)
    half = size / 2
    for box in boxes:  # no label over any marker
        for x, y in centres:
            assert not _overlap(box, (x - half, y - half, x + half, y + half)), (box, x, y)


def test_hash_and_transformer_at_one_point_are_set_side_by_side() -> None:
    summary = upgrade_summary(json.loads(BASELINE.read_text(encoding="utf-8")))
    drawing = _draw(summary)
    (hx, hy), (tx, ty) = (
        drawing.markers[("meerkat", "hash")],
        drawing.markers[("meerkat", "transformer")],
    )
    assert hy == pytest.approx(ty)  # the same accuracy, the same cost ...
    assert abs(hx - tx) >= MARKER_PT * drawing.figure.dpi / 72  # ... apart all the same
    assert drawing.dodged


def test_dodge_spreads_only_what_overlaps() -> None:
    shifts = dodge({"a": (100.0, 50.0), "b": (100.0, 50.0), "c": (300.0, 50.0)}, 10.0)
    assert shifts["c"] == 0.0
    assert shifts["a"] == pytest.approx(-6.0) and shifts["b"] == pytest.approx(6.0)
    chain = dodge({k: (100.0 + 4 * i, 20.0) for i, k in enumerate("pqrs")}, 10.0)
    xs = sorted(100.0 + 4 * i + chain[k] for i, k in enumerate("pqrs"))
    assert all(b - a >= 10.0 for a, b in itertools.pairwise(xs))


def test_a_share_of_two_probes_gets_a_wide_error_bar_and_its_n(tmp_path: Path) -> None:
    run = build_run()
    full = run.record("needle", "full", "none")
    full.update(fit=2, recall_accuracy=1.0, recall_accuracy_ci=[1.0, 1.0])
    fig = draw_by_suite(run.summary, colours_for(pairs(all_records(run.summary))))
    assert fig is not None
    (ax,) = fig.axes
    spans = [
        (float(seg[0][1]), float(seg[1][1]))
        for collection in ax.collections
        for seg in collection.get_segments()  # type: ignore[attr-defined]
    ]
    # The bootstrap said [100, 100]; 2 of 2 probes say 34-100: the bar shows that.
    assert any(low < 40 and high == pytest.approx(100.0) for low, high in spans)
    assert "n=2" in [t.get_text() for t in ax.texts]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert "needle\n24 probes" in ticks
