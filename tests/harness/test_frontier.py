"""The cost-versus-accuracy frontier: the dominance rule, exclusions, ordering, label layout."""

from __future__ import annotations

from typing import Any

import pytest

from memctx.harness.report import FrontierPoint, frontier, frontier_reading, frontier_table
from memctx.harness.report.frontier import point_ends, step_corners
from memctx.harness.report.labels import place_labels


def _rec(
    strategy: str,
    cost: float | None,
    acc: float | None,
    *,
    embedding: str = "-",
    calls: int = 100,
    fit: int | None = 50,
    probes: int | None = 50,
    suite: str = "all",
) -> dict[str, Any]:
    return {
        "suite": suite,
        "strategy": strategy,
        "embedding": embedding,
        "probes": probes,
        "fit": fit,
        "recall_accuracy": acc,
        "recall_accuracy_ci": None if acc is None else [acc - 0.05, acc + 0.05],
        "cost_usd": cost,
        "calls": calls,
    }


def _by_label(points: tuple[FrontierPoint, ...]) -> dict[str, FrontierPoint]:
    return {p.label: p for p in points}


def test_a_dominated_configuration_names_the_cheapest_that_dominates_it() -> None:
    points = frontier(
        [
            _rec("a", 10.0, 0.5),
            _rec("b", 5.0, 0.6),  # dominates a and d
            _rec("c", 8.0, 0.7),  # dominates a and d too, but costs more than b
            _rec("d", 20.0, 0.4),
        ]
    )
    assert [p.label for p in points] == ["b", "c", "a", "d"]  # by cost per call
    got = _by_label(points)
    assert got["b"].on_frontier and got["c"].on_frontier
    assert got["b"].dominated_by is None and got["b"].status == "on the frontier"
    assert not got["a"].on_frontier and got["a"].dominated_by == "b"
    assert got["d"].dominated_by == "b" and got["d"].status == "dominated by b"
    assert got["b"].cost_per_call == pytest.approx(0.05) and got["b"].cost_usd == 5.0
    # The stored interval, widened to the Wilson interval over the 50 fitted probes.
    low, high = got["b"].recall_accuracy_ci or (1.0, 0.0)
    assert low < 0.55 and high > 0.65 and got["b"].n == 50
    assert got["b"].share.text() == f"60.0 % ({100 * low:.0f}–{100 * high:.0f}) n=50"


def test_strictly_better_on_one_axis_is_enough_to_dominate() -> None:
    got = _by_label(
        frontier(
            [
                _rec("same-cost-better", 5.0, 0.6),
                _rec("same-cost-worse", 5.0, 0.5),
                _rec("same-acc-cheaper", 3.0, 0.4),
                _rec("same-acc-dearer", 4.0, 0.4),
            ]
        )
    )
    assert got["same-cost-worse"].dominated_by == "same-cost-better"
    assert got["same-acc-dearer"].dominated_by == "same-acc-cheaper"
    assert got["same-cost-better"].on_frontier and got["same-acc-cheaper"].on_frontier


def test_ties_are_both_on_the_frontier_and_a_point_they_dominate_names_the_first() -> None:
    points = frontier(
        [
            _rec("zeta", 5.0, 0.6, embedding="hash"),
            _rec("zeta", 5.0, 0.6, embedding="transformer"),
            _rec("alpha", 5.0, 0.6),
            _rec("worse", 7.0, 0.5),
        ]
    )
    assert [p.label for p in points] == [
        "alpha",
        "zeta × hash",
        "zeta × transformer",
        "worse",
    ]  # the same cost: by name
    assert [p.on_frontier for p in points] == [True, True, True, False]
    assert points[3].dominated_by == "alpha"  # three dominate it at the same cost and accuracy
    assert frontier_reading(points) == "Not dominated: alpha, zeta × hash, zeta × transformer."


