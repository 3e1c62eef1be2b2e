"""Strategies for tests of a run that fails part-way (``--plugin helpers.failing_strategy``).

- ``counted``: truncate, and each instance appends a line to ``MEMCTX_TEST_STARTED_DIR/started``
  (so a test can count the jobs that started, in any worker process);
- ``fails``: the same, but its first ``prepare`` raises :class:`JobFailed`.

Without ``MEMCTX_TEST_STARTED_DIR`` nothing is recorded (``MEMCTX_`` variables are the ones
a Ray run passes to its actors).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from memctx.errors import StrategyError
from memctx.harness import JOURNAL, EvalOptions, run_eval
from memctx.strategies import Prepared, StrategySetup, register_strategy
from memctx.strategies.truncate import TruncateStrategy

STARTED = "started"
PLUGIN = "helpers.failing_strategy"
# Ten scenarios (the full sets of five suites), each played by a job that succeeds and one
# that fails at once: twenty jobs, a few seconds with truncate.
SUITES = ("needle", "supersede", "cjk", "paraphrase", "short-queries")


class JobFailed(RuntimeError):
    """The failure ``fails`` raises (a job's own error, as a bug or a budget would be)."""


def started_jobs(folder: Path) -> list[str]:
    """The strategy name of every job that started, in the order they started."""
    path = folder / STARTED
    return path.read_text(encoding="utf-8").split() if path.exists() else []


class Counted(TruncateStrategy):
    name = "counted"

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        folder = os.environ.get("MEMCTX_TEST_STARTED_DIR")
        if folder:
            with (Path(folder) / STARTED).open("a", encoding="utf-8") as out:
                out.write(f"{self.name}\n")


class Fails(Counted):
    name = "fails"

    def prepare(self, transcript: Any) -> Prepared:
        raise JobFailed("this job fails on purpose")


register_strategy("counted", Counted, replace=True)
register_strategy("fails", Fails, replace=True)


def failing_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> Path:
    """Run the twenty jobs until one fails; the folder that records which started."""
    folder = tmp_path / "started"
    folder.mkdir()
    monkeypatch.setenv("MEMCTX_TEST_STARTED_DIR", str(folder))
    options = EvalOptions(
        suites=SUITES, strategies=("counted", "fails"), embeddings=("hash",), jobs=2,
        plugins=(PLUGIN,), out_dir=tmp_path / "run", progress=False, **extra,
    )  # fmt: skip
    # A plugin's exception reaches the caller as the plugin's, its own chained to it.
    said = r"'fails' \(from helpers\.failing_strategy\): prepare\(\) raised JobFailed: this"
    with pytest.raises(StrategyError, match=said + " job fails on purpose"):
        run_eval(options)
    return folder


def assert_stopped_and_kept(tmp_path: Path, folder: Path) -> None:
    """The run stopped starting jobs at the failure and reported every job that finished."""
    started = started_jobs(folder)
    assert "fails" in started
    planned = 2 * 2 * len(SUITES)  # two scenarios per suite, two strategies
    assert len(started) < planned  # the queue was not run to its end
    journal = (tmp_path / "run" / JOURNAL).read_text(encoding="utf-8").splitlines()
    # Every job that started and did not fail landed in the journal: nothing finished is lost.
    assert len(journal) == started.count("counted")
