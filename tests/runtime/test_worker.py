"""The background worker: order, idle waiting, failure isolation, close."""

from __future__ import annotations

import threading
import time

from memctx.runtime.worker import BackgroundWorker


def test_jobs_run_in_submission_order_and_wait_idle_waits() -> None:
    worker = BackgroundWorker()
    seen: list[int] = []
    for i in range(50):
        worker.submit(lambda i=i: seen.append(i), "job")
    assert worker.wait_idle(10)
    assert seen == list(range(50))
    assert worker.done["job"] == 50 and worker.pending == 0
    worker.close()


def test_a_failing_job_is_counted_and_the_next_one_still_runs() -> None:
    worker = BackgroundWorker()
    seen: list[str] = []

    def boom() -> None:
        raise RuntimeError("extraction exploded")

    worker.submit(boom, "extraction")
    worker.submit(lambda: seen.append("after"), "archive")
    assert worker.wait_idle(10)
    assert worker.failed["extraction"] == 1 and seen == ["after"]
    worker.close()


def test_wait_idle_times_out_while_a_job_blocks() -> None:
    worker = BackgroundWorker()
    gate = threading.Event()
    worker.submit(gate.wait, "slow")
    assert worker.wait_idle(0.2) is False
    gate.set()
    assert worker.wait_idle(10) is True
    worker.close()


def test_close_finishes_queued_jobs_then_refuses_new_ones() -> None:
    worker = BackgroundWorker()
    seen: list[int] = []
    for i in range(5):
        worker.submit(lambda i=i: (time.sleep(0.01), seen.append(i)), "job")
    assert worker.close(10)
    assert seen == [0, 1, 2, 3, 4]
    assert worker.submit(lambda: seen.append(99), "job") is False
    assert seen == [0, 1, 2, 3, 4]
    assert worker.close(1)  # twice is fine


def test_an_unused_worker_starts_no_thread() -> None:
    before = threading.active_count()
    worker = BackgroundWorker()
    assert worker.wait_idle(0) and worker.close(0)
    assert threading.active_count() == before