def test_of_two_dominators_at_the_same_cost_the_more_accurate_is_named() -> None:
    got = _by_label(frontier([_rec("a", 5.0, 0.6), _rec("b", 5.0, 0.8), _rec("c", 6.0, 0.5)]))
    assert got["c"].dominated_by == "b" and got["a"].dominated_by == "b"


def test_a_record_over_fitted_probes_only_is_excluded_with_the_reason() -> None:
    # full is cheaper and more accurate than both: were it compared, it would dominate them.
    points = frontier(
        [
            _rec("full", 1.0, 0.9, fit=11, probes=380),
            _rec("masking", 5.0, 0.6, probes=380, fit=380),
            _rec("truncate", 9.0, 0.3, probes=380, fit=380),
        ]
    )
    got = _by_label(points)
    full = got["full"]
    assert full.excluded == "accuracy over 11 of 380 probes only"
    assert not full.on_frontier and full.dominated_by is None
    assert full.status == "not comparable: accuracy over 11 of 380 probes only"
    assert got["masking"].on_frontier and got["truncate"].dominated_by == "masking"
    assert frontier_reading(points) == "Not dominated: masking."


@pytest.mark.parametrize(
    ("record", "reason", "order"),
    [
        (_rec("x", 5.0, None), "no recall accuracy", ["x", "y"]),
        (_rec("x", None, 0.5), "no cost", ["y", "x"]),  # no cost per call: last
        (_rec("x", 5.0, 0.5, calls=0), "no model calls", ["y", "x"]),
    ],
)
def test_a_record_without_a_number_to_compare_is_excluded(
    record: dict[str, Any], reason: str, order: list[str]
) -> None:
    points = frontier([record, _rec("y", 50.0, 0.1)])
    got = _by_label(points)
    assert got["x"].excluded == reason and not got["x"].on_frontier
    assert got["x"].dominated_by is None
    assert got["y"].on_frontier  # x, cheaper and as accurate or more, is not compared
    assert [p.label for p in points] == order


def test_a_single_configuration_is_on_the_frontier() -> None:
    (point,) = frontier([_rec("memory-context", 12.0, 0.7, embedding="hash")])
    assert point.on_frontier and point.dominated_by is None and point.excluded is None
    assert point.label == "memory-context × hash"
    assert frontier_reading([point]) == "Not dominated: memory-context × hash."


def test_only_pooled_records_are_placed() -> None:
    points = frontier([_rec("a", 1.0, 0.9, suite="cjk"), _rec("a", 5.0, 0.5), _rec("b", 6.0, 0.6)])
    assert [(p.label, p.cost_per_call) for p in points] == [("a", 0.05), ("b", 0.06)]
    assert all(p.on_frontier for p in points)
    assert frontier([_rec("a", 1.0, 0.9, suite="cjk")]) == ()
    assert frontier_reading(()) == (
        "No configuration can be compared on cost and accuracy in this run."
    )


def test_the_table_rows_say_cost_accuracy_and_status() -> None:
    points = frontier(
        [
            _rec("full", 300.0, 0.8182, fit=11, probes=380),
            _rec("meerkat", 68.078068, 0.2711, embedding="hash", calls=4428),
            _rec("truncate", 409.730113, 0.25, calls=4428),
        ]
    )
    header, rows = frontier_table(points)
    assert header == (
        "configuration",
        "cost per call",
        "total cost",
        "recall accuracy (95 % interval)",
        "frontier",
    )
    # Each accuracy with its 95 % interval (Wilson over the fitted probes: 50, full's 11) and n.
    assert rows == (
        ("meerkat × hash", "$0.01537", "$68.0781", "27.1 % (17–41) n=50", "on the frontier"),
        ("truncate", "$0.09253", "$409.7301", "25.0 % (15–38) n=50", "dominated by meerkat × hash"),
        (
            "full",
            "$3.00000",
            "$300.0000",
            "81.8 % (52–95) n=11",
            "not comparable: accuracy over 11 of 380 probes only",
        ),
    )


