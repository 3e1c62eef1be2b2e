"""The progress line's time-left estimate: learnt per configuration, steady, honest."""

from __future__ import annotations

import pytest

from memctx.harness.progress import TRANSFORMER_PRIOR, EtaEstimator, format_progress


def test_nothing_finished_means_no_estimate_yet() -> None:
    assert EtaEstimator().seconds_left([(100, False, "a/hash")], workers=2) is None
    assert "estimating" in format_progress(0, 10, "x", 0.0, 3.0, None)


def test_rates_are_learnt_per_configuration_then_per_kind_then_from_the_prior() -> None:
    eta = EtaEstimator()
    eta.add(100, False, 1.0, "full/none")  # 0.01 s per unit
    eta.add(100, False, 9.0, "memory-context/hash")  # 0.09 s per unit
    assert eta.rate(False, "full/none") == pytest.approx(0.01)
    assert eta.rate(False, "memory-context/hash") == pytest.approx(0.09)
    assert eta.rate(False, "planner/none") == pytest.approx(0.05)  # the kind's mean
    assert eta.rate(True, "memory-context/transformer") == pytest.approx(0.05 * TRANSFORMER_PRIOR)
    eta.add(10, True, 2.0, "memory-context/transformer")
    assert eta.rate(True, "meerkat/transformer") == pytest.approx(0.2)  # measured, not the prior


def test_seconds_left_divide_the_work_among_the_workers_it_can_use() -> None:
    eta = EtaEstimator()
    eta.add(10, False, 10.0, "a")
    pending = [(10.0, False, "a"), (10.0, False, "a")]
    assert eta.seconds_left(pending, workers=2) == pytest.approx(10.0)
    assert eta.seconds_left(pending, workers=1) == pytest.approx(20.0)
    assert eta.seconds_left(pending[:1], workers=8) == pytest.approx(10.0)  # one job, one worker
    assert eta.seconds_left([], workers=2) == 0.0


def test_the_line_shows_the_job_and_the_wall_clock_apart_and_full_names() -> None:
    label = "long-haul-003 memory-context:recallPlacement=end/transformer"
    line = format_progress(7, 380, label, 3.25, 125.0, 252.0)
    assert line == f"[  7/380] {label}  job 3.2 s  elapsed 2:05  ~4.2 min left"
    assert format_progress(380, 380, "x", 1.0, 60.0, 0.0).endswith("done")
