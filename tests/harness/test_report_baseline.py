"""Deltas against a baseline: ``write_report(run_dir, baseline=...)`` and ``memctx report RUN
--baseline X``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.synthetic_run import build_run, write_run

from memctx.harness.report import RunDirError, report_main, write_report


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """A baseline and a run in which needle × memory-context × hash collapsed."""
    baseline = write_run(tmp_path / "baseline", build_run())
    run = build_run()
    run.summary["run"] = "20260101-000000-after"
    run.record("needle", "memory-context", "hash").update(
        recall_accuracy=0.125, recall_accuracy_ci=[0.0, 0.25]
    )
    return baseline, write_run(tmp_path / "run", run)


def test_the_report_shows_the_deltas_and_what_moved_beyond_noise(runs: tuple[Path, Path]) -> None:
    baseline, run_dir = runs
    write_report(run_dir, baseline=baseline / "summary.json")
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    section = md.split("## Against the baseline\n", 1)[1].split("\n## ", 1)[0]
    assert "Recall accuracy fell beyond noise in 1 row(s): memory-context × hash in needle (" in (
        section
    )
    assert "within noise in the other" in section
    rows = [line for line in section.splitlines() if line.startswith("| needle | memory-context |")]
    assert rows[0].startswith("| needle | memory-context | hash |") and rows[0].endswith(" * |")
    assert not rows[1].endswith(" * |")  # transformer: unchanged
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    part = page.split("<h2>Against the baseline</h2>", 1)[1].split("<h2>", 1)[0]
    assert 'class="memctx-deltas"' in part and "needle" in part
    order = [md.index(h) for h in ("## All suites", "## Against the baseline", "## Checks")]
    assert order == sorted(order)


def test_no_baseline_no_section_and_an_unchanged_run_moves_nothing(
    runs: tuple[Path, Path],
) -> None:
    baseline, run_dir = runs
    write_report(run_dir)
    assert "Against the baseline" not in (run_dir / "report.md").read_text(encoding="utf-8")
    same = json.loads((baseline / "summary.json").read_text(encoding="utf-8"))
    write_report(baseline, baseline=same)  # a summary as a mapping
    md = (baseline / "report.md").read_text(encoding="utf-8")
    assert "Recall accuracy: no change beyond noise in any of the 40 rows compared." in md


def test_report_main_takes_a_baseline_and_refuses_a_bad_one(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline, run_dir = runs
    assert report_main([str(run_dir), "--baseline", str(baseline)]) == 0
    capsys.readouterr()
    assert "## Against the baseline" in (run_dir / "report.md").read_text(encoding="utf-8")
    missing = tmp_path / "nope.json"
    assert report_main([str(run_dir), "--baseline", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memctx: error: baseline ") and err.count("\n") == 1
    with pytest.raises(RunDirError, match="baseline"):
        write_report(run_dir, baseline=missing)


def test_the_section_opens_with_the_verdict(runs: tuple[Path, Path]) -> None:
    baseline, run_dir = runs
    write_report(run_dir, baseline=baseline)
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    section = md.split("## Against the baseline\n\n", 1)[1]
    assert section.startswith(
        "**Verdict: This run is worse than the baseline beyond noise in 1 configuration "
        "(memory-context/hash), within noise in 3 ("
    )
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    part = page.split("<h2>Against the baseline</h2>", 1)[1]
    assert part.startswith('<div class="memctx-deltas"><p class="verdict worse">Verdict: This')


def test_a_baseline_of_other_scenarios_is_refused_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = build_run()
    full.summary["provenance"]["datasets"] = "datasets/v1"
    full.summary["config"]["quick"] = False
    baseline = write_run(tmp_path / "baseline", full)
    run_dir = write_run(tmp_path / "run", build_run())  # a quick run
    assert report_main([str(run_dir), "--baseline", str(baseline)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(
        "memctx: cannot compare this run with the baseline: this run is a quick run, the "
        "baseline a full one"
    )
    assert "fix: make both runs alike: both with --quick or both without" in captured.err
    md = (run_dir / "report.md").read_text(encoding="utf-8")  # written all the same
    section = md.split("## Against the baseline\n\n", 1)[1].split("\n## ", 1)[0]
    assert section.startswith(
        "**Verdict: cannot compare: this run is a quick run, the baseline a full one**"
    )
    assert "- quick: this run played the small generated set (--quick)" in section
    assert "pass --allow-different-scenarios" in section and "| needle |" not in section
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    part = page.split("<h2>Against the baseline</h2>", 1)[1].split("<h2>", 1)[0]
    assert '<p class="verdict cannot">' in part and "<table>" not in part
    # Asked to: the deltas, with what differs in the verdict and the notes.
    assert (
        report_main([str(run_dir), "--baseline", str(baseline), "--allow-different-scenarios"]) == 0
    )
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    section = md.split("## Against the baseline\n\n", 1)[1].split("\n## ", 1)[0]
    assert "compared as asked although this run is a quick run, the baseline a full one" in section
    assert "| needle | memory-context | hash |" in section