def test_step_corners_go_across_then_up() -> None:
    assert step_corners([(1.0, 10.0), (2.0, 30.0), (4.0, 50.0)]) == [
        (1.0, 10.0),
        (2.0, 10.0),
        (2.0, 30.0),
        (4.0, 30.0),
        (4.0, 50.0),
    ]
    assert step_corners([]) == []


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_two_embedders_at_one_point_get_labels_on_either_side() -> None:
    points = [
        p
        for p in frontier(
            [
                _rec("meerkat", 5.0, 0.3, embedding="hash", fit=None, probes=None),
                _rec("meerkat", 5.0, 0.3, embedding="transformer", fit=None, probes=None),
            ]
        )
    ]

    def display(xy: tuple[float, float]) -> tuple[float, float]:
        return 1000 * xy[0], 5 * xy[1]  # cost per call 0.05 -> 50 px, 30 % -> 150 px

    spots = place_labels(points, display, (0.0, 0.0, 1000.0, 500.0), None, 1.0, 8.0)
    hash_spot, transformer_spot = spots[("meerkat", "hash")], spots[("meerkat", "transformer")]
    assert hash_spot[4] == "top" and transformer_spot[4] == "bottom"  # below / above
    ends = point_ends(points[0])
    assert ends == {"point": (0.05, 30.0), "low": (0.05, 25.0), "high": (0.05, 35.0)}


def test_a_label_moves_off_another_points_bar_and_stays_in_the_frame() -> None:
    # b sits just right of a: a's label on the right would cross b's marker and bar.
    points = list(
        frontier(
            [
                _rec("alpha-strategy", 5.0, 0.30, fit=None, probes=None),
                _rec("beta-strategy", 5.5, 0.30, fit=None, probes=None),
            ]
        )
    )

    def display(xy: tuple[float, float]) -> tuple[float, float]:
        return 4000 * xy[0], 5 * xy[1]  # alpha at 200 px, beta at 220 px, both at 150 px

    spots = place_labels(points, display, (0.0, 0.0, 1000.0, 500.0), None, 1.0, 8.0)
    assert spots[("alpha-strategy", "-")][1:] == (-9, 0, "right", "center")  # to its left
    assert spots[("beta-strategy", "-")][1:] == (9, 0, "left", "center")  # the right is free
    # Against the frame's left edge alpha cannot go left: over its bar's top, clear of beta's.
    spots = place_labels(points, display, (190.0, 0.0, 1000.0, 500.0), None, 1.0, 8.0)
    assert spots[("alpha-strategy", "-")] == ("high", 6, 3, "left", "bottom")
    # A legend over that spot pushes it below the bar instead.
    legend = (200.0, 176.0, 400.0, 200.0)
    spots = place_labels(points, display, (190.0, 0.0, 1000.0, 500.0), legend, 1.0, 8.0)
    assert spots[("alpha-strategy", "-")] == ("low", 6, -3, "left", "top")


def test_a_label_keeps_off_a_label_already_placed() -> None:
    # Same cost, 8 px apart: side by side on the right, the two labels would overlap.
    points = list(
        frontier(
            [
                _rec("alpha-strategy", 5.0, 0.30, fit=None, probes=None),
                _rec("beta-strategy", 5.0, 0.316, fit=None, probes=None),
            ]
        )
    )

    def display(xy: tuple[float, float]) -> tuple[float, float]:
        return 4000 * xy[0], 5 * xy[1]  # both at 200 px; alpha at 150 px, beta at 158 px

    spots = place_labels(points, display, (0.0, 0.0, 1000.0, 500.0), None, 1.0, 8.0)
    assert spots[("alpha-strategy", "-")][1:] == (9, 0, "left", "center")
    assert spots[("beta-strategy", "-")][1:] == (-9, 0, "right", "center")
