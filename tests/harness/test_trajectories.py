"""Real agent trajectories through every strategy at small windows (issue 14, part 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.datasets import dataset_path

from memctx.cli.main import main
from memctx.harness import (
    DEFAULT_STRATEGIES,
    TrajectoryRow,
    find_trajectories,
    format_trajectory_table,
    replay_trajectories,
)
from memctx.harness.report import real_data_md

MARSHMALLOW = "replay__marshmallow-code__marshmallow-1867__function_calling"


def _row(strategy: str, sent: int, **kw: int) -> TrajectoryRow:
    base = {
        "calls": 10,
        "max_history": 9_000,
        "whole_tokens": 40_000,
        "compactions": 0,
        "trims": 0,
        "violations": 0,
    }
    base.update(kw)
    return TrajectoryRow(
        dataset="swe-agent",
        name="t",
        strategy=strategy,
        window=16_000,
        sent_tokens=sent,
        p50_ms=0.1,
        p95_ms=0.2,
        **base,
    )


def test_saved_is_measured_against_the_whole_transcript_and_pooled_by_tokens() -> None:
    rows = [_row("full", 40_000), _row("truncate", 30_000), _row("truncate", 10_000)]
    assert rows[1].saved == pytest.approx(0.25) and rows[0].saved == 0.0
    table = format_trajectory_table(rows).splitlines()
    assert len(table) == 4  # header, rule, full, truncate (two trajectories pooled)
    truncate = table[3].split(" | ")
    assert truncate[3] == "2" and truncate[7] == "50.0 %"  # 40,000 of 80,000 not sent


def test_every_strategy_replays_a_slice_of_each_dataset_with_zero_violations() -> None:
    root = dataset_path("swe-agent").parent
    rows = replay_trajectories(root, DEFAULT_STRATEGIES, (16_000,), limit=1)
    assert {r.dataset for r in rows} == {
        "claude-code",
        "swe-agent",
        "openhands-swe-gym",
        "swe-agent-nebius",
    }
    assert {r.strategy for r in rows} == set(DEFAULT_STRATEGIES)
    assert [r for r in rows if r.violations] == []
    # At 16K the OpenHands run does not fit whole: every strategy but full sends less.
    openhands = {r.strategy: r for r in rows if r.dataset == "openhands-swe-gym"}
    assert openhands["full"].saved == 0.0
    assert all(openhands[s].saved > 0.1 for s in DEFAULT_STRATEGIES if s != "full")
    assert openhands["memory-context"].compactions > 0 and openhands["truncate"].trims > 0


def test_a_recording_that_breaks_pairing_is_repaired_first_and_says_so() -> None:
    root = dataset_path("swe-agent").parent
    found = [(d, n) for d, n, _ in find_trajectories(root) if n.startswith(MARSHMALLOW)]
    assert found, "the SWE-agent replay that reuses call ids is among the trajectories"
    rows = [
        r
        for r in replay_trajectories(root, ("full", "planner"), (16_000,))
        if r.name.startswith(MARSHMALLOW)
    ]
    assert rows and all(r.input_defects > 0 and r.violations == 0 for r in rows)


def test_the_command_prints_the_table_and_refuses_a_bad_strategy_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = dataset_path("swe-agent").parent
    args = ["trajectories", "--datasets", str(root), "--limit", "1", "--window", "16000"]
    run = tmp_path / "run"
    assert main([*args, "--strategy", "truncate", "--out", str(run)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| dataset | strategy | window |") and "| swe-agent | truncate |" in out
    written = (run / "trajectories.md").read_text()
    assert written.startswith("# Real agent trajectories") and out.strip() in written
    section = real_data_md(run)  # a report of that run folder shows it under Real data
    assert section.startswith("\n## Real data") and "| swe-agent | truncate |" in section
    assert main([*args, "--strategy", "nope"]) == 2
    assert "unknown strategy 'nope'" in capsys.readouterr().err
    assert main(["trajectories", "--datasets", str(tmp_path)]) == 2  # an empty folder
    assert "no trajectories" in capsys.readouterr().err
