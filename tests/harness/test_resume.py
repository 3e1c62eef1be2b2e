"""Resumable runs: a run killed midway (SIGKILL) is completed by ``--resume`` with the very
summary an uninterrupted run writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.run_files import rows_without_timing, without_timing

from memctx.cli import main
from memctx.harness import JOURNAL, PLAN

ARGS = [  # one quick suite: seven jobs, killed after the second
    "--quick", "--suite", "needle", "--embedding", "hash",
    "--jobs", "1", "--no-report", "--no-progress",
]  # fmt: skip
REPO = Path(__file__).resolve().parents[2]


def _kill_midway(out: Path) -> None:
    """Start the run in a process of its own and SIGKILL it after its second job."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "memctx.cli", "eval", *ARGS, "--out", str(out)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    journal = out / JOURNAL
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if journal.exists() and journal.read_text(encoding="utf-8").count("\n") >= 2:
                break
            time.sleep(0.02)
        assert process.poll() is None, "the run ended before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=60)


def test_a_killed_run_resumes_to_the_same_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = tmp_path / "whole"
    status = main(["eval", *ARGS, "--out", str(whole)])
    assert not (whole / JOURNAL).exists()  # complete: the journal is gone
    killed = tmp_path / "killed"
    _kill_midway(killed)
    assert (killed / PLAN).exists() and not (killed / "summary.json").exists()
    with (killed / JOURNAL).open("a", encoding="utf-8") as fh:
        fh.write('{"key": "needle\\tneedle-000\\tfull')  # a line the kill cut short
    capsys.readouterr()
    assert main(["eval", "--resume", str(killed), "--jobs", "1", "--no-report"]) == status
    assert "resuming" in capsys.readouterr().err
    ran, resumed = (json.loads((d / "summary.json").read_text("utf-8")) for d in (whole, killed))
    assert without_timing(resumed) == without_timing(ran)
    for name in ("results.jsonl", "trace.jsonl"):
        assert rows_without_timing(killed / name) == rows_without_timing(whole / name)
    assert not (killed / JOURNAL).exists()
    # A finished run has nothing left to resume; a resumed run keeps its own options.
    assert main(["eval", "--resume", str(killed)]) == 2
    assert "finished run" in capsys.readouterr().err
    assert main(["eval", "--resume", str(killed), "--suite", "cjk"]) == 2
    assert "drop --suite" in capsys.readouterr().err


def test_resume_needs_a_run_that_memctx_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "--resume", str(tmp_path)]) == 2
    assert "holds no run.json" in capsys.readouterr().err
