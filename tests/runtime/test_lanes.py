"""Compaction lanes: one job per session at a time, at most N across sessions, failures and
timeouts confined to their own caller. Instrumented with events and counters; every wait
and join is bounded, and no assertion depends on how long anything took."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from memctx.runtime import (
    DEFAULT_MAX_CONCURRENT_COMPACTIONS,
    CompactionLanes,
    LaneError,
    LaneTimeoutError,
)

BOUND = 10.0  # seconds: a bound for joins and waits that should end almost at once


def wait_until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` (tiny sleeps) until it holds; fail after :data:`BOUND` seconds."""
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for a condition"
        time.sleep(0.002)


class Probe:
    """Counts jobs in flight, per session and in all, and the most seen at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.total = 0
        self.most_total = 0
        self.order: list[str] = []

    def job(self, session: str, tag: str = "", gate: threading.Event | None = None) -> Any:
        def run() -> str:
            with self.lock:
                self.now[session] += 1
                self.total += 1
                self.most[session] = max(self.most[session], self.now[session])
                self.most_total = max(self.most_total, self.total)
                self.order.append(tag)
            try:
                if gate is not None:
                    assert gate.wait(BOUND)
                else:
                    time.sleep(0.0005)  # a tiny yield, so that a broken lane would overlap
            finally:
                with self.lock:
                    self.now[session] -= 1
                    self.total -= 1
            return tag

        return run


def start(target: Callable[[], Any]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def join_all(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(BOUND)
        assert not thread.is_alive(), "a lane job did not finish"


def test_the_second_compaction_of_a_session_waits_for_the_first() -> None:
    lanes, probe = CompactionLanes(max_concurrent=4), Probe()
    gate = threading.Event()
    results: list[str] = []
    first = start(lambda: results.append(lanes.run("s", probe.job("s", "first", gate))))
    wait_until(lambda: probe.order == ["first"])
    second = start(lambda: results.append(lanes.run("s", probe.job("s", "second"))))
    wait_until(lambda: lanes.pending("s") == 2)
    assert probe.order == ["first"]  # the second is queued behind the first, not running
    assert lanes.active == 1
    gate.set()
    join_all([first, second])
    assert results == ["first", "second"] and probe.most["s"] == 1
    assert lanes.pending("s") == 0 and lanes.sessions == 0  # an idle lane is forgotten


def test_many_threads_on_few_sessions_never_overlap_within_a_session() -> None:
    lanes, probe = CompactionLanes(max_concurrent=3), Probe()
    sessions = ["a", "b"]

    def worker(i: int) -> None:
        for j in range(5):
            session = sessions[(i + j) % 2]
            lanes.run(session, probe.job(session, f"{i}.{j}"))

    join_all([start(lambda i=i: worker(i)) for i in range(8)])
    assert probe.most["a"] == probe.most["b"] == 1
    assert probe.most_total <= 2 and lanes.peak <= 3
    assert lanes.completed == 40 and lanes.failed == 0 and lanes.active == 0


def test_n_sessions_never_exceed_the_global_limit() -> None:
    limit = 2
    lanes, probe = CompactionLanes(max_concurrent=limit), Probe()
    gate = threading.Event()
    threads = [start(lambda s=f"s{i}": lanes.run(s, probe.job(s, s, gate))) for i in range(6)]
    wait_until(lambda: lanes.active == limit and lanes.sessions == 6)
    assert probe.total == limit  # four sessions wait for a slot, none runs beyond it
    gate.set()
    join_all(threads)
    assert probe.most_total == limit == lanes.peak
    assert sorted(probe.order) == [f"s{i}" for i in range(6)]
    assert lanes.completed == 6 and lanes.active == 0


def test_a_failing_job_releases_its_lane_and_slot_and_others_go_on() -> None:
    lanes, probe = CompactionLanes(max_concurrent=1), Probe()

    def boom() -> None:
        raise RuntimeError("summariser exploded")

    with pytest.raises(RuntimeError, match="exploded"):
        lanes.run("a", boom)
    assert lanes.active == 0 and lanes.failed == 1
    assert lanes.run("b", probe.job("b", "b")) == "b"  # the only slot is free again
    assert lanes.run("a", probe.job("a", "a again")) == "a again"  # and so is a's lane

    # One session failing while another waits for the single slot: the waiter runs.
    gate = threading.Event()
    errors: list[BaseException] = []

    def failing_after_gate() -> None:
        assert gate.wait(BOUND)
        raise ValueError("bad history")

    def capture(job: Callable[[], Any], session: str) -> Callable[[], None]:
        def run() -> None:
            try:
                lanes.run(session, job)
            except Exception as exc:
                errors.append(exc)

        return run

    failing = start(capture(failing_after_gate, "a"))
    wait_until(lambda: lanes.active == 1)
    waiting = start(capture(probe.job("c", "c"), "c"))
    wait_until(lambda: lanes.pending("c") == 1)
    gate.set()
    join_all([failing, waiting])
    assert [type(e) for e in errors] == [ValueError] and "c" in probe.order
    assert lanes.failed == 2 and lanes.sessions == 0


def test_a_wait_longer_than_the_timeout_raises_and_the_job_does_not_run() -> None:
    lanes, probe = CompactionLanes(max_concurrent=1), Probe()
    gate = threading.Event()
    holder = start(lambda: lanes.run("a", probe.job("a", "holder", gate)))
    wait_until(lambda: lanes.active == 1)
    with pytest.raises(LaneTimeoutError, match="earlier compaction") as same:
        lanes.run("a", probe.job("a", "same session"), timeout=0.01)
    with pytest.raises(LaneTimeoutError, match="slots shared by all sessions") as other:
        lanes.run("b", probe.job("b", "other session"), timeout=0.01)
    assert isinstance(same.value, TimeoutError) and isinstance(other.value, LaneError)
    gate.set()
    join_all([holder])
    assert probe.order == ["holder"] and lanes.sessions == 0 and lanes.active == 0


def test_reentry_in_the_same_session_is_refused_other_sessions_nest() -> None:
    lanes = CompactionLanes(max_concurrent=2)

    def nested_same() -> None:
        lanes.run("a", lambda: None)

    with pytest.raises(LaneError, match="already running on this thread"):
        lanes.run("a", nested_same)
    assert lanes.run("a", lambda: lanes.run("b", lambda: "inner")) == "inner"
    assert lanes.active == 0 and lanes.sessions == 0


def test_bad_limits_are_refused() -> None:
    assert CompactionLanes().max_concurrent == DEFAULT_MAX_CONCURRENT_COMPACTIONS
    for bad in (0, -1, True, 1.5):
        with pytest.raises(LaneError, match="max_concurrent"):
            CompactionLanes(max_concurrent=bad)  # type: ignore[arg-type]
