"""A run that fails part-way: nothing more is started after the first failure, and every
job that still finishes is reported (so the resume journal keeps work already paid for)."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from helpers.failing_strategy import JobFailed, assert_stopped_and_kept, failing_run

from memctx.harness import report_until_failure

Rows = list[tuple[int, Any, float]]


class _FinishesLater(Future[Rows]):
    """A running bundle that lands only after the failure was seen: asking it to cancel
    (which a running future refuses) is when its worker finishes it, with ``rows`` or by
    raising ``error``."""

    def __init__(self, rows: Rows, error: Exception | None = None) -> None:
        super().__init__()
        self.set_running_or_notify_cancel()
        self._rows, self._error = rows, error

    def cancel(self) -> bool:
        if not self.done():
            if self._error is not None:
                self.set_exception(self._error)
            else:
                self.set_result(self._rows)
        return False


def test_the_first_failure_cancels_what_has_not_started_and_reports_what_lands() -> None:
    failed: Future[Rows] = Future()
    failed.set_running_or_notify_cancel()
    failed.set_exception(JobFailed("first"))
    running = _FinishesLater([(1, "one", 0.5), (2, "two", 0.25)])
    also_failing = _FinishesLater([], JobFailed("second"))
    queued: list[Future[Rows]] = [Future(), Future()]
    reported: list[Rows] = []
    with pytest.raises(JobFailed, match="first"):  # the first error, not a later one
        report_until_failure([failed, running, *queued, also_failing], reported.append)
    assert reported == [[(1, "one", 0.5), (2, "two", 0.25)]]  # the bundle in flight landed
    assert all(f.cancelled() for f in queued)  # nothing queued ever starts
    assert also_failing.done() and running.done()


def test_every_bundle_is_reported_when_none_fails() -> None:
    futures: list[Future[Rows]] = [Future(), Future()]
    for number, future in enumerate(futures):
        future.set_result([(number, f"result {number}", 1.0)])
    reported: list[Rows] = []
    report_until_failure(futures, reported.append)
    assert sorted(reported) == [[(0, "result 0", 1.0)], [(1, "result 1", 1.0)]]


def test_a_failing_job_stops_the_process_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = failing_run(tmp_path, monkeypatch)
    assert_stopped_and_kept(tmp_path, folder)
