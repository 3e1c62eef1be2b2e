"""Real agent trajectories through every strategy at small windows: the ``trajectories``
suite (its records in the one pipeline with a small fixture: test_real_suites.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.datasets import dataset_path

from memctx.cli.main import main
from memctx.harness import (
    DEFAULT_STRATEGIES,
    TrajectoryRow,
    find_trajectories,
    format_trajectory_table,
    run_scenario,
    trajectory_rows,
    trajectory_scenarios,
)

MARSHMALLOW = "replay__marshmallow-code__marshmallow-1867__function_calling"


def _row(strategy: str, sent: int, whole: int | None = 40_000, **kw: int) -> TrajectoryRow:
    base = {"calls": 10, "max_history": 9_000, "compactions": 0, "trims": 0, "violations": 0}
    base.update(kw)
    return TrajectoryRow(
        dataset="swe-agent",
        name="t",
        strategy=strategy,
        embedding="none",
        window=16_000,
        whole_tokens=whole,
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
    # Without full in the run there is nothing to measure saved against: said, not 0 %.
    alone = format_trajectory_table([_row("truncate", 30_000, whole=None)]).splitlines()
    assert alone[2].split(" | ")[7] == "-" and _row("x", 1, whole=None).saved is None


@pytest.mark.dataset
def test_every_strategy_replays_a_slice_of_each_dataset_with_zero_violations(
    tmp_path: Path,
) -> None:
    root = dataset_path("swe-agent").parent
    scenarios = trajectory_scenarios(root, (16_000,), limit=1)
    assert {s.meta["dataset"] for s in scenarios} == {
        "claude-code",
        "swe-agent",
        "openhands-swe-gym",
        "swe-agent-nebius",
    }
    assert all(s.suite == "trajectories" and not s.probes for s in scenarios)
    # The big Claude Code session is the trajectories' heaviest: the others here.
    small = [s for s in scenarios if s.meta["dataset"] != "claude-code"]
    played = [
        (s, name, "hash", s.window, run_scenario(s, name, "hash", work_dir=tmp_path / f"{k}"))
        for k, (s, name) in enumerate((s, n) for s in small for n in DEFAULT_STRATEGIES)
    ]
    rows = trajectory_rows(played)
    assert {r.strategy for r in rows} == set(DEFAULT_STRATEGIES)
    assert [r for r in rows if r.violations] == []
    # At 16K the OpenHands run does not fit whole: every strategy but full sends less.
    openhands = {r.strategy: r for r in rows if r.dataset == "openhands-swe-gym"}
    assert openhands["full"].saved == 0.0
    assert all((openhands[s].saved or 0) > 0.1 for s in DEFAULT_STRATEGIES if s != "full")
    assert openhands["memory-context"].compactions > 0 and openhands["truncate"].trims > 0
    assert openhands["memory-context"].embedding == "hash" and openhands["full"].embedding == "none"


@pytest.mark.dataset
def test_a_recording_that_breaks_pairing_is_repaired_first_and_says_so() -> None:
    root = dataset_path("swe-agent").parent
    found = [(d, n) for d, n, _ in find_trajectories(root) if n.startswith(MARSHMALLOW)]
    assert found, "the SWE-agent replay that reuses call ids is among the trajectories"
    scenarios = [s for s in trajectory_scenarios(root) if s.meta["name"].startswith(MARSHMALLOW)]
    assert [s.window for s in scenarios] == [16_000, 32_000]  # one scenario per window
    assert all(s.id.endswith(f"@{s.window}") for s in scenarios)
    assert all(s.meta["input_defects"] > 0 for s in scenarios)
    from memctx.messages import pairing_violations

    assert all(pairing_violations(list(s.sessions[0].messages)) == [] for s in scenarios)


@pytest.mark.dataset
def test_the_command_writes_a_run_folder_and_refuses_a_bad_strategy_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = dataset_path("swe-agent").parent
    args = ["trajectories", "--datasets", str(root), "--limit", "1", "--window", "16000"]
    run = tmp_path / "run"
    assert main([*args, "--strategy", "truncate", "--out", str(run), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "trajectories (real data, not pooled):" in out  # the records' table
    assert "| swe-agent | truncate | 16,000 | 1 |" in out  # and the suite's own
    summary = json.loads((run / "summary.json").read_text())
    # full is always played: it is what "saved" is measured against.
    assert {(r["suite"], r["strategy"]) for r in summary["records"]} == {
        ("trajectories", "full"),
        ("trajectories", "truncate"),
    }
    assert summary["pooled"] == [] and summary["real_data"]["suites"] == ["trajectories"]
    report = (run / "report.md").read_text()
    assert "## Real data" in report and "| swe-agent | truncate |" in report
    assert main([*args, "--strategy", "nope"]) == 2
    assert "unknown strategy 'nope'" in capsys.readouterr().err
    assert main(["trajectories", "--datasets", str(tmp_path), "--no-progress"]) == 2
    assert "suite trajectories skipped: no trajectory" in capsys.readouterr().err
